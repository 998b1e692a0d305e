// Command demo is what `make demo` runs: examples/controller against a real
// API server, and the events a user then sees.
//
// It starts the local kube-apiserver of internal/testing/testenv (built by `make
// apiserver`), or uses the cluster of $KUBECONFIG when that is set. In a new
// namespace it creates valid and invalid ConfigMaps for the controller, runs
// the controller in-process for a few seconds with a short resync (so the
// counts of its events grow), edits one ConfigMap again and again with a
// different bad value (a burst of similar failures, which herald, like
// client-go, folds into a "(combined from similar events)" event), stops the
// controller (which flushes its events), and prints the events as
// `kubectl get events` would list them, with their counts, followed by
// herald's Stats. It exits 0 when no event was lost, and leaves no process
// or file behind; on a real cluster it deletes its namespace unless -keep.
//
// With -events (what `make demo-events` runs) it shows events.k8s.io/v1
// instead: herald's events package, the drop-in for client-go's
// tools/events, records a few events and a series, flushes, shuts down, and
// the demo prints `kubectl events` and the Stats (see runEvents).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/examples/controller/controller"
	"github.com/heraldk8s/herald/internal/testing/testenv"
	"github.com/heraldk8s/herald/record"
)

// options configure run.
type options struct {
	// duration is how long the controller runs; resync its resync period.
	duration, resync time.Duration
	// edits is how many different bad modes the burst ConfigMap gets.
	edits int
	// kubeconfig, if set, selects a cluster instead of a local server: a
	// list of files like $KUBECONFIG.
	kubeconfig string
	// keep keeps the namespace on a real cluster.
	keep bool
	// events runs the events.k8s.io/v1 demo (herald's events package)
	// instead of examples/controller.
	events bool
	// env, if set, is a running local server to use (tests).
	env *testenv.Env
}

func main() {
	opts := options{kubeconfig: os.Getenv("KUBECONFIG")}
	flag.DurationVar(&opts.duration, "duration", 4*time.Second, "how long the controller runs")
	flag.DurationVar(&opts.resync, "resync", time.Second, "the controller's resync period (at least 1s)")
	flag.IntVar(&opts.edits, "edits", 12, "how many times the burst ConfigMap gets a different bad mode")
	flag.BoolVar(&opts.keep, "keep", false, "with $KUBECONFIG: keep the demo namespace")
	flag.BoolVar(&opts.events, "events", false, "show events.k8s.io/v1 through herald's events package instead of examples/controller")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop) // a second Ctrl-C kills at once
	// Only errors are logged (klog's default verbosity); they go to stderr.
	ctx = klog.NewContext(ctx, klog.Background())
	err := run(ctx, opts, os.Stdout)
	stop()
	klog.Flush()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// The demo's ConfigMaps.
var (
	validModes   = []struct{ name, mode string }{{"web", "fast"}, {"batch", "safe"}, {"archive", "off"}}
	invalidModes = []struct {
		name string
		data map[string]string
	}{{"cache", map[string]string{"size": "1Gi"}}, {"queue", map[string]string{"mode": "turbo"}}}
	// burstName is the ConfigMap edited with a new bad mode again and again.
	burstName = "flaky"
)

// burstMode is the bad mode of the i-th edit of burstName.
func burstMode(i int) string { return fmt.Sprintf("try-%d", i) }

func run(ctx context.Context, opts options, out io.Writer) (err error) {
	progress := func(format string, args ...any) { fmt.Fprintf(out, "==> "+format+"\n", args...) }

	config, kubeconfig, cleanup, err := cluster(ctx, opts, progress)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := cleanup(); err == nil {
			err = cerr
		}
	}()
	if opts.events {
		return runEvents(ctx, opts, config, kubeconfig, out, progress)
	}
	// Two clients, so that the demo's polling never delays the
	// controller's requests: each has its own client-side rate limiter, at
	// 50 requests per second like kubectl, not rest.Config's default of 5.
	config = rest.CopyConfig(config)
	config.QPS, config.Burst = 50, 100
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	ctrlClient, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}

	ns, err := setUp(ctx, client, opts)
	if err != nil {
		return err
	}
	var valid, invalid []string
	for _, c := range validModes {
		valid = append(valid, c.name)
	}
	for _, c := range invalidModes {
		invalid = append(invalid, c.name)
	}
	progress("Namespace %s: ConfigMaps %s (valid), %s (invalid), %s (invalid, edited below)",
		ns, strings.Join(valid, ", "), strings.Join(invalid, ", "), burstName)
	if opts.kubeconfig != "" && !opts.keep {
		defer func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			if derr := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); derr != nil && err == nil {
				err = fmt.Errorf("deleting namespace %s: %w", ns, derr)
			}
		}()
	}

	// Run the controller; it stops (and flushes) when ctrlCtx ends.
	progress("Running examples/controller for %v (resync every %v)", opts.duration, opts.resync)
	start := time.Now()
	ctrlCtx, stopController := context.WithCancel(ctx)
	defer stopController()
	type result struct {
		stats record.Stats
		err   error
	}
	done := make(chan result, 1)
	go func() {
		stats, err := controller.Run(ctrlCtx, controller.Config{Client: ctrlClient, Namespace: ns, Resync: opts.resync})
		done <- result{stats, err}
	}()

	burstErr := burst(ctrlCtx, client, ns, opts.edits, progress)
	if burstErr == nil {
		select {
		case <-time.After(time.Until(start.Add(opts.duration))):
		case <-ctx.Done():
		}
	}
	progress("Stopping the controller: broadcaster.ShutdownWithContext writes what is pending")
	stopController()
	res := <-done
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted: %w", context.Cause(ctx))
	case burstErr != nil:
		return burstErr
	case res.err != nil:
		return res.err
	}

	events, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing events: %w", err)
	}
	fmt.Fprintf(out, "\nEvents in %s, as kubectl get events lists them (with COUNT):\n", ns)
	if err := printEvents(out, events.Items, time.Now()); err != nil {
		return err
	}
	if n := 10; opts.edits >= n { // correlator's default MaxEvents
		fmt.Fprintf(out, "(%s: %d distinct messages, then the %dth and later ones in one combined event, as client-go does)\n",
			burstName, n-1, n)
	}
	return printStats(out, res.stats, events.Items)
}

// cluster returns the configuration of the cluster to use, its kubeconfig
// (a list of files like $KUBECONFIG, for kubectl) and a function that
// releases it.
func cluster(ctx context.Context, opts options, progress func(string, ...any)) (*rest.Config, string, func() error, error) {
	switch {
	case opts.env != nil:
		return opts.env.Admin, opts.env.Kubeconfig, func() error { return nil }, nil
	case opts.kubeconfig != "":
		rules := &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(opts.kubeconfig)}
		cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
		config, err := cc.ClientConfig()
		if err != nil {
			return nil, "", nil, fmt.Errorf("loading $KUBECONFIG: %w", err)
		}
		progress("Using the cluster of $KUBECONFIG (%s)", config.Host)
		return config, opts.kubeconfig, func() error { return nil }, nil
	}
	bin, err := testenv.BinaryPath()
	if err != nil {
		return nil, "", nil, err
	}
	progress("Starting a local kube-apiserver (%s); set KUBECONFIG to use your cluster instead", bin)
	env, err := testenv.Start(ctx, testenv.Options{Logf: func(format string, args ...any) { progress(format, args...) }})
	if err != nil {
		return nil, "", nil, err
	}
	return env.Admin, env.Kubeconfig, func() error {
		if err := env.Stop(); err != nil {
			return err
		}
		progress("Stopped the local kube-apiserver and removed its files")
		return nil
	}, nil
}

// setUp creates the namespace and the ConfigMaps, and returns the
// namespace's name.
func setUp(ctx context.Context, client kubernetes.Interface, opts options) (string, error) {
	nsObj, err := client.CoreV1().Namespaces().Create(ctx,
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "herald-demo-"}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("creating the namespace: %w", err)
	}
	ns := nsObj.Name
	managed := map[string]string{controller.ManagedLabel: "true"}
	cms := []*v1.ConfigMap{{
		ObjectMeta: metav1.ObjectMeta{Name: burstName, Labels: managed},
		Data:       map[string]string{controller.ModeKey: burstMode(1)},
	}}
	for _, c := range validModes {
		cms = append(cms, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: c.name, Labels: managed}, Data: map[string]string{controller.ModeKey: c.mode}})
	}
	for _, c := range invalidModes {
		cms = append(cms, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: c.name, Labels: managed}, Data: c.data})
	}
	for _, cm := range cms {
		if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return "", fmt.Errorf("creating ConfigMap %s: %w", cm.Name, err)
		}
	}
	return ns, nil
}

// burst gives burstName a new bad mode edits-1 times, each time waiting until
// the controller's event about it has reached the API server, so that each
// value is reconciled: edits similar failures with distinct messages.
func burst(ctx context.Context, client kubernetes.Interface, ns string, edits int, progress func(string, ...any)) error {
	progress("Editing configmap/%s %d times, each time with a different bad mode", burstName, edits-1)
	for i := 1; i <= edits; i++ {
		if i > 1 {
			patch := fmt.Sprintf(`{"data":{%q:%q}}`, controller.ModeKey, burstMode(i))
			if _, err := client.CoreV1().ConfigMaps(ns).Patch(ctx, burstName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("editing ConfigMap %s: %w", burstName, err)
			}
		}
		want := fmt.Sprintf("%q", burstMode(i))
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			evs, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + burstName})
			if err != nil {
				return false, nil // the server may be busy; poll again
			}
			return slices.ContainsFunc(evs.Items, func(ev v1.Event) bool { return strings.Contains(ev.Message, want) }), nil
		})
		if err != nil {
			return fmt.Errorf("no event about ConfigMap %s with mode %s: %w", burstName, want, err)
		}
	}
	return nil
}

// printEvents prints events like kubectl get events, with a COUNT column;
// AGE is the time since the event was first seen.
func printEvents(out io.Writer, events []v1.Event, now time.Time) error {
	slices.SortFunc(events, func(a, b v1.Event) int {
		if c := strings.Compare(a.InvolvedObject.Name, b.InvolvedObject.Name); c != 0 {
			return c
		}
		if c := a.FirstTimestamp.Compare(b.FirstTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "TYPE\tREASON\tOBJECT\tCOUNT\tAGE\tMESSAGE")
	for _, ev := range events {
		fmt.Fprintf(w, "%s\t%s\t%s/%s\t%d\t%s\t%s\n", ev.Type, ev.Reason,
			strings.ToLower(ev.InvolvedObject.Kind), ev.InvolvedObject.Name, ev.Count,
			duration.HumanDuration(now.Sub(ev.FirstTimestamp.Time)), ev.Message)
	}
	return w.Flush()
}

// printStats prints herald's Stats and what became of the recorded events;
// it fails when one was lost.
func printStats(out io.Writer, s record.Stats, events []v1.Event) error {
	fmt.Fprintf(out, "\nherald Stats:  Recorded %d  Created %d  Patched %d  Coalesced %d  Filtered %d  Dropped %d  Abandoned %d\n",
		s.Recorded, s.Created, s.Patched, s.Coalesced, s.Filtered, s.Dropped.Total(), s.Abandoned)
	fmt.Fprintf(out, "               Aggregated %d (into combined events)  Retried %d\n", s.Aggregated, s.Retried)
	written, folded, lost := s.Created+s.Patched, s.Coalesced+s.Filtered, s.Dropped.Total()+s.Abandoned
	var sum int64
	for _, ev := range events {
		sum += int64(ev.Count)
	}
	fmt.Fprintf(out, "%d events recorded: %d written, %d folded into counts, %d lost. The %d stored events' counts add up to %d.\n",
		s.Recorded, written, folded, lost, len(events), sum)
	if lost > 0 {
		return fmt.Errorf("%d events lost: %+v", lost, s.Dropped)
	}
	if written+folded != s.Recorded {
		return errors.New("the Stats do not add up after shutdown")
	}
	return nil
}

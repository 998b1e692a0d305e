package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/record"
)

// The events.k8s.io/v1 part of the demo (-events, `make demo-events`).
const (
	// eventsController is the reportingController of the demo's
	// events.k8s.io/v1 recorder.
	eventsController = "example.com/herald-demo"
	// eventsSeries is how many times the demo records its series.
	eventsSeries = 25
)

// runEvents is the events.k8s.io/v1 demo: herald's events package (the
// drop-in for client-go's tools/events) records a few events about two
// ConfigMaps, one of them as a series, flushes, records more occurrences and
// shuts down; then it prints the events as `kubectl events` shows them and
// herald's Stats. It fails when an event was lost.
func runEvents(ctx context.Context, opts options, config *rest.Config, kubeconfig string, out io.Writer, progress func(string, ...any)) (err error) {
	config = rest.CopyConfig(config)
	config.QPS, config.Burst = 50, 100
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	nsObj, err := client.CoreV1().Namespaces().Create(ctx,
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "herald-events-demo-"}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the namespace: %w", err)
	}
	ns := nsObj.Name
	if opts.kubeconfig != "" && !opts.keep {
		defer func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			if derr := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); derr != nil && err == nil {
				err = fmt.Errorf("deleting namespace %s: %w", ns, derr)
			}
		}()
	}
	var cms []*v1.ConfigMap
	for _, name := range []string{"web", "cache"} {
		cm, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating ConfigMap %s: %w", name, err)
		}
		cms = append(cms, cm)
	}
	web, cache := cms[0], cms[1]
	progress("Namespace %s: ConfigMaps web and cache", ns)

	// The setup a controller would use (client-go's tools/events, herald's
	// package): a sink with a client of its own, a broadcaster, a recorder.
	sink, err := events.NewForConfig(config)
	if err != nil {
		return err
	}
	broadcaster := events.NewBroadcaster(sink)
	defer broadcaster.Shutdown() // after an error; a no-op after the one below
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return err
	}
	recorder := broadcaster.NewRecorder(scheme.Scheme, eventsController)

	progress("Recording events.k8s.io/v1 events with herald's events package (reportingController %s)", eventsController)
	recorder.Eventf(web, nil, v1.EventTypeNormal, "Synced", "Reconcile", "Synced with mode %q", "fast")
	recorder.Eventf(web, cache, v1.EventTypeNormal, "DependencyFound", "Resolve", "Uses configmap/%s", cache.Name)
	recorder.Eventf(cache, nil, v1.EventTypeWarning, "InvalidSpec", "Validate", "missing required key %q", "mode")
	for range eventsSeries - 2 {
		recorder.Eventf(cache, nil, v1.EventTypeWarning, "InvalidSpec", "Validate", "missing required key %q", "mode")
	}
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = broadcaster.Flush(fctx)
	cancel()
	if err != nil {
		return fmt.Errorf("flushing: %w", err)
	}
	s := broadcaster.Stats()
	progress("Flush: %d recorded, %d written (%d created, %d patched, %d folded into series counts)",
		s.Recorded, s.Created+s.Patched+s.Coalesced, s.Created, s.Patched, s.Coalesced)

	// One more occurrence, written by the shutdown.
	recorder.Eventf(cache, nil, v1.EventTypeWarning, "InvalidSpec", "Validate", "missing required key %q", "mode")
	progress("Shutting down: broadcaster.ShutdownWithContext writes the pending series count")
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = broadcaster.ShutdownWithContext(sctx)
	cancel()
	if err != nil {
		return fmt.Errorf("ShutdownWithContext: %w", err)
	}

	list, err := client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing events.k8s.io/v1 events: %w", err)
	}
	fmt.Fprintf(out, "\n$ kubectl events -n %s\n", ns)
	if err := kubectlEvents(ctx, kubeconfig, ns, out); err != nil {
		fmt.Fprintf(out, "(kubectl: %v; the same events as kubectl events lists them:)\n", err)
		if err := printEventsV1(out, list.Items, time.Now()); err != nil {
			return err
		}
	}
	return printEventsStats(out, broadcaster.Stats(), list.Items)
}

// kubectlEvents runs `kubectl events -n ns` with kubeconfig (a list of
// files, like $KUBECONFIG) and copies its output to out.
func kubectlEvents(ctx context.Context, kubeconfig, ns string, out io.Writer) error {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectl, "events", "-n", ns)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	_, err = out.Write(stdout.Bytes())
	return err
}

// printEventsV1 prints events.k8s.io/v1 events as `kubectl events` does:
// LAST SEEN with "(xN over D)" for a series, oldest first.
func printEventsV1(out io.Writer, evs []eventsv1.Event, now time.Time) error {
	last := func(e eventsv1.Event) time.Time {
		if e.Series != nil {
			return e.Series.LastObservedTime.Time
		}
		return e.EventTime.Time
	}
	slices.SortFunc(evs, func(a, b eventsv1.Event) int { return last(a).Compare(last(b)) })
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, "LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
	for _, e := range evs {
		seen := duration.HumanDuration(now.Sub(last(e)))
		if e.Series != nil {
			seen += fmt.Sprintf(" (x%d over %s)", e.Series.Count, duration.HumanDuration(last(e).Sub(e.EventTime.Time)))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s/%s\t%s\n", seen, e.Type, e.Reason, e.Regarding.Kind, e.Regarding.Name, e.Note)
	}
	return w.Flush()
}

// printEventsStats prints the Stats of the events broadcaster and what
// became of the recorded events; it fails when one was lost or a stored
// series count does not add up.
func printEventsStats(out io.Writer, s record.Stats, evs []eventsv1.Event) error {
	fmt.Fprintf(out, "\nherald Stats:  Recorded %d  Created %d  Patched %d  Coalesced %d  Dropped %d  Abandoned %d  Retried %d\n",
		s.Recorded, s.Created, s.Patched, s.Coalesced, s.Dropped.Total(), s.Abandoned, s.Retried)
	var sum int64
	for _, e := range evs {
		if e.Series != nil {
			sum += int64(e.Series.Count)
		} else {
			sum++
		}
	}
	written, lost := s.Created+s.Patched+s.Coalesced, s.Dropped.Total()+s.Abandoned
	fmt.Fprintf(out, "%d events recorded: %d written, %d lost. The %d stored events.k8s.io/v1 events stand for %d occurrences.\n",
		s.Recorded, written, lost, len(evs), sum)
	switch {
	case lost > 0:
		return fmt.Errorf("%d events lost: %+v", lost, s.Dropped)
	case written != s.Recorded:
		return errors.New("the Stats do not add up after shutdown")
	case sum != s.Recorded:
		return fmt.Errorf("the stored events stand for %d occurrences, %d were recorded", sum, s.Recorded)
	}
	return nil
}

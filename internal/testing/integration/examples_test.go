package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	"github.com/heraldk8s/herald/examples/controller/controller"
	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
)

// exampleConfigMaps are the ConfigMaps the example controller tests start
// with, and the event each managed one must get. "unmanaged" lacks the
// label and must get none.
var exampleConfigMaps = []struct {
	name    string
	managed bool
	data    map[string]string
	typ     string
	reason  string
	message string
}{
	{"fast", true, map[string]string{"mode": "fast"}, v1.EventTypeNormal, controller.ReasonSynced, `Synced with mode "fast"`},
	{"off", true, map[string]string{"mode": "off", "note": "idle"}, v1.EventTypeNormal, controller.ReasonSynced, `Synced with mode "off"`},
	{"missing", true, map[string]string{"speed": "fast"}, v1.EventTypeWarning, controller.ReasonInvalidSpec, `missing required key "mode"`},
	{"turbo", true, map[string]string{"mode": "turbo"}, v1.EventTypeWarning, controller.ReasonInvalidSpec, `mode "turbo" is not one of fast, safe, off`},
	{"unmanaged", false, map[string]string{"mode": "turbo"}, "", "", ""},
}

// createExampleConfigMaps creates exampleConfigMaps in ns and returns their
// UIDs by name.
func createExampleConfigMaps(t *testing.T, cs kubernetes.Interface, ns string) map[string]string {
	t.Helper()
	uids := map[string]string{}
	for _, c := range exampleConfigMaps {
		cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: c.name}, Data: c.data}
		if c.managed {
			cm.Labels = map[string]string{controller.ManagedLabel: "true"}
		}
		created, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating ConfigMap %s: %v", c.name, err)
		}
		uids[c.name] = string(created.UID)
	}
	return uids
}

// resyncedAtLeast is a waitEvents check: one event per managed ConfigMap,
// each counted at least n times.
func resyncedAtLeast(n int32) func([]v1.Event) error {
	return func(evs []v1.Event) error {
		for _, c := range exampleConfigMaps {
			if !c.managed {
				continue
			}
			got := byObject(evs, c.name)
			if len(got) != 1 || got[0].Count < n {
				return fmt.Errorf("configmap %s: %d events (%s), want 1 with count >= %d", c.name, len(got), describeEvents(got), n)
			}
		}
		return nil
	}
}

// checkExampleEvents checks what the API server holds once the controller
// has stopped: on each managed ConfigMap exactly one event of the expected
// type, reason and message, counted more than once (the resyncs), and
// nothing on the unmanaged one. The counts add up to recorded: the stop
// flushed every occurrence.
func checkExampleEvents(t *testing.T, evs []v1.Event, uids map[string]string, recorded int64) {
	t.Helper()
	var sum int64
	for _, c := range exampleConfigMaps {
		got := byObject(evs, c.name)
		if !c.managed {
			if len(got) != 0 {
				t.Errorf("unmanaged ConfigMap got events:\n%s", describeEvents(got))
			}
			continue
		}
		if len(got) != 1 {
			t.Errorf("configmap %s: %d events, want 1:\n%s", c.name, len(got), describeEvents(got))
			continue
		}
		ev := got[0]
		sum += int64(ev.Count)
		ref := ev.InvolvedObject
		switch {
		case ev.Type != c.typ || ev.Reason != c.reason || ev.Message != c.message:
			t.Errorf("configmap %s: event %s %s %q, want %s %s %q", c.name, ev.Type, ev.Reason, ev.Message, c.typ, c.reason, c.message)
		case ev.Count < 2:
			t.Errorf("configmap %s: count %d, want > 1 after resyncs", c.name, ev.Count)
		case ref.Kind != "ConfigMap" || ref.APIVersion != "v1" || string(ref.UID) != uids[c.name]:
			t.Errorf("configmap %s: involvedObject %+v, want ConfigMap v1 with UID %s", c.name, ref, uids[c.name])
		case ev.Source.Component != controller.Component || ev.ReportingController != controller.Component:
			t.Errorf("configmap %s: source %+v, reportingController %q", c.name, ev.Source, ev.ReportingController)
		case ev.LastTimestamp.Before(&ev.FirstTimestamp):
			t.Errorf("configmap %s: lastTimestamp %v before firstTimestamp %v", c.name, ev.LastTimestamp, ev.FirstTimestamp)
		}
	}
	if sum != recorded {
		t.Errorf("the stored counts add up to %d, but the controller recorded %d events", sum, recorded)
	}
}

// TestExampleController runs examples/controller's package against the API
// server with a 1 s resync until every managed ConfigMap's event has been
// counted three times, stops it, and checks what a user sees: Synced on the
// valid ConfigMaps, InvalidSpec with the reason on the invalid ones, counts
// that grew with each resync, nothing on the unmanaged one, and every
// recorded event written by the time Run returned.
func TestExampleController(t *testing.T) {
	cs := adminClient(t)
	ns := env.CreateNamespace(t, "example-controller")
	uids := createExampleConfigMaps(t, cs, ns)

	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	type result struct {
		stats record.Stats
		err   error
	}
	done := make(chan result, 1)
	go func() {
		stats, err := controller.Run(ctx, controller.Config{Client: newClientset(t, env.Admin), Namespace: ns, Resync: time.Second})
		done <- result{stats, err}
	}()
	var res *result
	stop := func() result {
		if res == nil {
			cancel()
			r := <-done
			res = &r
		}
		return *res
	}
	defer stop() // also when a check below fails t

	waitEvents(t, cs, ns, metav1.ListOptions{}, resyncedAtLeast(3))
	r := stop()
	if r.err != nil {
		t.Fatalf("Run: %v", r.err)
	}
	s := r.stats
	check.Settled(t, s)
	if s.Dropped.Total() != 0 || s.Abandoned != 0 || s.Filtered != 0 || s.Aggregated != 0 {
		t.Errorf("stats %+v: want nothing dropped, abandoned, filtered or aggregated", s)
	}

	// Straight after Run returned: no waiting, the stop flushed.
	evs, err := listEvents(t.Context(), cs, ns, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing events: %v", err)
	}
	checkExampleEvents(t, evs, uids, s.Recorded)

	// What kubectl shows a user.
	out, err := env.Kubectl(t.Context(), "get", "events", "-n", ns, "--field-selector", "reason="+controller.ReasonInvalidSpec)
	if err != nil {
		t.Fatalf("kubectl: %v", err)
	}
	for _, want := range []string{"configmap/missing", `missing required key "mode"`, "configmap/turbo", `mode "turbo" is not one of fast, safe, off`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("kubectl get events does not show %q:\n%s", want, out)
		}
	}
}

// TestExampleControllerSIGTERM builds the examples/controller program, runs
// it against the API server with the admin kubeconfig, and stops it with
// SIGTERM as Kubernetes stops a pod: it exits 0, having written every event
// it recorded (its final log line gives the Stats).
func TestExampleControllerSIGTERM(t *testing.T) {
	cs := adminClient(t)
	ns := env.CreateNamespace(t, "example-sigterm")
	uids := createExampleConfigMaps(t, cs, ns)
	bin := buildExample(t, "./examples/controller")

	cmd := exec.Command(bin, "-kubeconfig", env.Kubeconfig, "-namespace", ns, "-resync", "1s")
	cmd.Env = append(os.Environ(), "KUBECONFIG=/nonexistent") // the flag wins
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	waited := false
	defer func() { // when a check below fails t
		if !waited {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()

	waitEvents(t, cs, ns, metav1.ListOptions{}, resyncedAtLeast(2))
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case err := <-exited:
		waited = true
		if err != nil {
			t.Fatalf("controller exited with %v after SIGTERM; output:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("controller still running 30s after SIGTERM; output:\n%s", stderr.String())
	}
	t.Logf("controller output:\n%s", stderr.String())

	stats := map[string]int64{}
	m := regexp.MustCompile(`"Stopped" (.*)`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no Stopped line in the controller output:\n%s", stderr.String())
	}
	for _, kv := range regexp.MustCompile(`(\w+)=(\d+)`).FindAllStringSubmatch(m[1], -1) {
		stats[kv[1]], _ = strconv.ParseInt(kv[2], 10, 64)
	}
	if stats["recorded"] == 0 || stats["dropped"] != 0 || stats["abandoned"] != 0 {
		t.Errorf("Stats on exit %v: want events recorded, none dropped or abandoned", stats)
	}
	evs, err := listEvents(t.Context(), cs, ns, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing events: %v", err)
	}
	checkExampleEvents(t, evs, uids, stats["recorded"])
}

// buildExample builds the main package pkg (relative to the module root)
// into a temporary directory, with the race detector if this test binary has
// it (so the build reuses the test's compiled packages).
func buildExample(t *testing.T, pkg string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build %s: %v", pkg, err)
	}
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	args := []string{"build", "-o", bin}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "-race" && s.Value == "true" {
				args = append(args, "-race")
			}
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gobin, append(args, pkg)...)
	cmd.Dir = "../../.." // the module root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(append(args, pkg), " "), err, out)
	}
	return bin
}

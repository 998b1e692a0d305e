package main

// The example's tests build the program, run it against a real
// kube-apiserver (package crtest: `make test` starts it) with an admin kubeconfig, and
// check what the API server holds.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldk8s/herald/controllerruntime/internal/crtest"
)

var (
	env *crtest.Env
	// The example built once for the package (see buildBinary).
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
	binaryDir  string
)

func TestMain(m *testing.M) {
	// The binary goes to the package's temporary directory, which
	// crtest.Main removes.
	crtest.Main(m, func(e *crtest.Env) {
		env = e
		binaryDir = e.Dir
	})
}

const (
	controllerName = "example.com/configmap-controller"
	pollTimeout    = 60 * time.Second
	exitTimeout    = 60 * time.Second
)

// buildBinary builds the example (with -race, so that a data race in it
// fails the test with exit code 66) once for the package.
func buildBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		begin := time.Now()
		binaryPath = filepath.Join(binaryDir, "kubebuilder-example")
		cmd := exec.Command("go", "build", "-race", "-o", binaryPath, ".")
		out, err := cmd.CombinedOutput()
		if err != nil {
			binaryErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
		t.Logf("built the example in %v", time.Since(begin))
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// process is a running example, its JSON log lines collected.
type process struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has been waited for
	err  error         // cmd.Wait's, set before done is closed

	mu    sync.Mutex
	lines []map[string]any
	raw   []string
}

// run starts the example with args and the admin kubeconfig; it is killed
// when t ends if it still runs.
func run(t *testing.T, name string, args ...string) *process {
	t.Helper()
	bin := buildBinary(t)
	// JSON logs, and development mode (the example's default) because
	// zap's production mode samples: after 100 lines a second with one
	// message, it keeps one in 100, and the test counts reconciles.
	args = append([]string{"--kubeconfig=" + env.Kubeconfig, "--health-probe-bind-address=0", "--zap-encoder=json", "--zap-devel=true"}, args...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	p := &process{t: t, name: name, cmd: cmd, done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	var readers sync.WaitGroup
	readers.Go(func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) != nil {
				m = nil
			}
			p.mu.Lock()
			p.raw = append(p.raw, line)
			if m != nil {
				p.lines = append(p.lines, m)
			}
			p.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, pr)
	})
	go func() {
		p.err = cmd.Wait()
		_ = pw.Close()
		readers.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			p.mu.Lock()
			var keep []string
			for _, l := range p.raw {
				if !strings.Contains(l, `"Observed ConfigMap"`) {
					keep = append(keep, l)
				}
			}
			t.Logf("%s's output (last 40 lines but reconciles'):\n%s", name, strings.Join(lastN(keep, 40), "\n"))
			p.mu.Unlock()
		}
	})
	return p
}

func lastN(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// count returns how many log lines have message msg.
func (p *process) count(msg string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, l := range p.lines {
		if l["msg"] == msg {
			n++
		}
	}
	return n
}

// line returns the last log line with message msg, or nil.
func (p *process) line(msg string) map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.lines) - 1; i >= 0; i-- {
		if p.lines[i]["msg"] == msg {
			return p.lines[i]
		}
	}
	return nil
}

// waitLog waits until n log lines have message msg.
func (p *process) waitLog(msg string, n int) {
	p.t.Helper()
	eventually(p.t, fmt.Sprintf("%s: %d log lines %q", p.name, n, msg), func(context.Context) error {
		select {
		case <-p.done:
			return wait.ErrorInterrupted(fmt.Errorf("%s exited: %v", p.name, p.err))
		default:
		}
		if got := p.count(msg); got < n {
			return fmt.Errorf("%d lines", got)
		}
		return nil
	})
}

// terminate sends SIGTERM and waits for the exit; it returns the exit code
// and how long the exit took.
func (p *process) terminate() (int, time.Duration) {
	p.t.Helper()
	begin := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatalf("SIGTERM to %s: %v", p.name, err)
	}
	select {
	case <-p.done:
	case <-time.After(exitTimeout):
		p.t.Fatalf("%s did not exit within %v of SIGTERM", p.name, exitTimeout)
	}
	took := time.Since(begin)
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return 0, took
	case errors.As(p.err, &ee):
		return ee.ExitCode(), took
	default:
		p.t.Fatalf("%s: %v", p.name, p.err)
		return -1, took
	}
}

// checkStats checks the herald counters the example logs at exit: nothing
// abandoned, dropped or written twice.
func (p *process) checkStats(api string, wantCreated int) {
	p.t.Helper()
	l := p.line("herald " + api)
	if l == nil {
		p.t.Errorf("%s logged no %q line", p.name, "herald "+api)
		return
	}
	p.t.Logf("%s, herald %s at exit: %v", p.name, api, l)
	for _, k := range []string{"abandoned", "dropped", "alreadyExists"} {
		if v, _ := l[k].(float64); v != 0 {
			p.t.Errorf("%s, herald %s: %s = %v, want 0", p.name, api, k, l[k])
		}
	}
	if wantCreated >= 0 {
		if v, _ := l["created"].(float64); int(v) != wantCreated {
			p.t.Errorf("%s, herald %s: created = %v, want %d", p.name, api, l["created"], wantCreated)
		}
	}
}

func eventually(t *testing.T, what string, cond func(ctx context.Context) error) {
	t.Helper()
	last := errors.New("never polled")
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, pollTimeout, true, func(ctx context.Context) (bool, error) {
		last = cond(ctx)
		if wait.Interrupted(last) {
			return false, last
		}
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v (last: %v)", what, err, last)
	}
}

func adminClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Admin)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// createConfigMaps creates n ConfigMaps cm-0000... in ns, 16 at a time.
func createConfigMaps(t *testing.T, cs kubernetes.Interface, ns string, n int) map[string]*corev1.ConfigMap {
	t.Helper()
	out := make(map[string]*corev1.ConfigMap, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			cm, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i), Namespace: ns},
				Data:       map[string]string{"a": "1", "b": "2"},
			}, metav1.CreateOptions{})
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			out[cm.Name] = cm
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("creating ConfigMaps: %v", err)
	}
	return out
}

func listEvents(ctx context.Context, cs kubernetes.Interface, ns string) ([]eventsv1.Event, error) {
	l, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// byReason returns the events with reason, by the name of what they regard,
// failing if one is stored twice.
func byReason(evs []eventsv1.Event, reason string) (map[string]eventsv1.Event, error) {
	out := map[string]eventsv1.Event{}
	for _, e := range evs {
		if e.Reason != reason {
			continue
		}
		if prev, ok := out[e.Regarding.Name]; ok {
			return nil, fmt.Errorf("two %s events about %s: %s and %s", reason, e.Regarding.Name, prev.Name, e.Name)
		}
		out[e.Regarding.Name] = e
	}
	return out, nil
}

func seriesCount(e eventsv1.Event) int32 {
	if e.Series == nil {
		return 1
	}
	return e.Series.Count
}

// TestEventsWritten: the reconciler's events reach the API server with their
// fields, the extra events as one series with the exact count.
func TestEventsWritten(t *testing.T) {
	ns := env.CreateNamespace(t, "kb-fields")
	cs := adminClient(t)
	const extra = 5
	p := run(t, "controller", "--namespace="+ns, fmt.Sprintf("--extra-events=%d", extra))
	cms := createConfigMaps(t, cs, ns, 3)

	eventually(t, "events stored", func(ctx context.Context) error {
		evs, err := listEvents(ctx, cs, ns)
		if err != nil {
			return err
		}
		obs, err := byReason(evs, "Observed")
		if err != nil {
			return err
		}
		ext, err := byReason(evs, "Extra")
		if err != nil {
			return err
		}
		for name := range cms {
			if _, ok := obs[name]; !ok {
				return fmt.Errorf("no Observed event about %s", name)
			}
			if e, ok := ext[name]; !ok || seriesCount(e) != extra {
				return fmt.Errorf("Extra event about %s: %+v, want series count %d", name, e.Series, extra)
			}
		}
		return nil
	})
	code, took := p.terminate()
	if code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
	t.Logf("exited %v after SIGTERM", took)

	evs, err := listEvents(context.Background(), cs, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2*len(cms) {
		t.Errorf("%d events stored, want %d", len(evs), 2*len(cms))
	}
	obs, err := byReason(evs, "Observed")
	if err != nil {
		t.Fatal(err)
	}
	ext, err := byReason(evs, "Extra")
	if err != nil {
		t.Fatal(err)
	}
	for name, cm := range cms {
		e := obs[name]
		want := corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: ns, Name: name, UID: cm.UID, ResourceVersion: cm.ResourceVersion}
		if e.Regarding != want {
			t.Errorf("%s: regarding %+v, want %+v", name, e.Regarding, want)
		}
		if e.ReportingController != controllerName || !strings.HasPrefix(e.ReportingInstance, controllerName+"-") {
			t.Errorf("%s: reportingController %q, reportingInstance %q", name, e.ReportingController, e.ReportingInstance)
		}
		if e.Type != corev1.EventTypeNormal || e.Action != "Reconcile" || e.Note != fmt.Sprintf("ConfigMap %s has 2 keys", name) || e.Related != nil || e.Series != nil {
			t.Errorf("%s: Observed event %+v", name, e)
		}
		x := ext[name]
		if x.Action != "Reconcile" || x.Note != fmt.Sprintf("extra event 1 of %d", extra) || x.Series == nil || x.Series.Count != extra {
			t.Errorf("%s: Extra event %+v", name, x)
		}
	}
	p.checkStats("events.k8s.io/v1", 2*len(cms))
	p.checkStats("core/v1", 0)
}

// TestSIGTERMWithPendingEventsLosesNone: 1,000 ConfigMaps, one event each,
// recorded faster than herald may write them (50 writes/s); SIGTERM once
// every reconcile has recorded: the program writes all 1,000 before it
// exits, with code 0.
func TestSIGTERMWithPendingEventsLosesNone(t *testing.T) {
	ns := env.CreateNamespace(t, "kb-sigterm")
	cs := adminClient(t)
	const n = 1000
	begin := time.Now()
	cms := createConfigMaps(t, cs, ns, n)
	t.Logf("created %d ConfigMaps in %v", n, time.Since(begin))

	p := run(t, "controller", "--namespace="+ns)
	p.waitLog("Observed ConfigMap", n)
	evs, err := listEvents(context.Background(), cs, ns)
	if err != nil {
		t.Fatal(err)
	}
	stored := len(evs)
	code, took := p.terminate()
	t.Logf("SIGTERM with %d of %d events stored (%d pending): exit code %d after %v", stored, n, n-stored, code, took)
	if code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if stored >= n {
		t.Errorf("all %d events were stored before SIGTERM: the test does not test the flush", n)
	}

	evs, err = listEvents(context.Background(), cs, ns)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := byReason(evs, "Observed")
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for name := range cms {
		e, ok := obs[name]
		if !ok {
			lost++
			continue
		}
		if e.Series != nil {
			t.Errorf("%s: series %+v, want none (one reconcile)", name, e.Series)
		}
	}
	if lost != 0 || len(evs) != n {
		t.Errorf("%d of %d events lost; %d events stored", lost, n, len(evs))
	}
	p.checkStats("events.k8s.io/v1", n)
}

// TestLeaderElectionWritesEachEventOnce: two replicas with leader election
// on; the leader's events, and leader election's own, are each stored once.
func TestLeaderElectionWritesEachEventOnce(t *testing.T) {
	ns := env.CreateNamespace(t, "kb-leader")
	cs := adminClient(t)
	args := []string{"--namespace=" + ns, "--leader-elect", "--leader-election-namespace=" + ns}
	a := run(t, "replica-a", args...)
	eventually(t, "a leader elected", func(ctx context.Context) error {
		if a.count("Successfully acquired lease") == 0 {
			return errors.New("replica-a not leader yet")
		}
		return nil
	})
	b := run(t, "replica-b", args...)
	b.waitLog("Attempting to acquire leader lease...", 1)
	cms := createConfigMaps(t, cs, ns, 10)

	became := func(ctx context.Context) ([]corev1.Event, error) {
		l, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		var out []corev1.Event
		for _, e := range l.Items {
			if e.Reason == "LeaderElection" && strings.HasSuffix(e.Message, "became leader") {
				out = append(out, e)
			}
		}
		return out, nil
	}
	eventually(t, "events stored", func(ctx context.Context) error {
		evs, err := listEvents(ctx, cs, ns)
		if err != nil {
			return err
		}
		obs, err := byReason(evs, "Observed")
		if err != nil {
			return err
		}
		if len(obs) != len(cms) {
			return fmt.Errorf("%d Observed events, want %d", len(obs), len(cms))
		}
		le, err := became(ctx)
		if err != nil {
			return err
		}
		if len(le) != 1 {
			return fmt.Errorf("%d became-leader events, want 1", len(le))
		}
		return nil
	})
	if code, _ := b.terminate(); code != 0 {
		t.Errorf("replica-b: exit code %d, want 0", code)
	}
	if code, _ := a.terminate(); code != 0 {
		t.Errorf("replica-a: exit code %d, want 0", code)
	}

	evs, err := listEvents(context.Background(), cs, ns)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := byReason(evs, "Observed")
	if err != nil {
		t.Fatal(err)
	}
	for name := range cms {
		if e, ok := obs[name]; !ok || e.Series != nil || e.DeprecatedCount > 1 {
			t.Errorf("%s: Observed event %+v, want one, once", name, e)
		}
	}
	le, err := became(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(le) != 1 || le[0].Count != 1 || le[0].InvolvedObject.Kind != "Lease" {
		t.Errorf("became-leader events: %+v, want one, with count 1, on the Lease", le)
	}
	a.checkStats("events.k8s.io/v1", len(cms))
	a.checkStats("core/v1", -1)
	b.checkStats("events.k8s.io/v1", 0)
	b.checkStats("core/v1", 0)
}

// Package integration tests herald against a real kube-apiserver: a
// recorder writes through herald's sink (and once through client-go's) to the
// server that internal/testing/testenv starts once for the package, sometimes behind
// an internal/testing/faultproxy, and every test asserts what the API server holds
// afterwards, each in a namespace of its own. Run it with
//
//	go test -race -count=1 ./internal/testing/integration/
//
// It needs bin/kube-apiserver (`make apiserver`) and kubectl.
package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/internal/testing/faultproxy"
	"github.com/heraldk8s/herald/internal/testing/testenv"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// env is the package's kube-apiserver, started once by TestMain.
var env *testenv.Env

func TestMain(m *testing.M) {
	// testenv.Main starts the server, runs the tests, stops the server and
	// then checks for leaked goroutines with goleak.
	testenv.Main(m, testenv.Options{}, func(e *testenv.Env) { env = e })
}

// source is the EventSource of every recorder in this package.
var source = v1.EventSource{Component: "herald-it", Host: "it-host-1"}

const (
	// flushTimeout bounds a Flush when the API server is healthy.
	flushTimeout = 30 * time.Second
	// pollTimeout bounds the wait for a server-side observation.
	pollTimeout = 30 * time.Second
)

// newClientset returns a clientset for cfg.
func newClientset(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	return cs
}

// adminClient is the clientset the tests observe the API server with.
func adminClient(t *testing.T) kubernetes.Interface { return newClientset(t, env.Admin) }

// heraldSink is herald's sink over a namespace-less Events client for cfg.
func heraldSink(t *testing.T, cfg *rest.Config) record.EventSink {
	t.Helper()
	return &sink.EventSinkImpl{Interface: newClientset(t, cfg).CoreV1().Events("")}
}

// newProxy starts a fault proxy in front of the API server, closed when t ends.
func newProxy(t *testing.T) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(env.URL)
	if err != nil {
		t.Fatalf("faultproxy: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("closing faultproxy: %v", err)
		}
	})
	return p
}

// harness is one broadcaster recording to one sink, with its logs captured.
type harness struct {
	t    *testing.T
	eb   record.EventBroadcaster
	rec  record.EventRecorderLogger
	logs ktesting.Buffer
}

// newHarness starts a broadcaster (shut down when t ends) recording to s.
// Its logs go to t.Log and to a buffer.
func newHarness(t *testing.T, s record.EventSink, opts ...record.BroadcasterOption) *harness {
	t.Helper()
	logger, logs := bufferedLogger(t)
	h := &harness{t: t, logs: logs}
	h.eb = record.NewBroadcaster(append([]record.BroadcasterOption{record.WithLogger(logger)}, opts...)...)
	// Registered after the logger's own cleanup, so it runs before it.
	t.Cleanup(h.eb.Shutdown)
	h.eb.StartRecordingToSink(s)
	h.rec = h.eb.NewRecorder(scheme.Scheme, source)
	return h
}

// bufferedLogger returns a logger writing to t.Log and to the returned
// buffer.
func bufferedLogger(t *testing.T) (klog.Logger, ktesting.Buffer) {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	u, ok := logger.GetSink().(ktesting.Underlier)
	if !ok {
		t.Fatalf("ktesting logger has no buffer")
	}
	return logger, u.GetBuffer()
}

// flush waits (at most d) until everything recorded so far has been
// handled, then checks the Stats accounting and returns the Stats.
func (h *harness) flush(d time.Duration) record.Stats { return flushChecked(h.t, h.eb, d) }

// flushChecked flushes b (at most d), checks its Stats accounting and
// returns the Stats.
func flushChecked(t *testing.T, b interface {
	Flush(context.Context) error
	Stats() record.Stats
}, d time.Duration) record.Stats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := b.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v; stats %+v", err, b.Stats())
	}
	s := b.Stats()
	check.Settled(t, s)
	return s
}

// errorLogs returns the error-level log entries whose message is msg.
func (h *harness) errorLogs(msg string) []ktesting.LogEntry {
	var out []ktesting.LogEntry
	for _, e := range h.logs.Data() {
		if e.Type == ktesting.LogError && e.Message == msg {
			out = append(out, e)
		}
	}
	return out
}

// written is how many recorded events reached the API server, as Stats says.
func written(s record.Stats) int64 { return s.Created + s.Patched + s.Coalesced }

// listEvents returns every event in namespace matching opts (all pages).
func listEvents(ctx context.Context, cs kubernetes.Interface, namespace string, opts metav1.ListOptions) ([]v1.Event, error) {
	return listPaged(ctx, opts, func(ctx context.Context, opts metav1.ListOptions) ([]v1.Event, string, error) {
		l, err := cs.CoreV1().Events(namespace).List(ctx, opts)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	})
}

// listPaged lists every page of a list call, 1000 items a page unless opts
// says otherwise.
func listPaged[T any](ctx context.Context, opts metav1.ListOptions, list func(context.Context, metav1.ListOptions) ([]T, string, error)) ([]T, error) {
	var out []T
	if opts.Limit == 0 {
		opts.Limit = 1000
	}
	for {
		items, cont, err := list(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		if cont == "" {
			return out, nil
		}
		opts.Continue = cont
	}
}

// waitEvents polls the API server (bounded by pollTimeout) until the events
// of namespace matching opts pass check, and returns them. It fails t with
// check's last complaint otherwise.
func waitEvents(t *testing.T, cs kubernetes.Interface, namespace string, opts metav1.ListOptions, check func([]v1.Event) error) []v1.Event {
	t.Helper()
	return waitList(t, fmt.Sprintf("events in %q (%+v)", namespace, opts),
		func(ctx context.Context) ([]v1.Event, error) { return listEvents(ctx, cs, namespace, opts) }, check, describeEvents)
}

// waitList polls list (bounded by pollTimeout) until its items pass want,
// and returns them. It fails t with want's last complaint (or list's error)
// and the items, as describe prints them, otherwise.
func waitList[T any](t *testing.T, what string, list func(context.Context) ([]T, error), want func([]T) error, describe func([]T) string) []T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pollTimeout)
	defer cancel()
	var items []T
	check.Eventually(t, what+" as expected", func() error {
		var err error
		if items, err = list(ctx); err != nil {
			return err
		}
		if err := want(items); err != nil {
			return listError{err, func() string { return describe(items) }}
		}
		return nil
	})
	return items
}

// listError is a complaint about a list's items; its text shows the items
// too, formatted only when the text is asked for.
type listError struct {
	err      error
	describe func() string
}

func (e listError) Error() string { return e.err.Error() + "\n" + e.describe() }

// byObject returns the events about the object named name.
func byObject(evs []v1.Event, name string) []v1.Event {
	var out []v1.Event
	for _, e := range evs {
		if e.InvolvedObject.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// countEvents checks that there is exactly one event per name in want, with
// the count given there, and no other event.
func countEvents(want map[string]int32) func([]v1.Event) error {
	return func(evs []v1.Event) error {
		got := map[string][]int32{}
		for _, e := range evs {
			got[e.InvolvedObject.Name] = append(got[e.InvolvedObject.Name], e.Count)
		}
		for name, n := range want {
			if c := got[name]; len(c) != 1 || c[0] != n {
				return fmt.Errorf("object %s: counts %v, want [%d]", name, c, n)
			}
		}
		for name, c := range got {
			if _, ok := want[name]; !ok {
				return fmt.Errorf("unexpected events about %s: counts %v", name, c)
			}
		}
		return nil
	}
}

func describeEvents(evs []v1.Event) string {
	var b strings.Builder
	for i, e := range evs {
		if i == 20 {
			fmt.Fprintf(&b, "  ... %d more\n", len(evs)-i)
			break
		}
		fmt.Fprintf(&b, "  %s/%s object=%s/%s reason=%s count=%d message=%.80q\n",
			e.Namespace, e.Name, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Count, e.Message)
	}
	return b.String()
}

// podRef is a reference to a Pod that need not exist.
func podRef(namespace, name string) *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: namespace, Name: name, UID: types.UID("uid-" + name)}
}

// randSuffix returns a short random lowercase hex string.
func randSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

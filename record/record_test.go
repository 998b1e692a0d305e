package record_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	clientrecord "k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/internal/testing/replay"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Compile-time proof that herald's recorders are client-go recorders and
// that client-go's sink plugs into herald.
var (
	_ clientrecord.EventRecorder       = record.EventRecorder(nil)
	_ clientrecord.EventRecorderLogger = record.EventRecorderLogger(nil)
	_ clientrecord.EventRecorderLogger = (*record.FakeRecorder)(nil)
	_ record.EventRecorderLogger       = clientrecord.EventRecorderLogger(nil)
	_ record.EventSink                 = (*typedcorev1.EventSinkImpl)(nil)
	_ clientrecord.EventSink           = record.EventSink(nil)
	// A herald broadcaster is a client-go broadcaster (controller-runtime's
	// manager.Options.EventBroadcaster takes it).
	_ clientrecord.EventBroadcaster = record.EventBroadcaster(nil)
)

var t0 = time.Date(2026, 11, 22, 3, 0, 0, 123, time.UTC)

func pod(ns, name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), ResourceVersion: "7"}}
}

type env struct {
	t     *testing.T
	eb    record.EventBroadcaster
	rec   record.EventRecorderLogger
	sink  *sinktest.Sink
	clock *clocktesting.FakeClock
	log   *ktesting.Buffer
}

func newEnv(t *testing.T, opts ...record.BroadcasterOption) *env {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	e := &env{t: t, sink: sinktest.New(), clock: clocktesting.NewFakeClock(t0)}
	if u, ok := logger.GetSink().(ktesting.Underlier); ok {
		b := u.GetBuffer()
		e.log = &b
	}
	base := []record.BroadcasterOption{record.WithLogger(logger), record.WithSinkOptions(sink.Options{Clock: e.clock, QPS: sink.Unlimited})}
	e.eb = record.NewBroadcaster(append(base, opts...)...)
	e.eb.StartRecordingToSink(e.sink)
	e.rec = e.eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: "ctrl", Host: "node-1"})
	t.Cleanup(e.eb.Shutdown)
	return e
}

func (e *env) flush() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.eb.Flush(ctx); err != nil {
		e.t.Fatalf("Flush: %v; stats %+v", err, e.eb.Stats())
	}
}

func (e *env) logs() string {
	if e.log == nil {
		return ""
	}
	return (*e.log).String()
}

func TestEventHasClientGoFields(t *testing.T) {
	e := newEnv(t)
	e.rec.Eventf(pod("ns1", "pod-0"), v1.EventTypeWarning, "InvalidSpec", "key %q missing", "mode")
	e.flush()
	evs := e.sink.Events()
	if len(evs) != 1 {
		t.Fatalf("stored %d events", len(evs))
	}
	ev := evs[0]
	// client-go's name is pod-0.<hex of t0 in ns>. herald's stamp is that,
	// or more if a name with a stamp at or after t0 was made before in this
	// process (the stamps are unique process-wide).
	var stamp int64
	_, err := fmt.Sscanf(ev.Name, "pod-0.%x", &stamp)
	want := v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns1", Name: "pod-0", UID: "uid-pod-0", ResourceVersion: "7"}
	switch {
	case err != nil, stamp < t0.UnixNano(), ev.Name != fmt.Sprintf("pod-0.%x", stamp), ev.Namespace != "ns1":
		t.Fatalf("name %s/%s, want ns1/pod-0.<hex stamp at or after %x>", ev.Namespace, ev.Name, t0.UnixNano())
	case ev.InvolvedObject != want:
		t.Fatalf("involvedObject %+v", ev.InvolvedObject)
	case ev.Type != "Warning", ev.Reason != "InvalidSpec", ev.Message != `key "mode" missing`, ev.Count != 1:
		t.Fatalf("event %+v", ev)
	case !ev.FirstTimestamp.Time.Equal(t0), !ev.LastTimestamp.Time.Equal(t0):
		t.Fatalf("timestamps %v %v", ev.FirstTimestamp, ev.LastTimestamp)
	case ev.Source != (v1.EventSource{Component: "ctrl", Host: "node-1"}), ev.ReportingController != "ctrl", ev.ReportingInstance != "node-1":
		t.Fatalf("source %+v %q %q", ev.Source, ev.ReportingController, ev.ReportingInstance)
	}
	s := e.eb.Stats()
	if s.Recorded != 1 || s.Created != 1 {
		t.Fatalf("stats %+v", s)
	}
	check.Settled(t, s)
}

func TestClusterScopedGoesToDefault(t *testing.T) {
	e := newEnv(t)
	e.rec.Event(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, v1.EventTypeNormal, "Ready", "up")
	e.rec.Event(&v1.ObjectReference{Kind: "Widget", APIVersion: "example.com/v1", Name: "w", Namespace: "team"}, v1.EventTypeNormal, "Seen", "ref")
	e.flush()
	evs := e.sink.Events()
	if len(evs) != 2 || evs[0].Namespace != "default" || evs[0].InvolvedObject.Kind != "Node" || evs[1].Namespace != "team" || evs[1].InvolvedObject.Kind != "Widget" {
		t.Fatalf("events %+v", evs)
	}
}

func TestFrozenClockGivesUniqueValidNames(t *testing.T) {
	e := newEnv(t, record.WithCorrelatorOptions(record.CorrelatorOptions{DisableAggregation: true, DisableSpamFilter: true}))
	for i := range 50 {
		e.rec.Eventf(pod("ns", "Pod_With.BAD-name"), v1.EventTypeNormal, "R", "message %d", i)
	}
	e.flush()
	names := map[string]bool{}
	for _, ev := range e.sink.Events() {
		if errs := validation.IsDNS1123Subdomain(ev.Name); len(errs) > 0 {
			t.Fatalf("invalid name %q: %v", ev.Name, errs)
		}
		names[ev.Name] = true
	}
	if len(names) != 50 {
		t.Fatalf("%d distinct names for 50 events in one nanosecond", len(names))
	}
}

type unregistered struct {
	metav1.ObjectMeta
}

func (u *unregistered) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (u *unregistered) DeepCopyObject() runtime.Object   { return u }

func TestInvalidInputIsCountedAndLogged(t *testing.T) {
	e := newEnv(t)
	var nilPod *v1.Pod
	e.rec.Event(nil, v1.EventTypeNormal, "R", "nil object")
	e.rec.Event(nilPod, v1.EventTypeNormal, "R", "typed nil")
	e.rec.Event(&unregistered{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, v1.EventTypeNormal, "R", "unknown type")
	e.rec.Event(pod("ns", "p"), "Error", "R", "bad type")
	e.rec.AnnotatedEventf(pod("ns", "p"), map[string]string{"not a key!": "v"}, v1.EventTypeNormal, "R", "bad annotation")
	e.rec.WithLogger(klog.Background()).Event(nil, v1.EventTypeNormal, "R", "nil again")
	e.flush()
	s := e.eb.Stats()
	if s.Dropped.Invalid != 6 || s.Created != 0 {
		t.Fatalf("stats %+v", s)
	}
	check.Settled(t, s)
	for _, want := range []string{"Could not construct reference", "Unsupported event type", "Invalid event annotations"} {
		if !strings.Contains(e.logs(), want) {
			t.Errorf("no log line %q in:\n%s", want, e.logs())
		}
	}
}

func TestAnnotationsCopiedAndMessageCut(t *testing.T) {
	e := newEnv(t, record.WithMessageLimit(10))
	ann := map[string]string{"example.com/k": "v"}
	e.rec.AnnotatedEventf(pod("ns", "p"), ann, v1.EventTypeNormal, "R", "héééééééééé")
	ann["example.com/k"] = "changed"
	e.flush()
	ev := e.sink.Events()[0]
	if ev.Annotations["example.com/k"] != "v" {
		t.Fatalf("annotations aliased: %v", ev.Annotations)
	}
	if ev.Message != "héééé" {
		t.Fatalf("message %q", ev.Message)
	}
}

func TestRepeatsBecomeOneEventWithCount(t *testing.T) {
	e := newEnv(t, record.WithCorrelatorOptions(record.CorrelatorOptions{DisableSpamFilter: true}))
	p := pod("ns", "p")
	for range 100 {
		e.rec.Event(p, v1.EventTypeWarning, "Failed", "same message")
	}
	e.flush()
	evs := e.sink.Events()
	if len(evs) != 1 || evs[0].Count != 100 {
		t.Fatalf("events %+v", evs)
	}
	s := e.eb.Stats()
	check.Settled(t, s)
	if s.Created+s.Patched+s.Coalesced != 100 {
		t.Fatalf("stats %+v", s)
	}
}

func TestSpamFilterKeepsReasonsApart(t *testing.T) {
	e := newEnv(t)
	p := pod("ns", "p")
	for i := range 40 {
		e.rec.Eventf(p, v1.EventTypeWarning, "Noisy", "noise %d", i%3)
	}
	e.rec.Event(p, v1.EventTypeWarning, "Important", "not silenced")
	e.flush()
	var found bool
	for _, ev := range e.sink.Events() {
		found = found || ev.Reason == "Important"
	}
	s := e.eb.Stats()
	if !found || s.Filtered != 15 {
		t.Fatalf("important event found=%v, filtered=%d", found, s.Filtered)
	}
	check.Settled(t, s)
}

func TestShutdownFlushesEverything(t *testing.T) {
	e := newEnv(t, record.WithSinkOptions(sink.Options{Workers: 8}), record.WithQueueLength(10000))
	for i := range 5000 {
		e.rec.Event(pod("ns", fmt.Sprint("p", i)), v1.EventTypeNormal, "Created", "hello")
	}
	if err := e.eb.ShutdownWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(e.sink.Events()); n != 5000 {
		t.Fatalf("%d of 5000 written at shutdown", n)
	}
	goleak.VerifyNone(t) // Shutdown stopped every goroutine it started
	e.rec.Event(pod("ns", "late"), v1.EventTypeNormal, "Late", "after shutdown")
	s := e.eb.Stats()
	if s.Dropped.AfterShutdown != 1 || s.Created != 5000 {
		t.Fatalf("stats %+v", s)
	}
	check.Settled(t, s)
}

func TestShutdownAbandonsWhenSinkHangs(t *testing.T) {
	e := newEnv(t)
	e.sink.SetFault(func(ctx context.Context, _ sinktest.Op, _ *v1.Event) error {
		<-ctx.Done()
		return ctx.Err()
	})
	for i := range 10 {
		e.rec.Event(pod("ns", fmt.Sprint("p", i)), v1.EventTypeNormal, "R", "m")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := e.eb.ShutdownWithContext(ctx)
	if err == nil || !strings.Contains(err.Error(), "abandoned 10 events") {
		t.Fatalf("err = %v", err)
	}
	goleak.VerifyNone(t) // even with requests hanging, nothing is left running
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v does not wrap the flush error", err)
	}
	s := e.eb.Stats()
	if s.Abandoned != 10 {
		t.Fatalf("stats %+v", s)
	}
	check.Settled(t, s)
	if again := e.eb.ShutdownWithContext(context.Background()); again != err {
		t.Fatalf("second call returned %v", again)
	}
}

func TestContextCancelShutsDown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	e := newEnv(t, record.WithContext(ctx))
	e.rec.Event(pod("ns", "p"), v1.EventTypeNormal, "R", "m")
	cancel()
	// Shutdown is idempotent: this waits for the one the cancel started.
	e.eb.Shutdown()
	if n := len(e.sink.Events()); n != 1 {
		t.Fatalf("%d events written", n)
	}
}

// TestShutdownBeforeContextEnds: a broadcaster made WithContext a context
// that outlives it (a manager's) leaves no goroutine once Shutdown returns,
// and the context's end later does nothing more.
func TestShutdownBeforeContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eb := record.NewBroadcaster(record.WithContext(ctx))
	eb.StartStructuredLogging(0)
	eb.Shutdown()
	goleak.VerifyNone(t)
	cancel()
	if err := eb.ShutdownWithContext(context.Background()); err != nil {
		t.Fatalf("Shutdown after the context ended: %v", err)
	}
}

func TestWatchersAndLogging(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var handled []string
	var logged []string
	e.eb.StartEventWatcher(func(ev *v1.Event) {
		mu.Lock()
		handled = append(handled, ev.Reason)
		mu.Unlock()
	})
	e.eb.StartLogging(func(format string, args ...interface{}) {
		mu.Lock()
		logged = append(logged, fmt.Sprintf(format, args...))
		mu.Unlock()
	})
	e.eb.StartStructuredLogging(0)
	stopped := e.eb.StartEventWatcher(func(*v1.Event) { panic("handler bug") })
	e.rec.Event(pod("ns", "p"), v1.EventTypeNormal, "Hello", "world")
	e.flush()
	stopped.Stop()
	stopped.Stop()
	mu.Lock()
	defer mu.Unlock()
	if len(handled) != 1 || handled[0] != "Hello" {
		t.Fatalf("handled %v", handled)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "type: 'Normal' reason: 'Hello' world") {
		t.Fatalf("logged %v", logged)
	}
	for _, want := range []string{"Event occurred", "Event handler panicked"} {
		if !strings.Contains(e.logs(), want) {
			t.Errorf("missing log %q", want)
		}
	}
}

func TestClientGoSinkPlugsIn(t *testing.T) {
	cs := fake.NewClientset()
	eb := record.NewBroadcaster(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited}))
	defer eb.Shutdown()
	eb.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: "c"}).Event(pod("ns", "p"), v1.EventTypeNormal, "R", "m")
	if err := eb.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	list, err := cs.CoreV1().Events("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list %v %v", list, err)
	}
}

// TestAccountingIdentity records random workloads into a sink with random
// faults and checks, after shutdown, that every event is in exactly one
// bucket.
func TestAccountingIdentity(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			replay.OnFailure(t, "seed %d", seed)
			r := rand.New(rand.NewPCG(seed, 7))
			var mu sync.Mutex
			e := newEnv(t, record.WithSinkOptions(sink.Options{MaxTries: 2, MaxPending: 30}), record.WithQueueLength(100),
				record.WithCorrelatorOptions(record.CorrelatorOptions{BurstSize: 5}))
			gr := schema.GroupResource{Resource: "events"}
			e.sink.SetFault(func(ctx context.Context, _ sinktest.Op, ev *v1.Event) error {
				mu.Lock()
				x := r.IntN(8)
				mu.Unlock()
				switch x {
				case 0:
					return apierrors.NewForbidden(gr, ev.Name, errors.New("rbac"))
				case 1:
					return apierrors.NewServiceUnavailable("busy")
				case 2:
					return apierrors.NewInvalid(schema.GroupKind{Kind: "Event"}, ev.Name, nil)
				}
				return nil
			})
			for range 600 {
				mu.Lock()
				i, kind := r.IntN(50), r.IntN(20)
				mu.Unlock()
				switch kind {
				case 0:
					e.rec.Event(nil, v1.EventTypeNormal, "R", "nil")
				case 1:
					e.rec.Event(pod("ns", "p"), "Bogus", "R", "bad type")
				default:
					e.rec.Eventf(pod("ns", fmt.Sprint("p", i%10)), v1.EventTypeWarning, fmt.Sprint("R", i%3), "msg %d", i)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			_ = e.eb.ShutdownWithContext(ctx) // retries wait on the fake clock: some are abandoned
			s := e.eb.Stats()
			if s.Recorded != 600 {
				t.Fatalf("recorded %d", s.Recorded)
			}
			check.Settled(t, s)
		})
	}
}

func TestDropPathDoesNotAllocate(t *testing.T) {
	e := newEnv(t)
	e.eb.Shutdown()
	p := pod("ns", "p")
	rec := e.rec.WithLogger(klog.Background().V(0).WithSink(nil)) // verbosity 0, no output
	rec.Event(p, v1.EventTypeNormal, "R", "m")                    // the one loud log line
	allocs := testing.AllocsPerRun(100, func() { rec.Event(p, v1.EventTypeNormal, "R", "m") })
	if !raceEnabled && allocs != 0 { // the race detector allocates on its own
		t.Fatalf("Event after Shutdown allocates %v times", allocs)
	}
	if s := e.eb.Stats(); s.Dropped.AfterShutdown != 102 {
		t.Fatalf("stats %+v", s)
	}
}

func TestCacheEvictionsCounted(t *testing.T) {
	e := newEnv(t, record.WithCorrelatorOptions(record.CorrelatorOptions{LRUCacheSize: 10}))
	for i := range 30 {
		e.rec.Event(pod("ns", fmt.Sprint("p", i)), v1.EventTypeNormal, "R", "m")
	}
	e.flush()
	if s := e.eb.Stats(); s.CacheEvictions == 0 || s.Created != 30 {
		t.Fatalf("stats %+v", s)
	}
}

func TestShutdownDoesNotWaitForStuckHandler(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	entered := make(chan struct{})
	e.eb.StartEventWatcher(func(*v1.Event) {
		close(entered)
		<-release
	})
	e.rec.Event(pod("ns", "p"), v1.EventTypeNormal, "R", "m")
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := e.eb.ShutdownWithContext(ctx); err != nil {
		t.Fatalf("shutdown: %v (the sink had nothing left)", err)
	}
	if n := len(e.sink.Events()); n != 1 {
		t.Fatalf("%d events written", n)
	}
	close(release)
}

// TestEventfAllocations holds the caller's path of Eventf, with nothing
// attached, to two allocations of its own (the event and its message; the
// name is made by the broadcaster's loop) plus the caller's argument box.
func TestEventfAllocations(t *testing.T) {
	eb := record.NewBroadcaster()
	defer eb.Shutdown()
	rec := eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: "c"})
	p := pod("ns", "p")
	allocs := testing.AllocsPerRun(1000, func() { rec.Eventf(p, v1.EventTypeNormal, "R", "key %q", "mode") })
	if !raceEnabled && allocs > 3 {
		t.Fatalf("Eventf allocates %v times, want at most 3 (event, message, the caller's argument box)", allocs)
	}
	// An object that carries its apiVersion (TypeMeta, unstructured) in a
	// group costs no more.
	d := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d"}}
	allocs = testing.AllocsPerRun(1000, func() { rec.Eventf(d, v1.EventTypeNormal, "R", "key %q", "mode") })
	if !raceEnabled && allocs > 3 {
		t.Fatalf("Eventf on a Deployment with TypeMeta allocates %v times, want at most 3", allocs)
	}
}

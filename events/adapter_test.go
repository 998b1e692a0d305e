package events_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

type flusher interface {
	Flush(ctx context.Context) error
	Stats() events.Stats
	LegacyStats() events.Stats
}

func servesEventsV1(cs *fake.Clientset) {
	cs.Resources = []*metav1.APIResourceList{{
		GroupVersion: "events.k8s.io/v1",
		APIResources: []metav1.APIResource{{Name: "events", Namespaced: true, Kind: "Event", Verbs: []string{"create", "patch", "list"}}},
	}}
}

func newAdapter(t *testing.T, cs *fake.Clientset) events.EventBroadcasterAdapter {
	t.Helper()
	a := events.NewEventBroadcasterAdapterWithContext(context.Background(), cs,
		events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited, MaxDelay: time.Millisecond, BaseDelay: time.Millisecond})))
	t.Cleanup(a.Shutdown)
	a.StartRecordingToSink(nil)
	return a
}

func flushAdapter(t *testing.T, a events.EventBroadcasterAdapter) {
	t.Helper()
	f, ok := a.(flusher)
	if !ok {
		t.Fatalf("%T has no Flush", a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v; stats %+v legacy %+v", err, f.Stats(), f.LegacyStats())
	}
}

func coreEvents(t *testing.T, cs *fake.Clientset) []v1.Event {
	t.Helper()
	l, err := cs.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func TestAdapterEventsV1(t *testing.T) {
	cs := fake.NewClientset()
	servesEventsV1(cs)
	a := newAdapter(t, cs)
	r := a.NewRecorder("example.com/ctl")
	for i := 0; i < 3; i++ {
		r.Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "n")
	}
	flushAdapter(t, a)
	evs := listEvents(t, cs)
	if len(evs) != 1 || evs[0].Series == nil || evs[0].Series.Count != 3 || evs[0].Action != "A" {
		t.Fatalf("events.k8s.io/v1: %+v", evs)
	}
	if n := len(coreEvents(t, cs)); n != 0 {
		t.Errorf("%d core/v1 events", n)
	}
}

func TestAdapterCoreV1Fallback(t *testing.T) {
	cs := fake.NewClientset() // discovery lists no events.k8s.io/v1
	a := newAdapter(t, cs)
	r := a.NewRecorder("example.com/ctl")
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	for i := 0; i < 4; i++ {
		r.Eventf(pod("ns", "p"), node, v1.EventTypeWarning, "R", "Act", "note %d", i)
	}
	flushAdapter(t, a)
	if n := len(listEvents(t, cs)); n != 0 {
		t.Errorf("%d events.k8s.io/v1 events", n)
	}
	evs := coreEvents(t, cs)
	if len(evs) != 1 {
		t.Fatalf("core/v1: %d events", len(evs))
	}
	e := evs[0]
	if e.Action != "Act" || e.Related == nil || e.Related.Name != "n1" || e.Series == nil || e.Series.Count != 4 ||
		e.ReportingController != "example.com/ctl" || e.ReportingInstance == "" || e.Message != "note 0" || e.EventTime.IsZero() {
		t.Errorf("core/v1 event %+v", e)
	}
}

func TestAdapterTransientDiscoveryError(t *testing.T) {
	cs := fake.NewClientset()
	servesEventsV1(cs)
	var calls atomic.Int32
	cs.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		if calls.Add(1) <= 3 {
			return true, nil, apierrors.NewServiceUnavailable("discovery is busy")
		}
		return false, nil, nil
	})
	a := newAdapter(t, cs)
	r := a.NewRecorder("example.com/ctl")
	r.Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "n")
	flushAdapter(t, a)
	if n := len(listEvents(t, cs)); n != 1 {
		t.Errorf("%d events.k8s.io/v1 events after a transient error; stats %+v", n, a.(flusher).Stats())
	}
	if n := len(coreEvents(t, cs)); n != 0 {
		t.Errorf("%d core/v1 events", n)
	}
	if calls.Load() < 4 {
		t.Errorf("discovery called %d times", calls.Load())
	}
}

func TestAdapterDiscoveryConnectionError(t *testing.T) {
	cs := fake.NewClientset()
	servesEventsV1(cs)
	var calls atomic.Int32
	cs.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		if calls.Add(1) <= 2 {
			return true, nil, errors.New("dial tcp 10.0.0.1:443: connect: connection refused")
		}
		return false, nil, nil
	})
	a := newAdapter(t, cs)
	a.NewRecorder("example.com/ctl").Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "n")
	flushAdapter(t, a)
	if n := len(listEvents(t, cs)); n != 1 {
		t.Errorf("%d events.k8s.io/v1 events", n)
	}
}

func TestAdapterForbiddenDiscoveryChoosesCore(t *testing.T) {
	cs := fake.NewClientset()
	servesEventsV1(cs)
	cs.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(metav1.SchemeGroupVersion.WithResource("x").GroupResource(), "", errors.New("no"))
	})
	a := newAdapter(t, cs)
	a.NewRecorder("example.com/ctl").Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "n")
	flushAdapter(t, a)
	if n := len(coreEvents(t, cs)); n != 1 {
		t.Errorf("%d core/v1 events", n)
	}
}

func TestAdapterLegacyRecorder(t *testing.T) {
	cs := fake.NewClientset()
	servesEventsV1(cs)
	a := newAdapter(t, cs)
	lr := a.DeprecatedNewLegacyRecorder("legacy-ctl")
	lr.Eventf(pod("ns", "p"), v1.EventTypeNormal, "Legacy", "legacy %d", 1)
	flushAdapter(t, a)
	evs := coreEvents(t, cs)
	if len(evs) != 1 || evs[0].Reason != "Legacy" || evs[0].Message != "legacy 1" || evs[0].Source.Component != "legacy-ctl" {
		t.Fatalf("core/v1: %+v", evs)
	}
	if n := len(listEvents(t, cs)); n != 0 {
		t.Errorf("%d events.k8s.io/v1 events", n)
	}
}

func TestAdapterShutdownFlushesBoth(t *testing.T) {
	cs := fake.NewClientset()
	servesEventsV1(cs)
	a := events.NewEventBroadcasterAdapterWithContext(context.Background(), cs, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited})))
	a.StartRecordingToSink(nil)
	r := a.NewRecorder("example.com/ctl")
	lr := a.DeprecatedNewLegacyRecorder("legacy")
	for i := 0; i < 10; i++ {
		r.Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "n")
		lr.Eventf(pod("ns", "p"), v1.EventTypeNormal, "Legacy", "legacy")
	}
	a.Shutdown()
	evs := listEvents(t, cs)
	if len(evs) != 1 || evs[0].Series == nil || evs[0].Series.Count != 10 {
		t.Errorf("events.k8s.io/v1: %+v", evs)
	}
	core := coreEvents(t, cs)
	if len(core) != 1 || core[0].Count != 10 {
		t.Errorf("core/v1: %+v", core)
	}
	f := a.(flusher)
	check.Settled(t, f.Stats())
	check.Settled(t, f.LegacyStats())
}

// The end of the adapter's context shuts it down: what is recorded after it
// is counted as dropped after shutdown (and TestMain's goleak finds no
// goroutine of it left).
func TestAdapterContextEndShutsDown(t *testing.T) {
	cs := fake.NewClientset()
	servesEventsV1(cs)
	ctx, cancel := context.WithCancel(context.Background())
	a := events.NewEventBroadcasterAdapterWithContext(ctx, cs)
	a.StartRecordingToSink(nil)
	r := a.NewRecorder("example.com/ctl")
	cancel()
	f := a.(flusher)
	check.Eventually(t, "the adapter to shut down when its context ended", func() error {
		r.Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "n")
		st := f.Stats()
		return check.Errorf(st.Dropped.AfterShutdown > 0, "no event dropped after shutdown yet; stats %+v", st)
	})
	// From now on, each event of either recorder is counted, as dropped
	// after shutdown, and reaches no sink.
	before, legacyBefore := f.Stats(), f.LegacyStats()
	r.Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "after")
	a.DeprecatedNewLegacyRecorder("legacy").Eventf(pod("ns", "p"), v1.EventTypeNormal, "Legacy", "after")
	a.Shutdown()
	st, legacy := f.Stats(), f.LegacyStats()
	if st.Recorded != before.Recorded+1 || st.Dropped.AfterShutdown != before.Dropped.AfterShutdown+1 {
		t.Errorf("events.k8s.io/v1 recorder after the context ended: recorded %d, dropped after shutdown %d, want %d and %d; stats %+v",
			st.Recorded, st.Dropped.AfterShutdown, before.Recorded+1, before.Dropped.AfterShutdown+1, st)
	}
	if legacy.Recorded != legacyBefore.Recorded+1 || legacy.Dropped.AfterShutdown != legacyBefore.Dropped.AfterShutdown+1 {
		t.Errorf("legacy recorder after the context ended: recorded %d, dropped after shutdown %d, want %d and %d; stats %+v",
			legacy.Recorded, legacy.Dropped.AfterShutdown, legacyBefore.Recorded+1, legacyBefore.Dropped.AfterShutdown+1, legacy)
	}
	for _, e := range listEvents(t, cs) {
		if e.Note == "after" {
			t.Errorf("an event recorded after the context ended reached the server: %+v", e)
		}
	}
	for _, e := range coreEvents(t, cs) {
		if e.Message == "after" {
			t.Errorf("a legacy event recorded after the context ended reached the server: %+v", e)
		}
	}
	check.Settled(t, st)
	check.Settled(t, legacy)
}

// The adapter's discovery logs through the logger its options give
// (record.WithLogger), as the broadcasters do.
func TestAdapterDiscoveryLogsThroughItsLogger(t *testing.T) {
	logger, logLines := check.Logger()
	cs := fake.NewClientset() // discovery lists no events.k8s.io/v1
	a := events.NewEventBroadcasterAdapterWithContext(context.Background(), cs,
		events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited}), record.WithLogger(logger)))
	t.Cleanup(a.Shutdown)
	a.StartRecordingToSink(nil)
	a.NewRecorder("example.com/ctl").Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "n")
	flushAdapter(t, a)
	lines := logLines()
	for _, l := range lines {
		if strings.Contains(l, "does not serve events.k8s.io/v1") {
			return
		}
	}
	t.Fatalf("the fallback to core/v1 was not logged through the adapter's logger: %q", lines)
}

// When the adapter's context ends, it shuts down; the goroutine of the
// deprecated StartRecordingToSink ends with it, even with a stopCh that
// never closes.
func TestAdapterStartRecordingEndsWithContext(t *testing.T) {
	base := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	cs := fake.NewClientset()
	servesEventsV1(cs)
	a := events.NewEventBroadcasterAdapterWithContext(ctx, cs)
	a.StartRecordingToSink(nil)
	a.NewRecorder("ctl").Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "n")
	cancel()
	check.Eventually(t, "the adapter's goroutines to end", func() error { return goleak.Find(base) })
}

// A 401 from discovery is asked again, not taken as the server refusing
// events.k8s.io/v1 for good: client-go's transport refreshes its
// credentials on a 401, and the engine tries a 401 once more.
func TestAdapterUnauthorizedDiscoveryAsksAgain(t *testing.T) {
	cs := fake.NewClientset()
	servesEventsV1(cs)
	var calls atomic.Int32
	cs.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		if calls.Add(1) == 1 {
			return true, nil, apierrors.NewUnauthorized("token revoked")
		}
		return false, nil, nil
	})
	a := newAdapter(t, cs)
	a.NewRecorder("example.com/ctl").Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "n")
	flushAdapter(t, a)
	if v1n, core := len(listEvents(t, cs)), len(coreEvents(t, cs)); v1n != 1 || core != 0 {
		t.Errorf("%d events.k8s.io/v1 and %d core/v1 events, want 1 and 0; stats %+v", v1n, core, a.(flusher).Stats())
	}
}

// The adapter's Shutdown gives its two broadcasters one grace period
// together: with a server that never answers, each broadcaster's event is
// abandoned and Shutdown returns after about one grace period (2 s here),
// not one for each (4 s: it shut them down one after the other). The
// bound leaves 1.5 s for a loaded machine.
func TestAdapterShutdownTakesOneGracePeriod(t *testing.T) {
	const grace = 2 * time.Second
	cs := fake.NewClientset()
	servesEventsV1(cs)
	release := make(chan struct{})
	defer close(release) // the stuck writes return; goleak checks their workers end
	var writes atomic.Int32
	cs.PrependReactor("create", "events", func(clienttesting.Action) (bool, runtime.Object, error) {
		writes.Add(1)
		<-release
		return true, nil, errors.New("released")
	})
	a := events.NewEventBroadcasterAdapterWithContext(context.Background(), cs,
		events.WithBroadcasterOptions(record.WithShutdownGracePeriod(grace)))
	a.StartRecordingToSink(nil)
	a.NewRecorder("example.com/ctl").Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "n")
	a.DeprecatedNewLegacyRecorder("legacy").Eventf(pod("ns", "p"), v1.EventTypeNormal, "Legacy", "legacy")
	// The fake clientset runs its reactors under one lock: the other write
	// waits for it, as stuck as the first.
	check.Eventually(t, "a write under way", func() error {
		return check.Errorf(writes.Load() == 1, "%d writes under way", writes.Load())
	})
	start := time.Now()
	a.Shutdown()
	took := time.Since(start)
	f := a.(flusher)
	if took > grace+1500*time.Millisecond || f.Stats().Abandoned != 1 || f.LegacyStats().Abandoned != 1 {
		t.Errorf("Shutdown took %v (grace %v), abandoned %d and %d; want about one grace period, 1 and 1",
			took, grace, f.Stats().Abandoned, f.LegacyStats().Abandoned)
	}
}

package events_test

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

var t0 = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

// newClockBroadcaster returns a recording broadcaster on a fake clock.
func newClockBroadcaster(t *testing.T, s events.EventSink, opts ...events.Option) (events.EventBroadcaster, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	b := events.NewBroadcaster(s, append([]events.Option{events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{Clock: clk, QPS: sink.Unlimited, MaxDelay: time.Second, BaseDelay: time.Second}))}, opts...)...)
	t.Cleanup(b.Shutdown)
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	return b, clk
}

// flushStepping flushes b, stepping its fake clock while writes wait on it.
func flushStepping(t *testing.T, b events.EventBroadcaster, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		err := b.Flush(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not flushed: %+v", b.Stats())
		}
		clk.Step(100 * time.Millisecond)
	}
}

func count(e *eventsv1.Event) int32 {
	if e.Series == nil {
		return 1
	}
	return e.Series.Count
}

var patchBody = regexp.MustCompile(`^\{"series":\{"count":(\d+),"lastObservedTime":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"\}\}$`)

func TestSeriesPatchBodyAndName(t *testing.T) {
	s := newMemSink()
	b, clk := newClockBroadcaster(t, s)
	r := b.NewRecorder(scheme.Scheme, "ctl")
	p := pod("ns", "p")
	r.Eventf(p, nil, v1.EventTypeWarning, "R", "A", "first")
	flushStepping(t, b, clk)
	first := s.all()[0]
	clk.Step(time.Second)
	r.Eventf(p, nil, v1.EventTypeWarning, "R", "A", "second")
	flushStepping(t, b, clk)
	evs := s.all()
	if len(evs) != 1 || evs[0].Name != first.Name || count(evs[0]) != 2 || evs[0].Note != "first" {
		t.Fatalf("got %+v", evs)
	}
	if lo := evs[0].Series.LastObservedTime.Time; lo.Before(t0.Add(time.Second)) || !lo.After(first.EventTime.Time) {
		t.Errorf("lastObservedTime %v", evs[0].Series.LastObservedTime)
	}
	if len(s.data) != 1 || !patchBody.MatchString(s.data[0]) {
		t.Errorf("patch bodies %q", s.data)
	}
}

func TestSeriesFinishTime(t *testing.T) {
	s := newMemSink()
	b, clk := newClockBroadcaster(t, s)
	r := b.NewRecorder(scheme.Scheme, "ctl")
	p := pod("ns", "p")
	r.Eventf(p, nil, v1.EventTypeWarning, "R", "A", "n")
	flushStepping(t, b, clk)
	clk.Step(events.FinishTime - time.Second)
	r.Eventf(p, nil, v1.EventTypeWarning, "R", "A", "n") // within: a series
	flushStepping(t, b, clk)
	if evs := s.all(); len(evs) != 1 || count(evs[0]) != 2 {
		t.Fatalf("within FinishTime: %d events", len(evs))
	}
	clk.Step(events.FinishTime + time.Second)
	r.Eventf(p, nil, v1.EventTypeWarning, "R", "A", "n") // after: a new event
	flushStepping(t, b, clk)
	evs := s.all()
	if len(evs) != 2 {
		t.Fatalf("after FinishTime: %d events", len(evs))
	}
	var total int32
	for _, e := range evs {
		total += count(e)
	}
	if total != 3 || s.creates != 2 {
		t.Errorf("total %d creates %d", total, s.creates)
	}
	st := b.Stats()
	if st.Created != 2 || st.Patched != 1 {
		t.Errorf("stats %+v", st)
	}
	check.Settled(t, st)
}

func TestSeriesLRUEviction(t *testing.T) {
	s := newMemSink()
	b, clk := newClockBroadcaster(t, s, events.WithBroadcasterOptions(record.WithQueueLength(10000)))
	r := b.NewRecorder(scheme.Scheme, "ctl")
	first := pod("ns", "first")
	r.Eventf(first, nil, v1.EventTypeWarning, "R", "A", "n")
	for i := 0; i < events.DefaultCacheSize; i++ {
		r.Eventf(pod("ns", fmt.Sprint("p", i)), nil, v1.EventTypeWarning, "R", "A", "n")
	}
	flushStepping(t, b, clk)
	r.Eventf(first, nil, v1.EventTypeWarning, "R", "A", "n") // evicted: a new event
	flushStepping(t, b, clk)
	st := b.Stats()
	if st.CacheEvictions < 1 {
		t.Errorf("CacheEvictions %d", st.CacheEvictions)
	}
	if st.Created != events.DefaultCacheSize+2 || st.Patched != 0 {
		t.Errorf("stats %+v", st)
	}
	n := 0
	for _, e := range s.all() {
		if e.Regarding.Name == "first" {
			n++
			if e.Series != nil {
				t.Errorf("series %+v", e.Series)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d events about first", n)
	}
	check.Settled(t, st)
}

func TestSeriesPatchNotFoundRecreates(t *testing.T) {
	s := newMemSink()
	s.beforePatch = func(s *memSink, ev *eventsv1.Event) { s.delete(ev.Namespace, ev.Name) }
	b, clk := newClockBroadcaster(t, s)
	r := b.NewRecorder(scheme.Scheme, "ctl")
	p := pod("ns", "p")
	r.Eventf(p, nil, v1.EventTypeWarning, "R", "A", "n")
	flushStepping(t, b, clk)
	name := s.all()[0].Name
	for i := 0; i < 3; i++ {
		r.Eventf(p, nil, v1.EventTypeWarning, "R", "A", "n")
		flushStepping(t, b, clk)
	}
	evs := s.all()
	if len(evs) != 1 || evs[0].Name != name || evs[0].Series == nil || evs[0].Series.Count != 4 {
		t.Fatalf("got %+v", evs)
	}
	st := b.Stats()
	if st.Dropped.Total() != 0 || st.Created+st.Patched+st.Coalesced != 4 {
		t.Errorf("stats %+v", st)
	}
	check.Settled(t, st)
}

func TestSeriesCoalesced(t *testing.T) {
	s := newMemSink()
	gate := make(chan struct{})
	entered := make(chan struct{}, 1)
	s.beforePatch = func(*memSink, *eventsv1.Event) {
		select {
		case entered <- struct{}{}:
			<-gate // hold the first patch
		default:
		}
	}
	b, clk := newClockBroadcaster(t, s)
	r := b.NewRecorder(scheme.Scheme, "ctl")
	p := pod("ns", "p")
	r.Eventf(p, nil, v1.EventTypeWarning, "R", "A", "n")
	flushStepping(t, b, clk)
	r.Eventf(p, nil, v1.EventTypeWarning, "R", "A", "n")
	waitStepping(t, entered, clk) // the patch of count 2 is in flight
	const more = 50
	for i := 0; i < more; i++ {
		r.Eventf(p, nil, v1.EventTypeWarning, "R", "A", "n")
	}
	// Let every repeat reach the engine while the patch is held.
	check.Eventually(t, "repeats to reach the engine", func() error {
		st := b.Stats()
		return check.Errorf(st.Queued == 0 && st.Pending+st.InFlight+st.Coalesced >= more,
			"queued %d, pending + in flight + coalesced %d, want 0 and at least %d; stats %+v", st.Queued, st.Pending+st.InFlight+st.Coalesced, more, st)
	})
	close(gate)
	flushStepping(t, b, clk)
	evs := s.all()
	if len(evs) != 1 || count(evs[0]) != more+2 {
		t.Fatalf("got %d events, count %d", len(evs), count(evs[0]))
	}
	st := b.Stats()
	if st.Coalesced == 0 || st.Created+st.Patched+st.Coalesced != more+2 {
		t.Errorf("stats %+v", st)
	}
	check.Settled(t, st)
}

// A repeat after FinishTime starts a new event even while the old series'
// last count still waits to be written: both are stored, with exact counts.
func TestSeriesNewEventWhileOldCountPending(t *testing.T) {
	s := newMemSink()
	gate := make(chan struct{})
	entered := make(chan struct{}, 1)
	s.beforePatch = func(*memSink, *eventsv1.Event) {
		select {
		case entered <- struct{}{}:
			<-gate
		default:
		}
	}
	b, clk := newClockBroadcaster(t, s, events.WithSeriesInterval(events.NoSeriesInterval))
	r := b.NewRecorder(scheme.Scheme, "ctl")
	p := pod("ns", "p")
	r.Eventf(p, nil, v1.EventTypeWarning, "R", "A", "n")
	flushStepping(t, b, clk)
	r.Eventf(p, nil, v1.EventTypeWarning, "R", "A", "n")
	<-entered // count 2 in flight
	r.Eventf(p, nil, v1.EventTypeWarning, "R", "A", "n")
	check.Eventually(t, "count 3 to wait", func() error {
		st := b.Stats()
		return check.Errorf(st.Queued == 0 && st.Pending == 1, "queued %d, pending %d, want 0 and 1; stats %+v", st.Queued, st.Pending, st)
	})
	clk.Step(events.FinishTime + time.Second)
	r.Eventf(p, nil, v1.EventTypeWarning, "R", "A", "new")
	check.Eventually(t, "the new event to wait", func() error {
		st := b.Stats()
		return check.Errorf(st.Queued == 0 && st.Pending == 2, "queued %d, pending %d, want 0 and 2; stats %+v", st.Queued, st.Pending, st)
	})
	close(gate)
	flushStepping(t, b, clk)
	evs := s.all()
	if len(evs) != 2 {
		t.Fatalf("stored %d events", len(evs))
	}
	counts := map[string]int32{}
	for _, e := range evs {
		counts[e.Note] = count(e)
	}
	if counts["n"] != 3 || counts["new"] != 1 {
		t.Errorf("counts %v", counts)
	}
	check.Settled(t, b.Stats())
}

// waitStepping waits for ch, stepping the fake clock meanwhile (a write
// may wait for the series interval).
func waitStepping(t *testing.T, ch <-chan struct{}, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-ch:
			return
		case <-time.After(time.Millisecond): // polling, not synchronising on time
		}
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		clk.Step(100 * time.Millisecond)
	}
}

package events_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// A series goes on across a restart of recording (the series are the
// broadcaster's), but each session has its own engine: a count the old
// sink still writes as it retires can land after a higher count the new
// sink wrote, and the stored count goes back.
func TestSeriesCountAcrossRestartNeverGoesBack(t *testing.T) {
	s := newMemSink()
	gate := make(chan struct{})
	entered := make(chan struct{}, 1)
	var waited atomic.Bool
	s.beforePatch = func(*memSink, *eventsv1.Event) {
		if waited.CompareAndSwap(false, true) { // only the first patch waits
			entered <- struct{}{}
			<-gate
		}
	}
	b := events.NewBroadcaster(s, events.WithSeriesInterval(events.NoSeriesInterval),
		events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited}),
			record.WithShutdownGracePeriod(time.Minute), record.WithLogger(klogDiscard())))
	defer b.Shutdown()
	r := b.NewRecorder(scheme.Scheme, "example.com/ctl")
	p := pod("ns", "p")
	ctx1, cancel1 := context.WithCancel(context.Background())
	if err := b.StartRecordingToSinkWithContext(ctx1); err != nil {
		t.Fatal(err)
	}
	r.Eventf(p, nil, v1.EventTypeWarning, "BackOff", "Restart", "crashed")
	flush(t, b)
	r.Eventf(p, nil, v1.EventTypeWarning, "BackOff", "Restart", "crashed") // count 2: held in the sink
	<-entered
	r.Eventf(p, nil, v1.EventTypeWarning, "BackOff", "Restart", "crashed") // count 3: waits behind it
	check.Eventually(t, "count 3 to wait in the old engine", func() error {
		st := b.Stats()
		return check.Errorf(st.Queued == 0 && st.Pending == 1, "stats %+v", st)
	})
	cancel1()
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.Eventf(p, nil, v1.EventTypeWarning, "BackOff", "Restart", "crashed") // count 4: the new session
	// Wait until the new sink has written count 4, or holds it in flight
	// (a sink that orders the writes of one event makes it wait for the
	// old sink's).
	var inFlightSince time.Time
	check.Eventually(t, "count 4 to be written or in flight", func() error {
		st := b.Stats()
		if st.Patched >= 1 {
			return nil
		}
		if st.InFlight >= 2 {
			if inFlightSince.IsZero() {
				inFlightSince = time.Now()
			}
			if time.Since(inFlightSince) > 200*time.Millisecond {
				return nil
			}
		}
		return check.Errorf(false, "stats %+v", st)
	})
	close(gate)
	flush(t, b)
	evs := s.all()
	if len(evs) != 1 || count(evs[0]) != 4 {
		t.Fatalf("stored %d events, count %d; want one series of 4 (patches %q)", len(evs), count(evs[0]), s.data)
	}
}

package events_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// waitRecorded polls until at least n events were recorded.
func waitRecorded(t *testing.T, b events.EventBroadcaster, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for b.Stats().Recorded < n {
		if time.Now().After(deadline) {
			t.Fatalf("recorded %d, want %d", b.Stats().Recorded, n)
		}
		time.Sleep(time.Millisecond) // polling a condition
	}
}

// Recording that stops with its context and starts again while events keep
// coming never has two sinks: no event is written twice.
func TestRestartWhileRecordingWritesOnce(t *testing.T) {
	for round := range 20 {
		s := newMemSink()
		b := events.NewBroadcaster(s, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited}), record.WithLogger(klogDiscard())))
		ctx, cancel := context.WithCancel(context.Background())
		if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
			t.Fatal(err)
		}
		r := b.NewRecorder(scheme.Scheme, "example.com/ctl")
		var stop atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; !stop.Load(); i++ {
				// Events keep coming, but no faster than the sink takes
				// them: this test is about the restart, not about an
				// overload (which drops, counted, as queue or pending
				// full).
				for i%100 == 0 && !stop.Load() {
					if st := b.Stats(); st.Queued+st.Pending+st.InFlight < 1000 {
						break
					}
					time.Sleep(100 * time.Microsecond)
				}
				r.Eventf(pod("ns", fmt.Sprint("p", i)), nil, v1.EventTypeNormal, "R", "A", "n")
			}
		}()
		waitRecorded(t, b, 200)
		cancel()
		for b.StartRecordingToSinkWithContext(context.Background()) != nil {
			// the old sink is still taking what was recorded before
		}
		waitRecorded(t, b, b.Stats().Recorded+200)
		stop.Store(true)
		<-done
		flush(t, b)
		st := b.Stats()
		b.Shutdown()
		// Events recorded between the stop and the new start reach no sink
		// (Broadcast counts them, Offered does not); every offered event is
		// created once.
		if st.Dropped.Total() != 0 || st.Offered > st.Broadcast || st.Created != st.Offered || int64(len(s.all())) != st.Created {
			t.Fatalf("round %d: broadcast %d, offered %d, created %d, stored %d, dropped %+v", round, st.Broadcast, st.Offered, st.Created, len(s.all()), st.Dropped)
		}
	}
}

// lostAnswerSink stores the first Create but answers it 500 once release is
// closed: its answer was lost after the server stored it.
type lostAnswerSink struct {
	*memSink
	first   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (s *lostAnswerSink) Create(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	out, err := s.memSink.Create(ctx, ev)
	if err == nil && s.first.CompareAndSwap(false, true) {
		close(s.entered)
		<-s.release
		return nil, apierrors.NewInternalError(errors.New("lost answer"))
	}
	return out, err
}

// A Create whose answer was lost is retried with the repeats recorded
// meanwhile; the server answers AlreadyExists, and the series is patched:
// the stored count is every occurrence, nothing is counted dropped.
func TestLostCreateAnswerKeepsTheSeries(t *testing.T) {
	s := &lostAnswerSink{memSink: newMemSink(), entered: make(chan struct{}), release: make(chan struct{})}
	b := events.NewBroadcaster(s, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})), events.WithSeriesInterval(events.NoSeriesInterval), events.WithBroadcasterOptions(record.WithLogger(klogDiscard())))
	defer b.Shutdown()
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := b.NewRecorder(scheme.Scheme, "example.com/ctl")
	r.Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "n")
	<-s.entered
	for range 5 {
		r.Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "n")
	}
	deadline := time.Now().Add(10 * time.Second)
	for b.Stats().Pending < 5 { // the repeats wait behind the create
		if time.Now().After(deadline) {
			t.Fatalf("repeats never reached the engine: %+v", b.Stats())
		}
		time.Sleep(time.Millisecond) // polling a condition
	}
	close(s.release)
	flush(t, b)
	st := b.Stats()
	stored := s.all()
	if len(stored) != 1 || stored[0].Series == nil || stored[0].Series.Count != 6 {
		t.Fatalf("stored %+v, want one event with a series of 6", stored)
	}
	if st.Dropped.Total() != 0 || st.Created+st.Patched+st.Coalesced != st.Recorded {
		t.Fatalf("stats %+v", st)
	}
}

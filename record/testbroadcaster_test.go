package record_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// failFirst makes the first n calls of the sink fail with an error the
// engine retries.
func failFirst(s *sinktest.Sink, n int64) *atomic.Int64 {
	var calls atomic.Int64
	s.SetFault(func(context.Context, sinktest.Op, *v1.Event) error {
		if calls.Add(1) <= n {
			return errors.New("connection reset")
		}
		return nil
	})
	return &calls
}

// client-go: a zero sleep duration retries at once. With a fake clock that
// never moves, any wait between tries would never end.
func TestZeroSleepDurationRetriesAtOnce(t *testing.T) {
	e := newEnv(t, record.WithSinkOptions(sink.Options{MaxDelay: sink.NoWait}))
	calls := failFirst(e.sink, 5)
	e.rec.Event(pod("ns", "p"), v1.EventTypeNormal, "R", "m")
	e.flush() // fails after 20 s if a retry waits for the clock
	if s := e.eb.Stats(); s.Created != 1 || calls.Load() != 6 {
		t.Fatalf("created %d after %d calls; stats %+v", s.Created, calls.Load(), s)
	}
}

// NewBroadcasterForTests(0) retries at once and does not rate-limit writes:
// 2,000 events that each fail once take 4,000 writes, 80 s at herald's
// default limit of 50 writes/s.
func TestNewBroadcasterForTestsIsNotThrottled(t *testing.T) {
	eb := record.NewBroadcasterForTests(0)
	defer eb.Shutdown()
	s := sinktest.New()
	var mu sync.Mutex
	failed := map[string]bool{}
	s.SetFault(func(_ context.Context, _ sinktest.Op, ev *v1.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if !failed[ev.Message] {
			failed[ev.Message] = true
			return errors.New("connection reset")
		}
		return nil
	})
	eb.StartRecordingToSink(s)
	rec := eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: "c"})
	const n = 2000
	for i := range n {
		// One object each: neither aggregated nor filtered.
		rec.Eventf(pod("ns", fmt.Sprint("p", i)), v1.EventTypeNormal, "R", "m%d", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := eb.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v; stats %+v", err, eb.Stats())
	}
	if st := eb.Stats(); st.Created != n {
		t.Fatalf("stats %+v", st)
	}
}

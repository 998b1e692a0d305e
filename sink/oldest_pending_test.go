package sink_test

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// OldestPending is the age of the oldest event not yet written, "pending
// or in flight": a write stuck at the server (a slow webhook, a request
// that never answers) keeps showing its age.
func TestOldestPendingCountsWritesUnderWay(t *testing.T) {
	h := newHarness(t, sink.Options{})
	release := make(chan struct{})
	h.sink.SetFault(func(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	h.eng.Add("k", event("e", 1), nil)
	h.until("the write under way", func(s sink.Stats) bool { return s.InFlight == 1 })
	h.clock.Step(5 * time.Second)
	if s := h.eng.Stats(); s.OldestPending != 5*time.Second {
		t.Errorf("a write under way for 5s: OldestPending %v, want 5s; stats %+v", s.OldestPending, s)
	}
	close(release)
	h.until("written", func(s sink.Stats) bool { return s.Created == 1 && s.InFlight == 0 })
	if s := h.eng.Stats(); s.OldestPending != 0 {
		t.Errorf("nothing left: OldestPending %v, want 0", s.OldestPending)
	}
}

package sink_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// A 429 while the server accepts other writes shows as shedding: the
// refused event waits for the Retry-After (counted in HeldBack), the rate is
// cut, the other keys are written meanwhile, and every count stays exact.
func TestShedShowsInStats(t *testing.T) {
	h := newHarness(t, sink.Options{Workers: 1})
	h.sink.SetFault(func(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
		if ev.Name == "refused" {
			return apierrors.NewTooManyRequests("busy", 2)
		}
		return nil
	})
	for i := range 20 {
		h.eng.Add(fmt.Sprint("w", i), event(fmt.Sprint("w", i), 1), nil)
	}
	h.until("warm", func(s sink.Stats) bool { return s.Created == 20 })
	h.eng.Add("refused", event("refused", 1), nil)
	h.until("the 429", func(s sink.Stats) bool { return s.Retried == 1 && s.InFlight == 0 })
	for i := range 3 {
		h.eng.Add(fmt.Sprint("o", i), event(fmt.Sprint("o", i), 1), nil)
	}
	// The cut rate still has tokens for them: no clock step, so the
	// refused event's Retry-After (2 s) cannot pass meanwhile.
	h.until("the others", func(s sink.Stats) bool { return s.Created == 23 })
	s := h.eng.Stats()
	if s.Server != sink.ServerShedding || s.RateCuts != 1 || s.HeldBack != 1 || s.Pending != 1 || s.Probes != 0 {
		t.Fatalf("while shedding: %+v", s)
	}
	if s.WriteRate >= 1e6 {
		t.Fatalf("the rate was not cut: %v", s.WriteRate)
	}
	h.sink.SetFault(nil)
	h.stepUntil("the refused event after its Retry-After", 100*time.Millisecond, func(s sink.Stats) bool { return s.Created == 24 })
	h.stepUntil("healthy again", 100*time.Millisecond, func(s sink.Stats) bool { return s.Server == sink.ServerHealthy })
	if s := h.eng.Stats(); s.HeldBack != 0 || s.Pending != 0 || s.Dropped.Total() != 0 || s.Retried != 1 {
		t.Fatalf("after: %+v", s)
	}
}

package sink_test

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// A Flush waiting for a write that fails while a newer state of the same
// event is queued behind it (the two are merged on the requeue) returns
// once the merged write is stored: the failed write's waits move to it.
func TestFlushWaitsThroughARequeueMerge(t *testing.T) {
	h := newHarness(t, sink.Options{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
	entered := make(chan struct{})
	release := make(chan struct{})
	first := true
	h.sink.SetFault(func(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
		if !first {
			return nil
		}
		first = false
		close(entered)
		<-release
		return apierrors.NewInternalError(errors.New("webhook failed")) // a 500: retried
	})
	h.eng.Add("k", event("e", 1), nil)
	<-entered // the create is under way
	done, forget := h.eng.Wait()
	defer forget()
	h.eng.Add("k", event("e", 2), patchFor(2)) // queued behind, same event
	close(release)                             // the create fails: requeued, merged with the patch
	h.stepUntil("the merged write stored", 10*time.Millisecond, func(s sink.Stats) bool {
		return s.Created+s.Patched == 1 && s.Pending == 0 && s.InFlight == 0
	})
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("Flush still waits after everything it waited for was written; stats %+v, waiters %d",
			h.eng.Stats(), sink.WaitersForTest(h.eng))
	}
	if s := h.eng.Stats(); s.Dropped.Total() != 0 || s.Retried != 1 {
		t.Fatalf("want one retry and no drop; stats %+v", s)
	}
	if got, _ := h.sink.Get("ns", "e"); got == nil || got.Count != 2 {
		t.Fatalf("stored %+v, want count 2", got)
	}
}

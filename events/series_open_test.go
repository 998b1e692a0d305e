package events_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/heraldk8s/herald/events"
)

// A series stays open FinishTime after its last occurrence, not after its
// first: occurrences each a little less than FinishTime apart form one
// series however long it runs.
func TestSeriesStaysOpenAfterLastOccurrence(t *testing.T) {
	s := newMemSink()
	b, clk := newClockBroadcaster(t, s)
	r := b.NewRecorder(scheme.Scheme, "ctl")
	p := pod("ns", "p")
	const n = 4
	for i := range n {
		if i > 0 {
			clk.Step(events.FinishTime - time.Second)
		}
		r.Eventf(p, nil, v1.EventTypeWarning, "R", "A", "n")
		flushStepping(t, b, clk)
	}
	evs := s.all()
	if len(evs) != 1 || count(evs[0]) != n || s.creates != 1 {
		t.Fatalf("%d occurrences each FinishTime-1s after the last: %d events (creates %d), want one series of %d", n, len(evs), s.creates, n)
	}
}

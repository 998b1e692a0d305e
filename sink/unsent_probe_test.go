package sink_test

import (
	"testing"
	"time"

	"github.com/heraldk8s/herald/sink"
)

// A write the engine drops before any request goes (an event name that
// cannot be a path segment: "a request that cannot be built") tells
// nothing of the server. Dropped as the probe of an outage, it must not
// bring the server back: the engine stays down, its next probe goes (the
// event that failed into the outage, now the only one), and that event is
// not charged a try ("while the server is down events wait ... nothing is
// charged to an event").
func TestUnsentProbeDoesNotEndAnOutage(t *testing.T) {
	h, o := downHarness(t, sink.Options{Workers: 1, MaxTries: 1, BaseDelay: time.Second, MaxDelay: time.Second})
	h.eng.Add("k0", event("e0", 1), nil)
	h.waitDown()
	h.eng.Add("bad", event("bad/name", 1), nil) // the probe: the oldest key that has not failed
	before := o.calls.Load()
	h.waitTimer()
	h.clock.Step(2 * time.Second)
	// Then either the next probe goes (e0, still down) or, taken for an
	// answer, the drop brought the server back and e0 went and was charged.
	h.until("the unbuildable event dropped and what follows", func(s sink.Stats) bool {
		return s.Dropped.Rejected == 1 && s.InFlight == 0 && (s.Probes >= 2 || s.Pending == 0)
	})
	s := h.eng.Stats()
	if s.Server != sink.ServerProbing || o.calls.Load() != before+1 || s.Dropped.RetriesExhausted != 0 || s.Pending != 1 {
		t.Fatalf("after a probe that was never sent: server %v, %d requests since the outage was seen (want 1: e0's probe), %d dropped as retries exhausted, %d pending; stats %+v",
			s.Server, o.calls.Load()-before, s.Dropped.RetriesExhausted, s.Pending, s)
	}
}

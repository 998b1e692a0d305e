package sink_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// outage is a fault that fails every write with a 503 while down is set,
// and records the most writes under way at once.
type outage struct {
	down              atomic.Bool
	inFlight, maxSeen atomic.Int32
	calls             atomic.Int32
}

func (o *outage) fault(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
	n := o.inFlight.Add(1)
	defer o.inFlight.Add(-1)
	for {
		m := o.maxSeen.Load()
		if n <= m || o.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	o.calls.Add(1)
	if o.down.Load() {
		return apierrors.NewServiceUnavailable("down")
	}
	return nil
}

// downHarness is a harness whose server is down (every write fails with a
// 503) until o.down is cleared.
func downHarness(t *testing.T, opts sink.Options) (*harness, *outage) {
	t.Helper()
	o := &outage{}
	o.down.Store(true)
	h := newHarness(t, opts)
	h.sink.SetFault(o.fault)
	return h, o
}

// waitDown waits until the engine has seen the server down and has no
// write under way.
func (h *harness) waitDown() {
	h.t.Helper()
	h.until("server seen down", func(s sink.Stats) bool { return s.Server == sink.ServerProbing && s.InFlight == 0 })
}

// waitTimer waits until the dispatcher sleeps on the fake clock.
func (h *harness) waitTimer() {
	h.t.Helper()
	check.Eventually(h.t, "the engine to wait on its clock", func() error {
		return check.Errorf(h.clock.HasWaiters(), "no waiter on the fake clock; stats %+v", h.eng.Stats())
	})
}

// While the server is down the engine sends one probe at a time, after a
// backoff; the first success releases every waiting key at once.
func TestOutageOneProbeAtATimeThenReleaseAll(t *testing.T) {
	h, o := downHarness(t, sink.Options{Workers: 8, BaseDelay: time.Second, MaxDelay: 4 * time.Second})
	for i := range 50 {
		h.eng.Add(fmt.Sprint("k", i), event(fmt.Sprint("e", i), 1), nil)
	}
	h.waitDown()
	first := o.calls.Load() // the requests already under way when it went down
	if first > 8 {
		t.Fatalf("%d requests before the engine held back, want at most the workers", first)
	}
	for range 6 {
		before := o.calls.Load()
		h.waitTimer()
		h.clock.Step(4 * time.Second) // at least the longest backoff
		h.until("a probe", func(sink.Stats) bool { return o.calls.Load() == before+1 })
		h.until("the probe's failure", func(s sink.Stats) bool { return s.InFlight == 0 })
	}
	if got := o.maxSeen.Load(); got > 8 {
		t.Fatalf("max writes at once %d", got)
	}
	s := h.eng.Stats()
	if s.Probes != 6 || s.Created != 0 || s.HeldBack != 50 || s.OldestPending < 24*time.Second {
		t.Fatalf("after 6 probes: %+v", s)
	}
	o.down.Store(false)
	h.waitTimer()
	h.clock.Step(4 * time.Second)
	// No more clock steps: the probe's success releases everything.
	h.until("all released", func(s sink.Stats) bool { return s.Created == 50 })
	if s := h.eng.Stats(); s.Server != sink.ServerHealthy || s.Dropped.Total() != 0 || s.HeldBack != 0 || s.OldestPending != 0 {
		t.Fatalf("after recovery: %+v", s)
	}
}

// A Retry-After longer than MaxDelay is honoured only up to MaxDelay.
func TestRetryAfterCappedAtMaxDelay(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	h := newHarness(t, sink.Options{BaseDelay: time.Second, MaxDelay: 2 * time.Second})
	h.sink.SetFault(func(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
		if fail.Swap(false) {
			return apierrors.NewTooManyRequests("come back in an hour", 3600)
		}
		return nil
	})
	h.eng.Add("k", event("e", 1), nil)
	h.until("the 429", func(s sink.Stats) bool { return s.Retried == 1 && s.InFlight == 0 })
	h.waitTimer()
	h.clock.Step(3 * time.Second) // MaxDelay plus the most jitter (half of it)
	h.until("written", func(s sink.Stats) bool { return s.Created == 1 })
	if s := h.eng.Stats(); s.RateCuts != 1 {
		t.Fatalf("a 429 must cut the write rate: %+v", s)
	}
}

// A 429 cuts the adaptive rate; it grows back while writes wait for it.
func TestAdaptiveRateCutAndGrowth(t *testing.T) {
	var n atomic.Int32
	h := newHarness(t, sink.Options{QPS: 20, Burst: 20, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second})
	h.sink.SetFault(func(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
		if n.Add(1) == 11 {
			return apierrors.NewTooManyRequests("busy", 1)
		}
		return nil
	})
	for i := range 10 {
		h.eng.Add(fmt.Sprint("k", i), event(fmt.Sprint("e", i), 1), nil)
	}
	h.until("ten written", func(s sink.Stats) bool { return s.Created == 10 })
	if r := h.eng.Stats().WriteRate; r != 20 {
		t.Fatalf("rate before any 429: %v", r)
	}
	h.eng.Add("x", event("x", 1), nil)
	h.until("the 429", func(s sink.Stats) bool { return s.RateCuts == 1 && s.InFlight == 0 })
	cut := h.eng.Stats().WriteRate
	if cut >= 20 || cut < 0.5 {
		t.Fatalf("rate after a 429: %v", cut)
	}
	for i := range 40 {
		h.eng.Add(fmt.Sprint("m", i), event(fmt.Sprint("m", i), 1), nil)
	}
	h.stepUntil("all written", 200*time.Millisecond, func(s sink.Stats) bool { return s.Created == 51 })
	if r := h.eng.Stats().WriteRate; r <= cut {
		t.Fatalf("rate did not grow back while writes waited: %v <= %v", r, cut)
	}
}

// Keys are written oldest first, after the probe.
func TestOldestFirst(t *testing.T) {
	h, o := downHarness(t, sink.Options{Workers: 1, BaseDelay: time.Second, MaxDelay: time.Second})
	h.eng.Add("k0", event("e0", 1), nil)
	h.waitDown()
	for i := 1; i <= 5; i++ {
		h.clock.Step(time.Millisecond)
		h.eng.Add(fmt.Sprint("k", i), event(fmt.Sprint("e", i), 1), nil)
	}
	o.down.Store(false)
	h.waitTimer()
	h.clock.Step(2 * time.Second)
	h.until("written", func(s sink.Stats) bool { return s.Created == 6 })
	var order []string
	for _, c := range h.sink.History() {
		if c.Err == nil {
			order = append(order, c.Event.Name)
		}
	}
	// The probe is the oldest event that has not just failed (e1); then
	// the rest go oldest first.
	if got := fmt.Sprint(order); got != "[e1 e0 e2 e3 e4 e5]" {
		t.Fatalf("write order %v", got)
	}
}

// With DisableAdaptiveRate a 429 is still honoured (Retry-After), but the
// write rate stays at QPS.
func TestAdaptiveRateDisabled(t *testing.T) {
	var n atomic.Int32
	h := newHarness(t, sink.Options{QPS: 20, Burst: 20, DisableAdaptiveRate: true, MaxDelay: time.Second})
	h.sink.SetFault(func(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
		if n.Add(1) == 1 {
			return apierrors.NewTooManyRequests("busy", 1)
		}
		return nil
	})
	h.eng.Add("k", event("e", 1), nil)
	h.until("the 429", func(s sink.Stats) bool { return s.Retried == 1 && s.InFlight == 0 })
	if s := h.eng.Stats(); s.RateCuts != 0 || s.WriteRate != 20 {
		t.Fatalf("rate changed with the adaptive rate off: %+v", s)
	}
	h.stepUntil("written", 500*time.Millisecond, func(s sink.Stats) bool { return s.Created == 1 })
}

package sink_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// quiet waits until the engine has nothing under way and, if writes wait,
// its dispatcher sleeps on the fake clock: a step of the clock then finds
// it asleep (rarely it re-arms its timer just after a step, one step late).
func (h *harness) quiet() {
	h.t.Helper()
	h.until("the engine at rest", func(s sink.Stats) bool {
		return s.InFlight == 0 && (s.Pending == 0 || h.clock.HasWaiters())
	})
}

// writes returns the successful writes the sink saw, in order.
func (h *harness) writes() []sinktest.Call {
	var out []sinktest.Call
	for _, c := range h.sink.History() {
		if c.Err == nil {
			out = append(out, c)
		}
	}
	return out
}

// A hot series (one event repeated every 100 ms for 10 s) with a
// KeyInterval of 2 s is written about once per interval, and the last write
// carries its final state.
func TestKeyIntervalHotSeries(t *testing.T) {
	h := newHarness(t, sink.WithKeyInterval(sink.Options{}, 2*time.Second))
	var mu sync.Mutex
	var at []time.Time // when each write reached the sink
	h.sink.SetFault(func(context.Context, sinktest.Op, *v1.Event) error {
		mu.Lock()
		defer mu.Unlock()
		at = append(at, h.clock.Now())
		return nil
	})
	const n = 100
	for i := int32(1); i <= n; i++ {
		var patch []byte
		if i > 1 {
			patch = patchFor(i)
		}
		h.eng.Add("k", event("e", i), patch)
		h.quiet()
		h.clock.Step(100 * time.Millisecond)
		h.quiet()
	}
	// 10 s of fake time: writes at 0, 2, 4, 6, 8 and 10 s (one of them may
	// be a step late); never two within 2 s.
	w := h.writes()
	if len(w) < 5 || len(w) > 6 {
		t.Fatalf("%d writes in 10 s with a 2 s interval, want 5 or 6: %+v", len(w), h.eng.Stats())
	}
	mu.Lock()
	for i := 1; i < len(at); i++ {
		if d := at[i].Sub(at[i-1]); d < 2*time.Second {
			t.Errorf("writes %d and %d %v apart, within the interval", i-1, i, d)
		}
	}
	mu.Unlock()
	h.flush()
	w = h.writes()
	if last := w[len(w)-1]; last.Event.Count != n || last.Event.Message != fmt.Sprint("msg ", n) {
		t.Fatalf("last write carries count %d %q, want the final state", last.Event.Count, last.Event.Message)
	}
	if got, _ := h.sink.Get("ns", "e"); got == nil || got.Count != n {
		t.Fatalf("stored %+v", got)
	}
	s := h.eng.Stats()
	if s.Created != 1 || s.Created+s.Patched != int64(len(w)) || s.Created+s.Patched+s.Coalesced != n || s.Pending != 0 {
		t.Fatalf("stats %+v, %d writes", s, len(w))
	}
}

// A key waiting for its interval is pending but not held back, and a
// Flush writes it at once, without waiting out the interval.
func TestKeyIntervalFlushDoesNotWait(t *testing.T) {
	h := newHarness(t, sink.WithKeyInterval(sink.Options{}, time.Hour))
	h.eng.Add("k", event("e", 1), nil)
	h.until("first write", func(s sink.Stats) bool { return s.Created == 1 && s.InFlight == 0 })
	h.clock.Step(time.Second)
	h.eng.Add("k", event("e", 2), patchFor(2))
	h.eng.Add("k", event("e", 3), patchFor(3))
	h.eng.Add("other", event("o", 1), nil) // another key: not delayed
	h.until("other key written", func(s sink.Stats) bool { return s.Created == 2 && s.InFlight == 0 })
	h.clock.Step(time.Second)
	s := h.eng.Stats()
	if s.Pending != 2 || s.HeldBack != 0 || s.Patched != 0 || s.OldestPending != time.Second {
		t.Fatalf("while the key waits for its interval: %+v", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.eng.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v; stats %+v", err, h.eng.Stats())
	}
	if now := h.clock.Now(); !now.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("clock moved to %v", now)
	}
	if got, _ := h.sink.Get("ns", "e"); got == nil || got.Count != 3 {
		t.Fatalf("stored %+v", got)
	}
	if s := h.eng.Stats(); s.Patched != 1 || s.Coalesced != 1 || s.Pending != 0 {
		t.Fatalf("after Flush: %+v", s)
	}
}

// A Flush registered while a key's write is under way, with a newer state
// queued behind it, does not wait out the interval that write starts.
func TestKeyIntervalFlushDuringWrite(t *testing.T) {
	h := newHarness(t, sink.WithKeyInterval(sink.Options{}, time.Hour))
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	h.sink.SetFault(func(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
		if ev.Count == 1 {
			entered <- struct{}{}
			<-release
		}
		return nil
	})
	h.eng.Add("k", event("e", 1), nil)
	<-entered
	h.eng.Add("k", event("e", 2), patchFor(2))
	done, forget := h.eng.Wait()
	defer forget()
	close(release)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("Flush waited for the key's interval; stats %+v", h.eng.Stats())
	}
	if got, _ := h.sink.Get("ns", "e"); got == nil || got.Count != 2 {
		t.Fatalf("stored %+v", got)
	}
}

// KeyInterval zero (the default) or negative: a key's next write follows
// its previous one at once, and nothing is remembered after it.
func TestKeyIntervalZeroWritesAtOnce(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		t.Run(fmt.Sprint(d), func(t *testing.T) {
			h := newHarness(t, sink.WithKeyInterval(sink.Options{}, d))
			h.eng.Add("k", event("e", 1), nil)
			h.until("first write", func(s sink.Stats) bool { return s.Created == 1 && s.InFlight == 0 })
			h.eng.Add("k", event("e", 2), patchFor(2))
			// No clock step: the second write follows at once.
			h.until("second write", func(s sink.Stats) bool { return s.Patched == 1 && s.InFlight == 0 })
			h.until("no entry left", func(sink.Stats) bool { return sink.EntriesForTest(h.eng) == 0 })
		})
	}
}

// Keys written once are remembered for their interval only: once it has
// passed and the dispatcher ran, the engine holds no entry.
func TestKeyIntervalForgetsWrittenKeys(t *testing.T) {
	h := newHarness(t, sink.WithKeyInterval(sink.Options{Workers: 8}, 2*time.Second))
	const n = 1000
	for i := range n {
		h.eng.Add(fmt.Sprint("k", i), event(fmt.Sprint("e", i), 1), nil)
	}
	h.flush()
	if got := sink.EntriesForTest(h.eng); got != n {
		t.Fatalf("%d entries within the interval, want %d", got, n)
	}
	h.stepUntil("entries released", time.Second, func(sink.Stats) bool { return sink.EntriesForTest(h.eng) == 0 })
	if s := h.eng.Stats(); s.Created != n || s.Pending != 0 || s.InFlight != 0 {
		t.Fatalf("stats %+v", s)
	}
}

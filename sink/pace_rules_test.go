package sink

import (
	"testing"
	"time"
)

// A refunded token never lifts the bucket past the burst: a write that
// failed after the bucket had refilled gives its token back to a full
// bucket, and no more than Burst writes then go at once.
func TestPacerRefundNeverPassesTheBurst(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var p pacer
	p.init(10, 5, defaultWorkers, true, t0)
	if p.take(t0) != 0 {
		t.Fatal("no token at the start")
	}
	later := t0.Add(time.Second)
	p.advance(later) // refilled to the burst meanwhile
	p.refund()       // the write taken at t0 failed (not a 429)
	n := 0
	for p.take(later) == 0 {
		n++
		if n > 10 {
			break
		}
	}
	if n != 5 {
		t.Fatalf("%d writes at once after the refund, want the burst of 5", n)
	}
}

// An engine idle for less than a round after a disturbance restarts at its
// rate halved per idle second, but never below restartRate: an engine
// already slower than that keeps its rate.
func TestPacerShortIdleNeverRestartsBelowRestartRate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var p pacer
	p.init(50, 100, defaultWorkers, true, t0)
	p.failed(t0) // disturbed: the restart after idle is gentle
	p.rate, p.tokens, p.thresh = 1.5, 1, 1.5
	now := t0.Add(2 * time.Second)
	p.restartAfterIdle(now, 500*time.Millisecond, 0)
	if p.rate != 1.5 {
		t.Fatalf("rate %v after half a second idle at 1.5 writes/s, want it kept (the floor is restartRate, %v)", p.rate, restartRate)
	}
	// Above restartRate, halved per idle second.
	var q pacer
	q.init(50, 100, defaultWorkers, true, t0)
	q.failed(t0)
	q.rate, q.tokens = 16, 8
	q.restartAfterIdle(now, 500*time.Millisecond, 0)
	if want := 16 / 1.4142135623730951; q.rate < want-1e-9 || q.rate > want+1e-9 {
		t.Fatalf("rate %v after half a second idle at 16 writes/s, want %v", q.rate, want)
	}
}

// The delay signal trims the rate at most once a round: half a round after
// a trim, with the queue still there and the engine's share fallen (its
// writes slowed), the rate stays where the trim put it.
func TestPacerTrimsAtMostOnceARound(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p, write := latencyPacer(t0, 10*time.Millisecond)
	at := t0.Add(10 * time.Second)
	p.refusedAt = at // a 429 lately: the queue is read by its level
	for i := 0; i < 150 && p.trims == 0; i++ {
		at = write(at, 20*time.Millisecond, constant(50*time.Millisecond))
	}
	if p.trims != 1 {
		t.Fatalf("%d trims, want one", p.trims)
	}
	rate := p.current(at)
	later := at.Add(round / 2)
	p.success(later)
	p.latency(later, later.Add(-50*time.Millisecond))
	if p.trims != 1 || p.current(later) < rate {
		t.Fatalf("half a round after a trim to %v: %d trims, rate %v; want no second trim", rate, p.trims, p.current(later))
	}
}

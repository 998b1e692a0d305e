package sink

import (
	"testing"
	"time"
)

// Reading the rate (Stats) does not change the pacer: a pacer read every
// few milliseconds paces exactly like one that is never read.
func TestPacerReadDoesNotChangeIt(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var read, quiet pacer
	read.init(20, 20, true, t0)
	quiet.init(20, 20, true, t0)
	for _, p := range []*pacer{&read, &quiet} {
		p.success(t0)
		p.overload(t0, t0) // cut: the rate now grows while writes wait
	}
	for ms := 0; ms < 20000; ms += 7 {
		now := t0.Add(time.Duration(ms) * time.Millisecond)
		read.current(now.Add(-3 * time.Millisecond)) // an observer in between
		a, b := read.take(now), quiet.take(now)
		if a != b || read.rate != quiet.rate || read.tokens != quiet.tokens {
			t.Fatalf("at %d ms: read pacer waits %v rate %v tokens %v, unread %v %v %v", ms, a, read.rate, read.tokens, b, quiet.rate, quiet.tokens)
		}
	}
}

// Back from an outage the engine keeps its rate and burst (a lone engine
// drains at once), but for returnFor its window grows by one per
// windowStep, and the first 429 cuts to restartRate·weight with an empty
// bucket; a 429 after returnFor is an ordinary cut.
func TestPacerReturnFromOutage(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var p pacer
	p.init(50, 100, true, t0)
	p.weight = 1.5
	p.failed(t0)
	p.pause(t0)
	back := t0.Add(5 * time.Second)
	p.resume(back)
	if r := p.current(back); r != 50 || p.take(back) != 0 || p.tokens < 98 {
		t.Fatalf("back from the outage: rate %v tokens %v, want the configured 50 and burst", r, p.tokens)
	}
	if p.mayGrowWindow(back.Add(time.Millisecond)) {
		t.Fatal("the window grew at once after the return")
	}
	if !p.mayGrowWindow(back.Add(windowStep)) || p.mayGrowWindow(back.Add(windowStep+time.Millisecond)) {
		t.Fatal("the window does not grow by one per windowStep after the return")
	}
	late := back.Add(returnFor)
	first := p.mayGrowWindow(late)
	second := p.mayGrowWindow(late) // at once again: no step after returnFor
	if !first || !second {
		t.Fatal("the window still grows slowly after returnFor")
	}
	for i := range 10 {
		p.success(back.Add(time.Duration(i) * time.Millisecond))
	}
	at := back.Add(20 * time.Millisecond)
	p.shed(at, at, time.Second)
	if r := p.current(at); r != restartRate*1.5 || p.cuts != 1 {
		t.Fatalf("first 429 after the return: rate %v, %d cuts, want %v", r, p.cuts, restartRate*1.5)
	}
	if wait := p.take(at); wait < 300*time.Millisecond {
		t.Fatalf("the first write after that 429 waits %v, want a whole interval at %v writes/s", wait, restartRate*1.5)
	}

	// The same 429 long after the return is an ordinary cut.
	var q pacer
	q.init(50, 100, true, t0)
	q.weight = 1.5
	q.failed(t0)
	q.pause(t0)
	q.resume(back)
	later := back.Add(returnFor + time.Second)
	for i := range 20 {
		q.success(later.Add(time.Duration(i-20) * 50 * time.Millisecond))
	}
	q.shed(later, later, time.Second)
	if r := q.current(later); r <= restartRate*1.5 || r >= 50 {
		t.Fatalf("a 429 after returnFor: rate %v, want the usual cut to about 0.7 of the success rate", r)
	}
}

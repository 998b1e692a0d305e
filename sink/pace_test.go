package sink

import (
	"math"
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

// A 429 cuts engines that sent alike to the same rate, however many of
// their requests happened to be refused: which requests of a fleet meet a
// full server is chance, and an engine cut by its successes alone would be
// cut deeper the unluckier it was, and drain last.
func TestPacerCutBySentRateNotLuck(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cut := func(accepted int) float64 {
		var p pacer
		p.init(50, 100, true, t0)
		// 20 requests in the last second, accepted of them succeeded.
		for i := range 20 {
			at := t0.Add(time.Duration(i) * 50 * time.Millisecond)
			if p.take(at) != 0 {
				t.Fatalf("request %d held back", i)
			}
			if i < accepted {
				p.success(at)
			}
		}
		at := t0.Add(time.Second)
		p.shed(at, at, time.Second)
		return p.current(at)
	}
	lucky, unlucky := cut(14), cut(4)
	if lucky != unlucky {
		t.Errorf("after the same 20 requests, the engine that had 14 accepted is cut to %.2f writes/s, the one that had 4 to %.2f", lucky, unlucky)
	}
	// The share is what the engine sent, discounted: not above what it
	// sent, and the cut below it.
	if want := aimdCut * sentShare * 20 * (1 - math.Exp(-1)) * 1.2; unlucky > want || unlucky < minRate {
		t.Errorf("cut to %.2f writes/s after 20 requests in a second, want at most %.2f", unlucky, want)
	}
	// An engine whose successes are more than its discounted requests is
	// cut by its successes.
	if all := cut(20); all <= lucky {
		t.Errorf("the engine with every request accepted is cut to %.2f, below %.2f", all, lucky)
	}
}

// The additive growth goes as weight^1.5, so that under AIMD (shares as the
// square root of the growth) an engine's share goes about as weight^0.75.
func TestPacerGrowthByWeight(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	gain := func(w float64) float64 {
		var p pacer
		p.init(50, 100, true, t0)
		p.weight = w
		p.rate, p.tokens = 0.01, 0 // a rate so low that the proportional term is nothing, the bucket empty
		at := t0.Add(100 * time.Millisecond)
		p.advance(at)
		return p.rate - 0.01
	}
	one, more := gain(1), gain(2.25)
	if r := more / one; r < 3.3 || r > 3.45 {
		t.Errorf("growth at weight 2.25 is %.2f times that at weight 1, want about 2.25^1.5 = 3.375", r)
	}
}

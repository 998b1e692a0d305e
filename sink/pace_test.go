package sink

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// Reading the rate (Stats) does not change the pacer: a pacer read every
// few milliseconds paces exactly like one that is never read.
func TestPacerReadDoesNotChangeIt(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var read, quiet pacer
	read.init(20, 20, defaultWorkers, true, t0)
	quiet.init(20, 20, defaultWorkers, true, t0)
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
	p.init(50, 100, defaultWorkers, true, t0)
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
	q.init(50, 100, defaultWorkers, true, t0)
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
		p.init(50, 100, defaultWorkers, true, t0)
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
		p.init(50, 100, defaultWorkers, true, t0)
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

// latencyPacer is a pacer at the defaults (50/s, burst 100, 4 workers)
// that has written at its full rate for 10 s into a server answering in
// usual, one write every 20 ms, its rate back at the configured 50/s;
// write(d, rtt) records d more seconds of writes answered in rtt each, and
// returns the time after them.
func latencyPacer(t0 time.Time, usual time.Duration) (*pacer, func(from time.Time, d time.Duration, rtt func(i int) time.Duration) time.Time) {
	p := &pacer{}
	p.init(50, 100, defaultWorkers, true, t0)
	write := func(from time.Time, d time.Duration, rtt func(i int) time.Duration) time.Time {
		now := from
		for i := 0; now.Sub(from) < d; i++ {
			now = now.Add(20 * time.Millisecond)
			p.take(now)
			p.success(now)
			p.latency(now, now.Add(-rtt(i)))
		}
		return now
	}
	write(t0, 10*time.Second, func(int) time.Duration { return usual })
	return p, write
}

func constant(d time.Duration) func(int) time.Duration { return func(int) time.Duration { return d } }

// A server whose latency stays flat, or jitters about it, leaves the rate
// where it is: no trim.
func TestPacerFlatLatencyKeepsTheRate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for seed := uint64(1); seed <= 5; seed++ {
		p, write := latencyPacer(t0, 10*time.Millisecond)
		// 2 ms plus up to 20 ms at random (the simulation's jitter).
		rnd := rand.New(rand.NewPCG(seed, 2))
		jitter := func(int) time.Duration {
			return 2*time.Millisecond + time.Duration(rnd.Int64N(int64(20*time.Millisecond)))
		}
		now := write(t0.Add(10*time.Second), 60*time.Second, jitter)
		if p.trims != 0 || p.current(now) != 50 {
			t.Fatalf("seed %d: %d trims, rate %v, want none at the configured 50/s", seed, p.trims, p.current(now))
		}
	}
}

// Latency growth slows the engine before any 429. Until the server has
// refused a write, a queue is read by its growth: a queue past tolerance
// (4 with 4 workers) times the usual round trip that grew by g seconds
// per second over the last round trims the rate, once a round, to the
// share times (1-g)/(1+g), no deeper than a cut: the fleet then offers
// what the server serves, less the last round's growth. The trim is not
// a cut.
func TestPacerLatencyGrowthTrimsBeforeA429(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p, write := latencyPacer(t0, 10*time.Millisecond)
	at := t0.Add(10 * time.Second)
	// Round trips of 4 times the usual: the engine's own four workers
	// could wait that long for each other at a server with one seat.
	at = write(at, 5*time.Second, constant(40*time.Millisecond))
	if p.trims != 0 {
		t.Fatalf("trimmed at 4 times the usual round trip (the engine's own workers)")
	}
	// Then the queue grows by 100 ms a second. Once the writes of the
	// last two rounds all waited past the tolerance, the rate is trimmed.
	from := at
	growing := func(int) time.Duration { return 40*time.Millisecond + at.Sub(from)/10 }
	var trimmedAt time.Time
	for i := 0; i < 300 && p.trims == 0; i++ {
		at = write(at, 20*time.Millisecond, growing)
		trimmedAt = at
	}
	if p.trims != 1 || p.cuts != 0 {
		t.Fatalf("%d trims and %d cuts, want one trim and no cut", p.trims, p.cuts)
	}
	// The signal passes 40 ms (4 · 10) at once and is the least of the
	// last two rounds.
	if d := trimmedAt.Sub(from); d > 3*round {
		t.Errorf("trimmed %v after the queue began to grow, want within three rounds", d)
	}
	// The share is the 50 writes/s the engine got through; the signal
	// grew about 0.1 s a second, 0.09 past the usual round trip a round:
	// 50 · 0.91/1.09, about 42.
	if r := p.current(trimmedAt); r < 39 || r > 43 {
		t.Fatalf("rate %v after the trim, want 50·(1-g)/(1+g), 39 to 43", r)
	}
	// No second trim within the round, however long the waits.
	write(trimmedAt, 900*time.Millisecond, constant(time.Second))
	if p.trims != 1 {
		t.Fatalf("%d trims within a round, want 1", p.trims)
	}
}

// A queue that stands is the server busy, not overloaded, until the
// server refuses: 25 controllers with one write under way each keep a
// seat with a queue of 40 busy and never fill it. Before any 429, a queue
// that appears and then stands at ten times the usual round trip trims
// once at most, by the growth of its round (about 0.09 s a second, less
// the usual round trip a round, to 0.85 of the share), and the rate grows
// back to the configured 50/s while the queue stands.
func TestPacerStandingQueueDoesNotTrim(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p, write := latencyPacer(t0, 10*time.Millisecond)
	at := write(t0.Add(10*time.Second), 30*time.Second, constant(100*time.Millisecond))
	if p.trims > 1 || p.cuts != 0 {
		t.Fatalf("%d trims and %d cuts under a queue that stands, want at most one trim and no cut", p.trims, p.cuts)
	}
	if r := p.current(at); r != 50 {
		t.Fatalf("rate %v after 30 s of a queue that stands, want the configured 50", r)
	}
}

// The growth of a queue is read beyond one usual round trip a round: less
// is what the least round trip of a round does with the jitter of a loaded
// machine alone, and a fleet feeding a queue that slowly (at 1.01 times
// what it is served, with a usual round trip of 10 ms) would take minutes
// to fill even a queue of a second. Round trips that stand past the
// tolerance and then grow by 5 ms a second for 15 s trim nothing more; by
// 50 ms a second, they trim.
func TestPacerQueueGrowthWithinARoundTripIsNotRead(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		perSecond time.Duration // growth of the round trip a second
		trims     bool
	}{
		{5 * time.Millisecond, false},
		{50 * time.Millisecond, true},
	} {
		p := &pacer{}
		p.init(50, 100, defaultWorkers, true, t0)
		at, _ := paced(p, t0, 10*time.Second, 20*time.Millisecond, flat(10*time.Millisecond))
		// The queue forms (one trim at most, for its growth within the
		// round) and stands for 2 s; then it grows for 15 s.
		at, _ = paced(p, at, 2*time.Second, 20*time.Millisecond, flat(45*time.Millisecond))
		before := p.trims
		paced(p, at, 15*time.Second, 20*time.Millisecond, growing(at, 45*time.Millisecond, tc.perSecond))
		if got := p.trims > before; got != tc.trims || p.cuts != 0 {
			t.Fatalf("round trips growing %v a second: %d trims and %d cuts, want trims %v and no cut", tc.perSecond, p.trims-before, p.cuts, tc.trims)
		}
	}
}

// A trim is a warning, not a loss: once the queue stops growing (before
// any 429) or is gone (after one), the rate goes back to where it was
// before the trims within a round or two, instead of growing back at the
// additive pace. An engine writing 10/s whose round trips jump for a
// moment (a queue that forms and stands, or the jitter of a loaded
// machine) is trimmed below 10/s; when its demand then rises to 40/s, it
// writes at 40/s within 3 s (at the additive pace it would take about 10).
func TestPacerTrimIsUndoneWhenTheQueueStopsGrowing(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &pacer{}
	p.init(50, 100, defaultWorkers, true, t0)
	at, _ := paced(p, t0, 10*time.Second, 100*time.Millisecond, flat(10*time.Millisecond))
	// The queue grows by 0.1 s a second for two seconds, then stands.
	at, _ = paced(p, at, 10*time.Second, 100*time.Millisecond, queueGrowing(at, 2*time.Second))
	if p.trims == 0 {
		t.Fatalf("no trim for a queue that grew 0.2 s in two seconds")
	}
	// Demand rises to 40/s; the queue has gone.
	_, sent := paced(p, at, 3*time.Second, 25*time.Millisecond, flat(10*time.Millisecond))
	if r := p.current(at.Add(3 * time.Second)); r < 40 {
		t.Fatalf("rate %.1f/s 3 s after the demand rose to 40/s, want at least 40: the trim is undone", r)
	}
	if sent < 100 {
		t.Fatalf("%d writes in the 3 s after the demand rose to 40/s, want at least 100", sent)
	}
}

// With no write limit the rate before a trim is no limit: once the queue
// stops growing the trim is undone up to the workers' reach (what they
// send at the usual round trip), and the rate is no limit again, never
// NaN (the distance from no limit is not a number).
func TestPacerTrimIsUndoneWithNoWriteLimit(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &pacer{}
	p.init(0, 100, defaultWorkers, true, t0)
	now, _ := paced(p, t0, 5*time.Second, 10*time.Millisecond, flat(10*time.Millisecond))
	if !math.IsInf(p.rate, 1) {
		t.Fatalf("rate %v with no limit and a flat round trip, want no limit", p.rate)
	}
	now, _ = paced(p, now, 3*time.Second, 10*time.Millisecond, queueGrowing(now, 2*time.Second))
	if p.trims == 0 || math.IsInf(p.rate, 1) {
		t.Fatalf("%d trims, rate %v, for a queue that grew 0.2 s in two seconds: want a trim to a limit", p.trims, p.rate)
	}
	now, _ = paced(p, now, 20*time.Second, time.Millisecond, flat(10*time.Millisecond))
	if r := p.current(now); math.IsNaN(r) || !math.IsInf(r, 1) {
		t.Fatalf("rate %v 20 s after the queue went, want no limit again", r)
	}
}

// paced offers p a write every every for d from from, each answered in
// rtt of its time, and returns the time after them and how many p let
// through.
func paced(p *pacer, from time.Time, d, every time.Duration, rtt func(at time.Time) time.Duration) (time.Time, int) {
	now, sent := from, 0
	for now.Sub(from) < d {
		now = now.Add(every)
		if p.take(now) == 0 {
			sent++
			p.success(now)
			p.latency(now, now.Add(-rtt(now)))
		}
	}
	return now, sent
}

func flat(d time.Duration) func(time.Time) time.Duration {
	return func(time.Time) time.Duration { return d }
}

// queueGrowing is a round trip of 40 ms (4 times a usual 10 ms) that grows
// by 0.1 s a second from from, for upTo, then stands.
func queueGrowing(from time.Time, upTo time.Duration) func(time.Time) time.Duration {
	return func(at time.Time) time.Duration { return 40*time.Millisecond + min(at.Sub(from), upTo)/10 }
}

// growing is a round trip of rtt at from that grows by perSecond a second.
func growing(from time.Time, rtt, perSecond time.Duration) func(time.Time) time.Duration {
	return func(at time.Time) time.Duration {
		return rtt + time.Duration(float64(perSecond)*at.Sub(from).Seconds())
	}
}

// Once the server has refused a write (a 429 within disturbMemory), its
// queue overflows: the signal is read by its level, as Gradient2 reads
// it. A queue a little past the tolerance trims a little: waits of 50 ms
// against a usual round trip of 10 ms trim the 50 writes/s the engine got
// through to about 50 · 4 · 10/50, 40; waits of 100 ms trim it to a cut's
// depth, 0.6 · 50, no deeper. A 429 more than disturbMemory ago is
// forgotten: the same waits of 50 ms are read by their growth (from 10 ms
// to 50 ms within the round, 0.04 s a second, less the usual round trip a
// round: 0.03), and trim to about 50 · 0.97/1.03, 47.
func TestPacerTrimFollowsTheQueueAfterA429(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		wait     time.Duration
		refused  time.Duration // the 429, this long before the waits begin
		min, max float64
	}{
		{50 * time.Millisecond, 0, 38, 45},
		{100 * time.Millisecond, 0, aimdCut*50 - 1, aimdCut*50 + 1},
		{50 * time.Millisecond, disturbMemory + round, 46, 48},
	} {
		p, write := latencyPacer(t0, 10*time.Millisecond)
		at := t0.Add(10 * time.Second)
		p.refusedAt = at.Add(-tc.refused) // as shed and overload record a 429
		for i := 0; i < 150 && p.trims == 0; i++ {
			at = write(at, 20*time.Millisecond, constant(tc.wait))
		}
		if p.trims != 1 || p.cuts != 0 {
			t.Fatalf("waits of %v, a 429 %v before: %d trims and %d cuts, want one trim and no cut", tc.wait, tc.refused, p.trims, p.cuts)
		}
		if r := p.current(at); r < tc.min || r > tc.max {
			t.Fatalf("waits of %v, a 429 %v before: rate %v after the trim, want %v to %v", tc.wait, tc.refused, r, tc.min, tc.max)
		}
	}
}

// One slow write among quick ones (a webhook slow in one namespace, a
// pause of the network) is not the server's queue: the signal is the least
// round trip of the last writes, as many as the workers.
func TestPacerOneSlowWriteIsNotAQueue(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p, write := latencyPacer(t0, 10*time.Millisecond)
	// Every second write waits 2 s (its namespace's webhook), the others
	// are as quick as ever.
	write(t0.Add(10*time.Second), 30*time.Second, func(i int) time.Duration {
		if i%2 == 0 {
			return 2 * time.Second
		}
		return 10 * time.Millisecond
	})
	if p.trims != 0 {
		t.Fatalf("%d trims for writes slow in one namespace, want none", p.trims)
	}
}

// The usual round trip follows a lasting rise within about a minute (a
// server that is slower for good is not loaded for good), and an engine
// with the adaptive rate off never trims.
func TestPacerUsualFollowsALastingRise(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p, write := latencyPacer(t0, 10*time.Millisecond)
	at := write(t0.Add(10*time.Second), 5*time.Minute, constant(100*time.Millisecond))
	trims := p.trims
	write(at, time.Minute, constant(100*time.Millisecond))
	if trims == 0 || p.trims != trims {
		t.Fatalf("%d trims in the first 5 minutes of a lasting rise, %d more in the next, want some and then none", trims, p.trims-trims)
	}
	var off pacer
	off.init(50, 100, defaultWorkers, false, t0)
	for i := range 1000 {
		now := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		off.latency(now, now.Add(-time.Duration(i)*time.Millisecond))
	}
	if off.trims != 0 || off.current(t0.Add(10*time.Second)) != 50 {
		t.Fatalf("the adaptive rate off trimmed: %d trims", off.trims)
	}
}

// A clock set back (a fake clock in a user's test) moves neither the
// usual round trip nor the signal's rounds.
func TestQueueingClockSetBack(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	q := queueing{need: 1}
	q.observe(t0, 0.010)
	_, before, grew, _ := q.observe(t0.Add(3*time.Second), 0.050)
	least, usual, grow, ok := q.observe(t0.Add(3*time.Second-time.Hour), 1.0)
	if !ok || usual != before || least != 0.050 || grow != grew {
		t.Fatalf("signal %v, usual %v, growth %v after a round trip answered an hour before the last, want 0.050, %v and %v", least, usual, grow, before, grew)
	}
}

// A clock set back (a fake clock in a user's test) does not stall the
// bucket until it passes the time it was set back from: the tokens refill
// from the new time, as x/time/rate's do.
func TestPacerClockSetBack(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var p pacer
	p.init(10, 1, defaultWorkers, true, t0)
	if p.take(t0) != 0 {
		t.Fatal("the burst's token was not there")
	}
	back := t0.Add(-time.Hour)
	if w := p.take(back); w <= 0 || w > 100*time.Millisecond {
		t.Fatalf("an empty bucket at 10 writes/s waits %v for its next token, want at most 100ms", w)
	}
	if w := p.take(back.Add(100 * time.Millisecond)); w != 0 {
		t.Fatalf("100 ms after the clock was set back an hour, at 10 writes/s, the next token is %v away", w)
	}
}

// A QPS so small that the next token is centuries away waits the longest
// duration, not a negative one (the float overflows the conversion) that
// take would turn into a millisecond: the dispatcher must not wake every
// millisecond for a token that never comes.
func TestPacerTinyRateWaitsLong(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, qps := range []float64{1e-9, 1e-12, math.SmallestNonzeroFloat64} {
		var p pacer
		p.init(qps, 1, defaultWorkers, true, t0)
		p.take(t0)
		want := time.Duration(math.Min(1/qps, float64(math.MaxInt64)/1e9) * 1e9 * 0.999)
		if w := p.take(t0); w < want {
			t.Errorf("QPS %g: the next token is %v away, want at least %v", qps, w, want)
		}
	}
}

// With no write limit, a rate cut by a 429 grows back while it holds the
// writes back, and is no limit again once it passes what the workers can
// send at the usual round trip (4 workers, 2 ms: 2,000 writes/s), not
// before; and not within disturbMemory of the 429 (a refusal comes back at
// once, so the workers would not hold back the refused writes), though
// the rate grows past the reach meanwhile.
func TestPacerUnlimitedAgainPastTheWorkersReach(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const rtt = 2 * time.Millisecond
	reach := float64(defaultWorkers) / rtt.Seconds()
	for _, tc := range []struct {
		name string
		idle time.Duration // after the cut, before the writes resume
	}{
		{"writing-on", 0},
		{"after-disturbMemory", disturbMemory + time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p pacer
			p.init(0, 100, defaultWorkers, true, t0)
			write := func(now time.Time) {
				p.success(now)
				p.latency(now, now.Add(-rtt))
			}
			for i := range 50 {
				write(t0.Add(time.Duration(i) * time.Millisecond))
			}
			cut := t0.Add(time.Second)
			p.shed(cut, cut, time.Second)
			if math.IsInf(p.rate, 1) || p.rate >= reach {
				t.Fatalf("after a 429: rate %v, want a limit below %v", p.rate, reach)
			}
			var most float64
			for ms := 1; ms <= 200_000; ms++ {
				now := cut.Add(tc.idle + time.Duration(ms)*time.Millisecond)
				for p.take(now) == 0 && !math.IsInf(p.rate, 1) {
					write(now)
				}
				if math.IsInf(p.rate, 1) {
					switch {
					case now.Sub(cut) <= disturbMemory:
						t.Fatalf("no limit again %v after a 429 (rate %.0f), want a limit for %v", now.Sub(cut), most, disturbMemory)
					case tc.idle == 0 && most <= reach:
						t.Fatalf("no limit again at %v with the rate at %.0f: it never passed the reach (%.0f) while the 429 held it", now.Sub(cut), most, reach)
					case tc.idle > 0 && (most < 0.9*reach || most > reach):
						t.Fatalf("no limit again at %v after the cut with the rate at %.0f, want it unlimited once past %.0f", now.Sub(cut), most, reach)
					}
					t.Logf("no limit again %v after the cut, the rate at %.0f", now.Sub(cut), most)
					return
				}
				most = math.Max(most, p.rate)
			}
			t.Fatalf("the rate is still a limit (%.0f) 200 s after the writes resumed", p.rate)
		})
	}
}

// The share of requests the server shed is read over about disturbMemory:
// past 1 - aimdCut it is over, older answers fade, and nothing is counted
// while the engine is paused or within returnFor of the return from an
// outage (where a fleet meets about one 429 per engine by design).
func TestPacerShedTally(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var p pacer
	p.init(50, 100, defaultWorkers, true, t0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for i := range 10 {
		p.count(ms(i), false)
	}
	for i := range 6 {
		p.count(ms(10+i), true)
	}
	if p.overShed() {
		t.Fatalf("6 of 16 shed (0.375): over 1 - aimdCut (%+v)", p.tally)
	}
	p.count(ms(16), true)
	if !p.overShed() {
		t.Fatalf("7 of 17 shed (0.41): not over 1 - aimdCut (%+v)", p.tally)
	}
	// Paused, then back from an outage: nothing counted until returnFor
	// has passed.
	p.failed(ms(20))
	p.pause(ms(20))
	for i := range 50 {
		p.count(ms(30+i), false)
	}
	back := t0.Add(time.Minute)
	p.resume(back)
	for i := range 50 {
		p.count(back.Add(time.Duration(i)*returnFor/50), false)
	}
	if !p.overShed() || p.tally.stored > 10.01 {
		t.Fatalf("writes counted while paused or returning: %+v", p.tally)
	}
	// Two memories of stored writes later, the old sheds have faded.
	for s := range 120 {
		p.count(back.Add(returnFor+time.Duration(s)*time.Second), false)
	}
	if p.overShed() || p.tally.shed > 7*math.Exp(-2)*1.01 {
		t.Fatalf("the sheds of two minutes ago have not faded: %+v", p.tally)
	}
	// A pause does not fade them (it is no evidence of a lower share).
	var q pacer
	q.init(50, 100, defaultWorkers, true, t0)
	for i := range 10 {
		q.count(ms(i), i < 5)
	}
	q.pause(ms(10))
	q.resume(ms(10).Add(10 * time.Minute))
	q.count(ms(10).Add(10*time.Minute), false)
	if q.tally.shed < 4.99 || q.tally.stored < 5.99 { // 10 ms of fading, not 10 minutes
		t.Fatalf("a pause faded the tally: %+v", q.tally)
	}
}

// A 429 cuts the rate once per round: a second 429 within the Retry-After
// (at least a second) of the cut, or for a request sent before the cut,
// tells of the same overload and does not cut again; a 429 for a request
// sent after the cut, past the Retry-After, does.
func TestPacerCutOncePerRound(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var p pacer
	p.init(50, 100, defaultWorkers, true, t0)
	sent := func(from time.Time, n int) {
		for i := range n {
			at := from.Add(time.Duration(i) * 20 * time.Millisecond)
			p.take(at)
			p.success(at)
		}
	}
	sent(t0, 50)
	cutAt := t0.Add(time.Second)
	p.shed(cutAt, cutAt.Add(-10*time.Millisecond), 1500*time.Millisecond)
	first := p.current(cutAt)
	if first >= 50 {
		t.Fatalf("the first 429 did not cut: %.2f writes/s", first)
	}
	for _, c := range []struct {
		what         string
		at, sentAt   time.Time
		wantSameRate bool
	}{
		{"a 429 within the Retry-After of the cut", cutAt.Add(time.Second), cutAt.Add(900 * time.Millisecond), true},
		{"a 429 for a request sent before the cut", cutAt.Add(2 * time.Second), cutAt.Add(-time.Millisecond), true},
		{"a 429 for a request sent after the cut, past the Retry-After", cutAt.Add(1600 * time.Millisecond), cutAt.Add(1550 * time.Millisecond), false},
	} {
		before, cuts := p.current(c.at), p.cuts
		p.shed(c.at, c.sentAt, 1500*time.Millisecond)
		after := p.current(c.at)
		if same := after == before && p.cuts == cuts; same != c.wantSameRate {
			t.Errorf("%s: rate %.2f -> %.2f, cuts %d -> %d; want a cut %v", c.what, before, after, cuts, p.cuts, !c.wantSameRate)
		}
	}
}

package sink

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// writeOK dispatches the next write at now and records its success.
func writeOK(t *testing.T, s *sched, now time.Time) *task {
	t.Helper()
	tk, _ := s.next(now)
	if tk == nil {
		t.Fatalf("no write at %v", now)
	}
	s.finish(tk, testResult(outWritten, 0, false), now)
	return tk
}

// A 429 while the server accepts other writes is load shedding, not an
// outage: the engine stays up, its rate is cut once, the rejected key waits
// the Retry-After (charged one try), and the other keys go on.
func TestSchedShedHoldsTheKeyNotTheEngine(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{QPS: 100, Burst: 100, MaxTries: 2}, t0)
	for i := range 40 { // a measured share of about 40 writes/s
		at := t0.Add(time.Duration(i) * 25 * time.Millisecond)
		s.add(fmt.Sprint("warm", i), schedItem(fmt.Sprint("w", i), at), at)
		writeOK(t, s, at)
	}
	t0 = t0.Add(time.Second)
	for i := range 5 {
		s.add(fmt.Sprint("k", i), schedItem(fmt.Sprint("e", i), t0), t0)
	}
	now := t0.Add(10 * time.Millisecond)
	tk, _ := s.next(now)
	rate := s.pace.current(now)
	if v := s.finish(tk, testResult(outFailed, time.Second, true), now); v != vRetry {
		t.Fatalf("429 while shedding: verdict %v, want a retry", v)
	}
	if s.health.down || s.pace.cuts != 1 || s.pace.current(now) >= rate {
		t.Fatalf("after a shed 429: down %v cuts %d rate %v (was %v)", s.health.down, s.pace.cuts, s.pace.current(now), rate)
	}
	if s.queued[stHeld] != 1 || len(s.held) != 1 || tk.en.failures != 0 {
		t.Fatalf("held %d events in %d keys, failures %d (load shedding is never charged)", s.queued[stHeld], len(s.held), tk.en.failures)
	}
	// A second 429 within the Retry-After does not cut again.
	tk2, _ := s.next(now)
	if tk2 == nil || tk2.en == tk.en {
		t.Fatalf("the other keys do not go on: %v", tk2)
	}
	s.finish(tk2, testResult(outFailed, time.Second, true), now.Add(time.Millisecond))
	if s.pace.cuts != 1 {
		t.Fatalf("a second 429 within the Retry-After cut again: %d cuts", s.pace.cuts)
	}
	// The rest are written; the held keys wait for their Retry-After.
	var written []string
	for at := now; at.Before(now.Add(900 * time.Millisecond)); at = at.Add(10 * time.Millisecond) {
		if tk, _ := s.next(at); tk != nil {
			s.finish(tk, testResult(outWritten, 0, false), at)
			written = append(written, tk.en.key)
		}
	}
	if len(written) != 3 || len(s.held) != 2 || s.pendingEvents != 2 {
		t.Fatalf("written before the Retry-After %v, held keys %d, pending %d", written, len(s.held), s.pendingEvents)
	}
	// Then the held ones, oldest first; nobody was charged or dropped.
	for at := now.Add(900 * time.Millisecond); at.Before(now.Add(3 * time.Second)); at = at.Add(10 * time.Millisecond) {
		if tk, _ := s.next(at); tk != nil {
			s.finish(tk, testResult(outWritten, 0, false), at)
			written = append(written, tk.en.key)
		}
	}
	if len(written) != 5 || written[3] != "k0" || written[4] != "k1" || s.pendingEvents != 0 || s.queued[stHeld] != 0 || s.delayed() != 0 {
		t.Fatalf("written %v, pending %d held %d delayed %d", written, s.pendingEvents, s.queued[stHeld], s.delayed())
	}
}

// A key answered 429 whenever it is tried, with no other write accepted
// within a Retry-After of it, sees an outage answered 429: it is never
// dropped as retries exhausted, however long that lasts.
func TestSchedOutageOf429DoesNotExhaustTries(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{QPS: Unlimited, MaxTries: 2}, t0)
	s.add("warm", schedItem("w", t0), t0)
	writeOK(t, s, t0)
	for i := range 5 {
		s.add(fmt.Sprint("k", i), schedItem(fmt.Sprint("e", i), t0), t0)
	}
	tries := 0
	for ms := 0; ms < 30000; ms++ {
		now := t0.Add(time.Duration(ms) * time.Millisecond)
		for {
			tk, _ := s.next(now)
			if tk == nil {
				break
			}
			tries++
			if s.finish(tk, testResult(outFailed, time.Second, true), now) == vExhausted {
				t.Fatalf("try %d: a key was dropped as retries exhausted during an outage answered 429", tries)
			}
		}
	}
	if tries < 10 || s.pendingEvents != 5 {
		t.Fatalf("%d tries, %d events still waiting (want 5)", tries, s.pendingEvents)
	}
}

// A 429 with no write accepted lately is an outage answered 429: the
// engine goes quiet (one probe at a time, after the Retry-After).
func TestSchedAll429IsAnOutage(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{}, t0)
	for i := range 50 {
		s.add(fmt.Sprint("k", i), schedItem(fmt.Sprint("e", i), t0), t0)
	}
	sent := 0
	for ms := 0; ms < 5000; ms++ {
		now := t0.Add(time.Duration(ms) * time.Millisecond)
		for {
			tk, _ := s.next(now)
			if tk == nil {
				break
			}
			sent++
			s.finish(tk, testResult(outFailed, time.Second, true), now)
		}
	}
	// The first request, then one probe per Retry-After (1 s plus at most
	// half of it).
	if sent < 4 || sent > 6 || !s.health.down {
		t.Fatalf("%d requests in 5 s of 429s, down %v", sent, s.health.down)
	}
}

// A 429 with Retry-After is load shedding while the engine had a write
// accepted within two Retry-Afters: a few refusals in a row are chance at a
// full server, not a server that refuses everything. Past that the engine
// pauses as for an outage.
func TestSchedShedNeedsTwoRoundsWithoutSuccess(t *testing.T) {
	for _, tc := range []struct {
		after time.Duration
		down  bool
	}{
		{1500 * time.Millisecond, false},
		{1999 * time.Millisecond, false},
		{2001 * time.Millisecond, true},
	} {
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		s := newTestSched(t, Options{}, t0)
		s.add("warm", schedItem("w", t0), t0)
		writeOK(t, s, t0)
		now := t0.Add(tc.after)
		s.add("k", schedItem("e", now), now)
		tk, _ := s.next(now)
		if tk == nil {
			t.Fatalf("%v after a success: no write", tc.after)
		}
		s.finish(tk, testResult(outFailed, time.Second, true), now)
		if s.health.down != tc.down || (s.queued[stHeld] == 1) == tc.down {
			t.Errorf("a 429 (Retry-After 1s) %v after the last success: down %v, held %d; want down %v", tc.after, s.health.down, s.queued[stHeld], tc.down)
		}
	}
}

// A key refused with a Retry-After takes its place in the age order as if
// its event had been added that much later: it goes after the events added
// within its Retry-After after its own (sent again at once it would meet
// the overload that refused it), and before younger ones, early if need
// be: across batches, per-key order is still oldest first under shedding.
// Its place comes back once it is answered.
func TestSchedHeldKeyYieldsForItsRetryAfter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{QPS: Unlimited, Workers: 1, MaxDelay: 20 * time.Second}, t0)
	for i := range 40 { // a measured share of about 40 writes/s
		at := t0.Add(time.Duration(i) * 25 * time.Millisecond)
		s.add(fmt.Sprint("warm", i), schedItem(fmt.Sprint("w", i), at), at)
		writeOK(t, s, at)
	}
	at := func(ms int) time.Time { return t0.Add(time.Second + time.Duration(ms)*time.Millisecond) }
	s.add("old", schedItem("o", at(0)), at(0))
	s.add("old", schedItem("o2", at(2400)), at(0)) // the key's next event
	tk, _ := s.next(at(0))
	s.finish(tk, testResult(outFailed, 2*time.Second, true), at(0)) // held until at(2000), in the order at at(2000)
	if len(s.held) != 1 {
		t.Fatal("not held")
	}
	s.add("mid", schedItem("m", at(500)), at(500))
	s.add("young", schedItem("y", at(2500)), at(2500))
	if tk, _ = s.next(at(600)); tk == nil || tk.en.key != "mid" {
		t.Fatalf("want the event added within the Retry-After first, got %v", tk)
	}
	s.finish(tk, testResult(outWritten, 0, false), at(600))
	tk, _ = s.next(at(700))
	if tk == nil || tk.en.key != "old" || tk.it.ev.Name != "o" {
		t.Fatalf("want the held key before the younger event, early, got %v", tk)
	}
	if len(s.held) != 0 || s.queued[stHeld] != 0 || s.delayed() != 0 {
		t.Fatalf("held %d keys %d events, delayed %d", len(s.held), s.queued[stHeld], s.delayed())
	}
	// Answered, the key has its own place again: its next event (added
	// before the young one) goes first.
	s.finish(tk, testResult(outWritten, 0, false), at(700))
	if tk, _ = s.next(at(800)); tk == nil || tk.en.key != "old" || tk.it.ev.Name != "o2" {
		t.Fatalf("want the answered key's next event, got %v", tk)
	}
	s.finish(tk, testResult(outWritten, 0, false), at(800))
	if tk, _ = s.next(at(850)); tk == nil || tk.en.key != "young" {
		t.Fatalf("then the young one, got %v", tk)
	}
	// A held key younger than the ready ones keeps its Retry-After.
	s.finish(tk, testResult(outFailed, 10*time.Second, true), at(900))
	if len(s.held) != 1 {
		t.Fatal("the young key is not held")
	}
	s.add("older", schedItem("x", t0), at(1000))
	if tk, _ = s.next(at(1000)); tk == nil || tk.en.key != "older" {
		t.Fatalf("want the ready older key, got %v", tk)
	}
	s.finish(tk, testResult(outWritten, 0, false), at(1000))
	if tk, wake := s.next(at(1100)); tk != nil || !wake.Equal(at(10900)) {
		t.Fatalf("the held young key went early (%v) or wakes at %v", tk, wake.Sub(t0))
	}
}

// A Retry-After is honoured up to MaxDelay; a 429 without one while the
// server accepts other writes is a limit of the key: it backs off alone,
// charged a try, and the rate is not cut.
func TestSchedShedHoldIsCapped(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		retryAfter, want time.Duration
	}{{time.Hour, 2 * time.Second}, {time.Second, time.Second}} {
		s := newTestSched(t, Options{QPS: Unlimited}, t0)
		s.add("warm", schedItem("w", t0), t0)
		writeOK(t, s, t0)
		s.add("k", schedItem("k", t0), t0)
		tk, _ := s.next(t0)
		s.finish(tk, testResult(outFailed, c.retryAfter, true), t0)
		if len(s.held) != 1 || !s.timed[0].readyAt.Equal(t0.Add(c.want)) {
			t.Errorf("Retry-After %v: held %d, until %v, want %v", c.retryAfter, len(s.held), s.timed[0].readyAt.Sub(t0), c.want)
		}
	}
	s := newTestSched(t, Options{QPS: 50}, t0)
	s.add("warm", schedItem("w", t0), t0)
	writeOK(t, s, t0)
	s.add("k", schedItem("k", t0), t0)
	tk, _ := s.next(t0)
	s.finish(tk, testResult(outFailed, 0, true), t0)
	if en := s.entries["k"]; en.state != stBackoff || en.failures != 1 || s.pace.cuts != 0 || s.health.down {
		t.Errorf("429 without Retry-After: key %v, failures %d, cuts %d, down %v", en.state, en.failures, s.pace.cuts, s.health.down)
	}
	if d := s.timed[0].readyAt.Sub(t0); d < 250*time.Millisecond || d > 500*time.Millisecond {
		t.Errorf("429 without Retry-After: backs off %v, want the first step of the backoff", d)
	}
}

// Through any sequence of adds, coalescing, dispatches, successes, drops,
// failures of every kind (the key's, the server's, load shedding), Flush
// releases and abandons, every invariant written on sched's fields holds
// after every step: each key in exactly one state and in that state's
// heaps, the per-state counts, the waiting total behind the weight.
func TestSchedInvariantsRandomized(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for seed := range uint64(4) {
		rnd := rand.New(rand.NewPCG(3, 4+seed))
		s := newTestSched(t, WithKeyInterval(Options{QPS: Unlimited, Workers: 4, MaxTries: 5}, 300*time.Millisecond), t0)
		var busy []*task
		var seen [numStates]int
		for step := range 20000 {
			now := t0.Add(time.Duration(step) * 3 * time.Millisecond)
			switch r := rnd.IntN(20); {
			case r < 8:
				// Events recorded up to 5 s before they reach the engine, so
				// that a held key is not always older than the ready ones.
				k := rnd.IntN(30)
				since := now.Add(-time.Duration(rnd.IntN(5000)) * time.Millisecond)
				it := schedItem(fmt.Sprint("e", k, "-", rnd.IntN(2)), since)
				it.ev.Namespace = fmt.Sprint("ns", k%3)
				s.add(fmt.Sprint("k", k), it, now)
			case r < 14:
				if tk, _ := s.next(now); tk != nil {
					busy = append(busy, tk)
				}
			case r == 14:
				s.releaseDelayed()
			case len(busy) > 0:
				i := rnd.IntN(len(busy))
				tk := busy[i]
				busy = append(busy[:i], busy[i+1:]...)
				res := result{out: outWritten}
				switch r := rnd.IntN(100); {
				case r < 30:
					res = result{out: outFailed, fault: faultShed, retryAfter: time.Duration(1+rnd.IntN(2)) * time.Second}
				case r < 40:
					res = result{out: outFailed, fault: faultLimited}
				case r < 50:
					res = result{out: outFailed, fault: faultStatus}
				case r < 52:
					res = result{out: outFailed, fault: faultTransport}
				case r < 60:
					res = result{out: outDropped}
				case r < 62:
					res = result{out: outAbandoned}
				}
				s.finish(tk, res, now)
			}
			if err := s.check(); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			for _, en := range s.entries {
				seen[en.state]++
			}
		}
		for st := stReady; st < numStates; st++ {
			if seen[st] == 0 {
				t.Fatalf("seed %d: no key was ever %v: the sequence tests too little", seed, st)
			}
		}
	}
}

// Engines whose events have waited longer come back from a Retry-After
// sooner: the random part shrinks as 1s/(1s+age).
func TestRetryAfterJitterFavoursOldEvents(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rnd := rand.New(rand.NewPCG(5, 6))
	for _, age := range []time.Duration{0, time.Second, 9 * time.Second} {
		bound := time.Duration(float64(time.Second) * raJitter / (1 + age.Seconds()))
		var most time.Duration
		for range 1000 {
			var h health
			h.fail(t0, t0, false, true, time.Second, age, 1, time.Second, 10*time.Second, rnd)
			d := h.probeAt.Sub(t0) - time.Second
			if d < 0 || d > bound {
				t.Fatalf("age %v: jitter %v outside [0, %v]", age, d, bound)
			}
			most = max(most, d)
		}
		if most < bound*9/10 {
			t.Fatalf("age %v: jitter never came near its bound %v (most %v)", age, bound, most)
		}
	}
}

// After a Retry-After pause the engine slow-starts: from restartRate times
// its weight, one step per success, up to the threshold the cut set.
func TestPacerSlowStartAfterPause(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var p pacer
	p.init(50, 100, defaultWorkers, true, t0)
	now := t0
	for range 40 { // a measured share of about 20 writes/s
		now = now.Add(50 * time.Millisecond)
		p.success(now)
	}
	p.overload(now, now)
	if p.thresh < 10 || p.thresh > 16 || p.rate != p.thresh {
		t.Fatalf("after a 429: rate %v threshold %v", p.rate, p.thresh)
	}
	now = now.Add(time.Second)
	p.restartAfterPause(now)
	if p.rate != restartRate || !p.slow || p.tokens > 1 {
		t.Fatalf("after the pause: rate %v slow %v tokens %v", p.rate, p.slow, p.tokens)
	}
	steps := 0
	for p.slow {
		now = now.Add(time.Millisecond)
		p.success(now)
		steps++
	}
	if p.rate != p.thresh || steps > int(p.thresh) {
		t.Fatalf("slow start ended at %v after %d successes (threshold %v)", p.rate, steps, p.thresh)
	}
}

// An engine that goes idle within a minute of a disturbance restarts
// gently: idle a second or more, at the restart rate times its weight;
// idle less, at its rate halved per idle second; in both cases its first
// write after the given part of an interval, and it slow-starts back to
// where it was. One that was never disturbed, or long ago, keeps its rate
// and burst.
func TestPacerRestartAfterIdle(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var calm, hit pacer
	calm.init(50, 100, defaultWorkers, true, t0)
	hit.init(50, 100, defaultWorkers, true, t0)
	hit.failed(t0)
	hit.weight = minWeight // one new event
	at := t0.Add(3 * time.Second)
	calm.restartAfterIdle(at, 3*time.Second, 0.5)
	hit.restartAfterIdle(at, 3*time.Second, 0.5)
	if calm.rate != 50 || calm.tokens != 100 {
		t.Fatalf("undisturbed engine restarted: rate %v tokens %v", calm.rate, calm.tokens)
	}
	if hit.rate != restartRate*minWeight || hit.tokens != 0.5 || !hit.slow || hit.thresh != 50 {
		t.Fatalf("disturbed engine after 3 idle seconds: rate %v tokens %v slow %v threshold %v", hit.rate, hit.tokens, hit.slow, hit.thresh)
	}
	if wait := hit.take(at); wait != time.Second {
		t.Fatalf("its first write waits %v, want half an interval at %v writes/s", wait, hit.rate)
	}
	var brief pacer
	brief.init(50, 100, defaultWorkers, true, t0)
	brief.failed(t0)
	brief.weight = minWeight
	brief.restartAfterIdle(at, 500*time.Millisecond, 0)
	if want := 50 * math.Exp2(-0.5); math.Abs(brief.rate-want) > 1e-9 || brief.tokens != 1 || brief.thresh != 50 {
		t.Fatalf("disturbed engine after half an idle second: rate %v tokens %v threshold %v, want rate %v", brief.rate, brief.tokens, brief.thresh, want)
	}
	var old pacer
	old.init(50, 100, defaultWorkers, true, t0)
	old.failed(t0)
	late := t0.Add(disturbMemory + time.Second)
	old.restartAfterIdle(late, time.Second, 0)
	if old.rate != 50 || old.tokens != 100 {
		t.Fatalf("a disturbance long ago still restarts gently: rate %v tokens %v", old.rate, old.tokens)
	}
	// With no limit, a short pause restarts at the rate of recent
	// successes, decayed with the idle time; a long one at the restart
	// rate times the weight.
	busy := func(idle time.Duration) float64 {
		var p pacer
		p.init(-1, 0, defaultWorkers, true, t0)
		now := t0
		for range 2000 { // 1,000 writes/s for 2 s
			now = now.Add(time.Millisecond)
			p.success(now)
		}
		p.failed(now)
		p.weight = 1
		p.restartAfterIdle(now.Add(idle), idle, 0)
		return p.rate
	}
	if r := busy(time.Millisecond); r < 800 {
		t.Fatalf("a limitless engine idle for 1 ms restarted at %v writes/s, want about 1000", r)
	}
	if r := busy(20 * time.Second); r != restartRate {
		t.Fatalf("a limitless engine idle for 20 s restarted at %v writes/s, want %v", r, restartRate)
	}
	var off pacer
	off.init(50, 100, defaultWorkers, false, t0)
	off.failed(t0)
	off.restartAfterIdle(at, 3*time.Second, 0)
	if off.rate != 50 || off.tokens != 100 {
		t.Fatalf("with the adaptive rate off: rate %v tokens %v", off.rate, off.tokens)
	}
}

// An engine restarting after an idle second is weighed by its new write,
// not by the old one it wrote last: a second wave of new events restarts
// at restartRate·minWeight however old the events before it were.
func TestSchedRestartAfterIdleWeighsTheNewWrite(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{}, t0)
	s.add("warm", schedItem("w", t0), t0)
	writeOK(t, s, t0)
	// An event that has waited 200 s is refused once (a 429 with
	// Retry-After: the server sheds load) and then written.
	s.add("old", schedItem("o", t0.Add(-200*time.Second)), t0)
	tk, _ := s.next(t0)
	s.finish(tk, testResult(outFailed, time.Second, true), t0)
	at := t0.Add(2 * time.Second)
	writeOK(t, s, at)
	if s.pendingEvents != 0 || s.pace.weight < 1.5 {
		t.Fatalf("after the old write: pending %d, weight %v (want the old write's, about 2)", s.pendingEvents, s.pace.weight)
	}
	// Idle 3 s, then a new event.
	now := at.Add(3 * time.Second)
	s.add("new", schedItem("n", now), now)
	if r := s.pace.current(now); r != restartRate*minWeight {
		t.Errorf("restarted at %v writes/s, want %v (weighed by the new event)", r, restartRate*minWeight)
	}
}

// The weight grows with the waiting an engine carries, within its bounds.
func TestWeightOf(t *testing.T) {
	for _, c := range []struct{ wait, want float64 }{
		{0, minWeight}, {10, minWeight}, {100, 1}, {200, 2}, {1e9, maxWeight},
	} {
		if got := weightOf(c.wait); got != c.want {
			t.Errorf("weightOf(%v) = %v, want %v", c.wait, got, c.want)
		}
	}
}

// A key refused 429 again and again while the server accepts the others (a
// limit of its own, as the EventRateLimit admission plugin sets per object)
// does not hold up the others: its repeated refusals do not cut the rate,
// and it is dropped after MaxTries.
func TestSchedKeyRefusedAloneIsDropped(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{}, t0) // 50 writes/s, MaxTries 12
	s.add("bad", schedItem("b", t0), t0)
	added, written, badTries, droppedAt := 0, 0, 0, time.Duration(-1)
	for ms := 0; ms < 60000; ms++ {
		now := t0.Add(time.Duration(ms) * time.Millisecond)
		if ms%50 == 0 { // 20 good events per second
			s.add(fmt.Sprint("k", ms), schedItem(fmt.Sprint("e", ms), now), now)
			added++
		}
		for {
			tk, _ := s.next(now)
			if tk == nil {
				break
			}
			if tk.en.key != "bad" {
				s.finish(tk, testResult(outWritten, 0, false), now)
				written++
				continue
			}
			badTries++
			// 429 without Retry-After: a limit of its object (EventRateLimit).
			if s.finish(tk, testResult(outFailed, 0, true), now) == vExhausted {
				droppedAt = now.Sub(t0)
			}
		}
	}
	// Its first tries, before any write was accepted, saw an outage and
	// were not charged.
	if droppedAt < 0 || badTries > 20 {
		t.Fatalf("the refused key was tried %d times, dropped at %v", badTries, droppedAt)
	}
	if written < added-5 { // the last may still wait for a token
		t.Fatalf("%d of %d good events written in a minute (the refused key dropped at %v)", written, added, droppedAt)
	}
	t.Logf("refused key dropped after %d tries at %v; %d of %d good events written", badTries, droppedAt, written, added)
}

// While the server is down, an engine holding few events probes on its
// backoff (500 ms doubling to 2 s at the defaults), probe for probe the
// same as with no law; one holding many probes sooner, as probeSpacing
// says for the outage so far, never sooner than half BaseDelay: 1,500
// events find a 3 s outage's end within about half a second.
func TestProbeSpacingFollowsTheBacklog(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const base, most = defaultBaseDelay, defaultMaxDelay
	probes := func(pending int64, seed uint64, law bool) []time.Duration {
		rnd := rand.New(rand.NewPCG(seed, 9))
		var h health
		var at []time.Duration
		now := t0
		for now.Sub(t0) < 10*time.Second {
			if law {
				h.fail(now, now, true, false, 0, 0, pending, base, most, rnd)
			} else {
				h.failures++
				h.probeAt = now.Add(backoff(h.failures, base, most, rnd))
			}
			now = h.probeAt
			at = append(at, now.Sub(t0))
		}
		return at
	}
	for seed := uint64(1); seed <= 20; seed++ {
		for _, pending := range []int64{0, 1, 10, 30} {
			if got, want := probes(pending, seed, true), probes(pending, seed, false); !slices.Equal(got, want) {
				t.Fatalf("seed %d, %d events: probes at %v, want the backoff's %v", seed, pending, got, want)
			}
		}
		at := probes(1500, seed, true)
		prev := time.Duration(0)
		for _, a := range at {
			d := a - prev
			if lim := max(base, probeSpacing(prev+base, 1500, base)); d < base/2 || d > lim {
				t.Fatalf("seed %d, 1,500 events: a probe %v after the one at %v, want within [%v, %v]", seed, d, prev, base/2, lim)
			}
			if prev >= 2*time.Second && prev < 3500*time.Millisecond && d > 600*time.Millisecond {
				t.Fatalf("seed %d, 1,500 events: a probe %v after the one at %v, want at most 600ms", seed, d, prev)
			}
			prev = a
		}
	}
}

// A key refused again does not cut the rate while the server sheds few of
// the engine's requests: its own refusals do not decide for the others.
// Once the server has shed more than 1 - aimdCut of them (counted over
// about disturbMemory), one cut cannot bring a fleet back under its
// capacity, and a key refused again cuts as a first refusal does, still
// once a round.
func TestSchedKeyRefusedAgainCutsPastWhatOneCutBringsBack(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{QPS: 100, Burst: 100}, t0)
	for i := range 40 { // 40 writes stored over a second
		at := t0.Add(time.Duration(i) * 25 * time.Millisecond)
		s.add(fmt.Sprint("warm", i), schedItem(fmt.Sprint("w", i), at), at)
		writeOK(t, s, at)
	}
	now := t0.Add(time.Second)
	// next waits for the next write the rate lets go.
	next := func() *task {
		t.Helper()
		for end := now.Add(5 * time.Second); now.Before(end); now = now.Add(5 * time.Millisecond) {
			if tk, _ := s.next(now); tk != nil {
				return tk
			}
		}
		t.Fatal("no write within 5 s")
		return nil
	}
	// refuse answers the next write 429 with Retry-After, and reports
	// whether that cut the rate; again: it is a key's second refusal or
	// later.
	refuse := func(again bool) bool {
		t.Helper()
		tk, cuts := next(), s.pace.cuts
		if (tk.en.sheds > 0) != again {
			t.Fatalf("%v: key %s refused %d times before, want again %v", now.Sub(t0), tk.en.key, tk.en.sheds, again)
		}
		if v := s.finish(tk, testResult(outFailed, time.Second, true), now); v != vRetry || s.health.down {
			t.Fatalf("%v: verdict %v, down %v: want load shedding", now.Sub(t0), v, s.health.down)
		}
		return s.pace.cuts > cuts
	}
	// stored writes the oldest key: the server answers.
	stored := func() {
		t.Helper()
		s.add(fmt.Sprint("ok", now), schedItem("ok", t0.Add(-time.Minute)), now)
		tk := next()
		s.finish(tk, testResult(outWritten, 0, false), now)
	}
	s.add("k", schedItem("k", now), now)
	if !refuse(false) {
		t.Fatal("a first refusal did not cut")
	}
	now = now.Add(500 * time.Millisecond)
	stored()
	now = now.Add(600 * time.Millisecond) // a round after the cut
	if refuse(true) || s.pace.overShed() {
		t.Fatalf("a key refused again with 2 of 43 requests shed cut the rate (over %v)", s.pace.overShed())
	}
	// The server sheds 40 more keys, each older than those before it (so
	// that it goes before them) and stores one write in five: 42 of 95
	// requests, past 1 - aimdCut.
	// First refusals cut once a round.
	for i := range 40 {
		s.add(fmt.Sprint("x", i), schedItem(fmt.Sprint("x", i), t0.Add(-time.Duration(i)*time.Second)), now)
		refuse(false)
		if i%4 == 3 { // the server answers others meanwhile
			stored()
		}
	}
	if !s.pace.overShed() {
		t.Fatalf("not past 1 - aimdCut: %+v", s.pace.tally)
	}
	now = s.pace.cutAt.Add(1100 * time.Millisecond) // a round after the last cut
	stored()
	if !refuse(true) {
		t.Fatalf("a key refused again past what one cut brings back did not cut (tally %+v)", s.pace.tally)
	}
}

package sink

import (
	"fmt"
	"math"
	"time"
)

// testResult builds the result of a write the way the old tests spell it:
// out, and for a failure the Retry-After and whether it was a 429. A
// failure that is no 429 is a transport error (the server's, at once).
func testResult(out outcome, retryAfter time.Duration, overload bool) result {
	r := result{out: out, retryAfter: retryAfter, fault: faultTransport}
	if overload {
		r.fault = faultLimited
		if retryAfter > 0 {
			r.fault = faultShed
		}
	}
	return r
}

// delayed is the number of queued events of keys in a timed state.
func (s *sched) delayed() int64 {
	return s.queued[stSpaced] + s.queued[stBackoff] + s.queued[stHeld]
}

// check verifies the invariants written on sched's and entry's fields; it
// returns the first one broken, or nil.
func (s *sched) check() error {
	var queued [numStates]int64
	var events int64
	var writes, busy, inReady, inTimed, inHeld int
	var sum float64
	for key, en := range s.entries {
		if en.key != key {
			return fmt.Errorf("entry %q filed under %q", en.key, key)
		}
		for _, it := range en.queue {
			queued[en.state] += it.n
			events += it.n
			writes++
			sum += float64(it.n) * it.since.Sub(s.t0).Seconds()
		}
		for i := 1; i < len(en.queue); i++ {
			if en.queue[i].ev.Name == en.queue[i-1].ev.Name {
				return fmt.Errorf("key %s: neighbours %d and %d are the same event", key, i-1, i)
			}
		}
		if (en.state == stBusy) != (en.busy != nil) {
			return fmt.Errorf("key %s in %v with busy %v", key, en.state, en.busy != nil)
		}
		inR := en.idx >= 0 && en.idx < len(s.ready) && s.ready[en.idx] == en
		inT := en.tidx >= 0 && en.tidx < len(s.timed) && s.timed[en.tidx] == en
		inH := en.hidx >= 0 && en.hidx < len(s.held) && s.held[en.hidx] == en
		wantR := en.state == stReady
		wantT := en.state == stSpaced || en.state == stBackoff || en.state == stHeld
		wantH := en.state == stHeld
		if inR != wantR || inT != wantT || inH != wantH || (!inR && en.idx != -1) || (!inT && en.tidx != -1) || (!inH && en.hidx != -1) {
			return fmt.Errorf("key %s in %v: in ready %v timed %v held %v (idx %d %d %d)", key, en.state, inR, inT, inH, en.idx, en.tidx, en.hidx)
		}
		switch en.state {
		case stNone:
			return fmt.Errorf("key %s in stNone is still filed", key)
		case stReady, stBackoff, stHeld:
			if len(en.queue) == 0 {
				return fmt.Errorf("key %s in %v with nothing queued", key, en.state)
			}
		}
		if en.state == stBusy {
			busy++
		}
		if inR {
			inReady++
		}
		if inT {
			inTimed++
		}
		if inH {
			inHeld++
		}
	}
	if inReady != len(s.ready) || inTimed != len(s.timed) || inHeld != len(s.held) {
		return fmt.Errorf("heaps hold %d %d %d entries, %d %d %d of them filed", len(s.ready), len(s.timed), len(s.held), inReady, inTimed, inHeld)
	}
	if queued != s.queued || events != s.pendingEvents || writes != s.pendingWrites || busy != len(s.busy) {
		return fmt.Errorf("counts: queued %v want %v, events %d want %d, writes %d want %d, in flight %d want %d",
			s.queued, queued, s.pendingEvents, events, s.pendingWrites, writes, len(s.busy), busy)
	}
	for _, t := range s.busy {
		if t.en.busy != t {
			return fmt.Errorf("key %s: a write listed under way that is not its", t.en.key)
		}
	}
	if math.Abs(sum-s.sinceSum) > 1e-6*math.Max(1, math.Abs(sum)) {
		return fmt.Errorf("waiting total %v, want %v", s.sinceSum, sum)
	}
	for i := range s.ready {
		if p := (i - 1) / 2; i > 0 && (readyOrder{}).less(s.ready[i], s.ready[p]) {
			return fmt.Errorf("ready heap out of order at %d", i)
		}
	}
	for i := range s.timed {
		if p := (i - 1) / 2; i > 0 && (timedOrder{}).less(s.timed[i], s.timed[p]) {
			return fmt.Errorf("timed heap out of order at %d", i)
		}
	}
	return nil
}

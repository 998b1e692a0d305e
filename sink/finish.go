// What happens when a write returns: finish, and the rules it applies
// (answered, failed, blameOf; the evidence itself is in blame.go).

package sink

import (
	"cmp"
	"time"
)

// finish records the result of t and moves its key on. It returns what the
// engine must account (see verdict).
func (s *sched) finish(t *task, r result, now time.Time) verdict {
	en := t.en
	en.busy = nil
	s.done(t)
	s.weigh(now, t.it)
	v := vDone
	switch r.out {
	case outWritten, outDropped:
		if r.unsent {
			// Dropped before any request (one that cannot be built), or
			// written with none (its state stored already): no evidence
			// of the server either way, and the token and the probe's
			// turn go to the next write.
			s.pace.refund()
			if t.probe {
				s.health.probing = false
			}
			break
		}
		s.answered(en, r.out == outWritten, t.sentAt, now)
		if at := t.sentAt.Add(s.interval); s.interval > 0 && at.After(now) && !flushing(en) {
			// The server answered about this key: its next write waits
			// until the interval since this one was sent has passed,
			// unless a Flush waits for it. An entry with nothing queued
			// stays until then, to remember when its key was written.
			s.move(en, stSpaced, at)
			s.noteIdle(now)
			return vDone
		}
	case outFailed:
		v = s.failed(t, r, now)
		if v == vRetry {
			return v
		}
	case outAbandoned:
		if t.probe {
			s.health.probing = false
		}
	}
	s.settle(en)
	s.noteIdle(now)
	return v
}

// answered records that the server answered a write of en sent at sentAt
// (stored it, or refused it for a reason of its own): it is up.
func (s *sched) answered(en *entry, written bool, sentAt, now time.Time) {
	en.failures, en.suspectTries, en.failed, en.failedAt, en.sheds, en.shedFor = 0, 0, false, time.Time{}, 0, 0
	s.blame.success(en.ns, !s.health.down, now)
	if s.health.down && s.health.overloaded {
		s.pace.restartAfterPause(now)
	}
	s.health.up()
	s.pace.resume(now)
	if written {
		s.pace.success(now)
		s.pace.latency(now, sentAt)
	}
	if s.pace.mayGrowWindow(now) { // one per success, slower after an outage
		s.window = min(s.workers, s.window+1)
	}
}

// done takes t off the writes under way.
func (s *sched) done(t *task) {
	if t.sentAt.After(s.lastSent) {
		s.lastSent = t.sentAt
	}
	for i, b := range s.busy {
		if b == t {
			last := len(s.busy) - 1
			s.busy[i], s.busy[last] = s.busy[last], nil
			s.busy = s.busy[:last]
			return
		}
	}
}

// failed handles a write that failed and may work later: whose failure it
// is (see blameOf) decides who waits. It requeues the write, or returns
// vExhausted when the key has failed maxTries times.
func (s *sched) failed(t *task, r result, now time.Time) verdict {
	en := t.en
	if t.probe {
		s.health.probing = false
	}
	// The Retry-After is honoured up to MaxDelay; without one, a key
	// waits BaseDelay or its backoff.
	wait := min(cmp.Or(r.retryAfter, s.base), s.max)
	if r.fault == faultShed {
		s.pace.count(now, true)
	}
	w := s.blameOf(t, r, now, wait) // reads the key's previous failure
	if r.fault != faultShed && r.fault != faultLimited {
		s.pace.refund()
	}
	en.failed, en.failedAt = true, now
	// A write that got no answer, or a 5xx, may have been stored: a Create
	// answered AlreadyExists later found its own event (see write). A 429
	// was refused before anything was stored.
	t.it.sent = t.it.sent || r.fault == faultTransport || r.fault == faultStatus
	switch w {
	case byShedding:
		// Not charged: load shedding never exhausts a key. The rate is
		// cut (once per round), the other keys go on at that rate, and
		// this one is held for the Retry-After. A key refused again
		// does not cut: its own refusals do not decide for the others.
		// Unless the server sheds more of the engine's requests than
		// one cut can bring back (overShed): then the keys refused
		// again are the fleet's excess, and left uncut their rates
		// would keep growing while the held keys are sent again and
		// again.
		en.sheds++
		en.shedFor = wait
		if en.sheds == 1 || s.pace.overShed() {
			s.pace.shed(now, t.sentAt, wait)
		}
		s.shedUntil = now.Add(max(wait, time.Second))
		s.requeue(en, t.it)
		s.move(en, stHeld, now.Add(wait))
		return vRetry
	case byKey:
		en.failures++
		if en.failures >= s.maxTries {
			en.failures, en.suspectTries = 0, 0
			return vExhausted
		}
		d := backoff(en.failures, s.base, s.max, s.rnd)
		if r.retryAfter > 0 {
			d = wait
		}
		s.requeue(en, t.it)
		s.move(en, stBackoff, now.Add(d))
		return vRetry
	}
	// The server's: every key waits behind one probe, none is charged.
	overload := r.fault == faultLimited || r.fault == faultShed
	age := now.Sub(t.it.since)
	if len(s.ready) > 0 {
		age = max(age, now.Sub(s.ready[0].queue[0].since))
	}
	s.health.fail(now, t.sentAt, t.probe, overload, r.retryAfter, age, s.pendingEvents, s.base, s.max, s.rnd)
	s.window = 1
	if overload {
		s.pace.overload(now, t.sentAt)
	} else {
		s.pace.failed(now)
	}
	s.pace.pause(now) // after a cut, which measures up to now
	s.requeue(en, t.it)
	s.move(en, stReady, time.Time{})
	return vRetry
}

// shedRounds: a 429 with Retry-After is load shedding, not a server that
// refuses everything, when a write of the engine succeeded within this many
// Retry-Afters (each at least a second). One is too few to tell: an engine
// sending a few writes a second to a full server (an empty token bucket)
// meets three or four refusals in a row by chance, and would pause as if
// the server were down while the rest of a fleet writes.
const shedRounds = 2

// blameOf decides whose fault a failed write is (see the package
// documentation's table). It also refunds the tries charged to keys whose
// failures turn out to be the server's.
func (s *sched) blameOf(t *task, r result, now time.Time, wait time.Duration) whose {
	switch {
	case r.fault == faultShed && !t.probe && !s.health.down && s.pace.adaptive && s.pace.answered(now, shedRounds*max(wait, time.Second)):
		return byShedding
	case t.probe, s.health.down, r.fault == faultShed:
		// A failed probe is the server's; so is a write that was under
		// way when the server was seen down, and a 429 with Retry-After
		// when nothing was accepted lately (an outage answered 429).
		s.blame.note(t.en)
		return byServer
	}
	// No answer is the server's at once, unless the server answered
	// within BaseDelay before the request went: then one silent request
	// is the key's first suspicion, as a 5xx is, and a second key must
	// fail too (an outage costs one request more, a random failure
	// does not stall everyone for a backoff).
	silent := r.fault == faultTransport && (s.blame.lastOK.IsZero() || t.sentAt.Sub(s.blame.lastOK) >= s.base)
	w, refund := s.blame.failure(t.en, t.sentAt, silent, s.readyOutside)
	for _, en := range refund {
		en.failures = max(0, en.failures-en.suspectTries)
		en.suspectTries = 0
	}
	if w == byKey && s.blame.suspected(t.en) {
		t.en.suspectTries++ // the try charged now, on no evidence yet
	}
	return w
}

// readyOutside reports whether a key of another namespace than ns has a
// write ready.
func (s *sched) readyOutside(ns string) bool {
	for _, en := range s.ready {
		if en.ns != ns {
			return true
		}
	}
	return false
}

// noteIdle records when the engine ran out of work.
func (s *sched) noteIdle(now time.Time) {
	if s.pendingWrites == 0 && len(s.busy) == 0 {
		s.idleSince = now
		s.sinceSum = 0 // nothing waits: no rounding left behind either
	}
}

// requeue puts it back at the front of en's queue, merged with the next
// write when that is the same event (which then carries it).
func (s *sched) requeue(en *entry, it *item) {
	if len(en.queue) > 0 && en.queue[0].ev.Name == it.ev.Name {
		nx := en.queue[0]
		s.dequeue(en, nx)
		nx.n += it.n
		nx.create = nx.create || it.create
		nx.sent = nx.sent || it.sent
		nx.waiters = append(nx.waiters, it.waiters...)
		if it.since.Before(nx.since) {
			nx.since = it.since
		}
		s.enqueue(en, nx)
		return
	}
	en.queue = append(en.queue, nil)
	copy(en.queue[1:], en.queue)
	en.queue[0] = it
	s.enqueue(en, it)
}

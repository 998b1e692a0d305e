package sink

import (
	"cmp"
	"container/heap"
	"math/rand/v2"
	"time"
)

// sched is the engine's state: the writes waiting per key, the state of
// each key, the shared health of the API server and the adaptive write
// rate. It is a plain state machine: it starts no goroutine, takes no lock
// and reads no clock (every method takes now), so that a simulation can run
// many of them deterministically. The Engine holds it under its mutex and
// talks to it through add, next, finish, releaseDelayed, visit, clear and
// stats only.
//
// Every key (entry) is in exactly one state (see keyState), and changes
// state only through move, which keeps the heaps and the per-state counts
// true. check (used by the tests after every step) verifies the invariants
// written on the fields below.
type sched struct {
	maxTries   int
	maxPending int
	interval   time.Duration // Options.keyInterval: between the starts of two writes of a key
	base, max  time.Duration // backoff of the server-wide probe and of a failing key
	rnd        *rand.Rand    // jitter

	// entries holds every key in a state other than stNone, and only
	// those.
	entries map[string]*entry
	// ready holds exactly the entries in stReady, by their place in the
	// age order (entry.ageOrder: the oldest waiting event, moved back by
	// a Retry-After) first; ties: first come, first served, by seq.
	ready entryHeap[readyOrder]
	seq   uint64
	// timed holds exactly the entries in stSpaced, stBackoff and stHeld,
	// soonest readyAt first.
	timed entryHeap[timedOrder]
	// held holds exactly the entries in stHeld, by the same place first:
	// one whose place is older than every ready entry's goes before its
	// Retry-After has passed (see next).
	held entryHeap[heldOrder]

	health health
	pace   pacer
	blame  blame

	// window caps the writes under way, as TCP's congestion window: one
	// after a server-wide failure, one more with each success, up to the
	// number of workers. A fleet of engines coming back after an outage
	// then sends one request each until the server has answered, not a
	// burst each.
	window, workers int
	// busy holds the writes of the entries in stBusy, in no order.
	busy []*task
	// lastSent is when the latest sent of the writes answered was sent.
	lastSent time.Time

	// queued[st] is the number of events (an item stands for item.n) in
	// the queues of the entries in state st; queued[stNone] is zero.
	// pendingEvents is their sum and pendingWrites the number of items.
	queued        [numStates]int64
	pendingEvents int64
	pendingWrites int  // what MaxPending bounds
	heldBack      bool // the last next() found ready writes but was held by health, window, writes under way or rate
	// sinceSum is the sum over the queued items of n times since (in
	// seconds after t0): with pendingEvents it gives the total waiting of
	// the queued events, which weighs the adaptive rate.
	sinceSum float64
	t0       time.Time
	// idleSince is when the engine last had nothing queued or under way
	// (zero while it has).
	idleSince time.Time
	// shedUntil: the server shed load (a 429 with Retry-After while it
	// accepted other writes) until then, as Stats reports it.
	shedUntil time.Time
}

func newSched(o Options, rnd *rand.Rand, now time.Time) *sched {
	s := &sched{
		maxTries:   o.MaxTries,
		maxPending: o.MaxPending,
		interval:   o.keyInterval,
		base:       o.BaseDelay,
		max:        o.MaxDelay,
		rnd:        rnd,
		entries:    map[string]*entry{},
		window:     1, // grows with the first successes, as TCP's initial window
		workers:    o.Workers,
		t0:         now,
		idleSince:  now,
	}
	s.pace.init(o.QPS, o.Burst, o.Workers, !o.DisableAdaptiveRate, now)
	s.blame.init()
	return s
}

// move is the one transition of a key: it takes en out of the heaps of its
// state and puts it in those of to, carrying its queued events' count
// along. at is the readyAt of the timed states. stNone forgets the entry.
func (s *sched) move(en *entry, to keyState, at time.Time) {
	switch en.state {
	case stReady:
		heap.Remove(&s.ready, en.idx)
	case stHeld:
		heap.Remove(&s.held, en.hidx)
		fallthrough
	case stSpaced, stBackoff:
		heap.Remove(&s.timed, en.tidx)
	}
	q := queued(en)
	s.queued[en.state] -= q
	en.state = to
	s.queued[to] += q
	switch to {
	case stNone:
		if s.entries[en.key] == en {
			delete(s.entries, en.key)
		}
	case stReady:
		s.seq++
		en.order, en.seq = en.ageOrder(), s.seq
		heap.Push(&s.ready, en)
	case stHeld:
		en.order = en.ageOrder()
		heap.Push(&s.held, en)
		fallthrough
	case stSpaced, stBackoff:
		en.readyAt = at
		heap.Push(&s.timed, en)
	}
}

// settle moves en, which has just stopped being busy or timed, to where its
// queue puts it: ready with writes queued, otherwise forgotten.
func (s *sched) settle(en *entry) {
	if len(en.queue) > 0 {
		s.move(en, stReady, time.Time{})
	} else {
		s.move(en, stNone, time.Time{})
	}
}

// enqueue and dequeue keep the counts of a queue change of en.
func (s *sched) enqueue(en *entry, it *item) {
	s.queued[en.state] += it.n
	s.pendingEvents += it.n
	s.pendingWrites++
	s.count(it, 1)
}

func (s *sched) dequeue(en *entry, it *item) {
	s.queued[en.state] -= it.n
	s.pendingEvents -= it.n
	s.pendingWrites--
	s.count(it, -1)
}

// count adds (sign 1) or removes (sign -1) it to or from the waiting
// total.
func (s *sched) count(it *item, sign float64) {
	s.sinceSum += sign * float64(it.n) * it.since.Sub(s.t0).Seconds()
}

// weigh sets the pacer's weight from the waiting of the queued events,
// plus extra (a write that just returned).
func (s *sched) weigh(now time.Time, extra *item) {
	n := float64(s.pendingEvents)
	sum := s.sinceSum
	if extra != nil {
		n += float64(extra.n)
		sum += float64(extra.n) * extra.since.Sub(s.t0).Seconds()
	}
	s.pace.weight = weightOf(n*now.Sub(s.t0).Seconds() - sum)
}

// add queues the newest state of key. It returns false when MaxPending
// writes are already waiting (the caller counts the drop).
func (s *sched) add(key string, it *item, now time.Time) bool {
	en := s.entries[key]
	if en != nil && len(en.queue) > 0 {
		if last := en.queue[len(en.queue)-1]; last.ev.Name == it.ev.Name {
			// The same event on the server: the newer state carries the
			// older one's count, so it replaces it.
			s.dequeue(en, last)
			it.n += last.n
			it.create = it.create || last.create
			it.sent = it.sent || last.sent
			it.waiters = last.waiters
			it.since = last.since
			en.queue[len(en.queue)-1] = it
			s.enqueue(en, it)
			return true
		}
	}
	if s.pendingWrites >= s.maxPending {
		return false
	}
	if s.pendingWrites == 0 && len(s.busy) == 0 && !s.idleSince.IsZero() {
		// Work again after a quiet time: the rate restarts gently if the
		// server was in trouble lately, weighed by this write alone.
		s.weigh(now, it)
		s.pace.restartAfterIdle(now, now.Sub(s.idleSince), s.rnd.Float64())
		s.idleSince = time.Time{}
	}
	if en == nil {
		en = &entry{key: key, ns: it.ev.Namespace, idx: -1, tidx: -1, hidx: -1}
		s.entries[key] = en
	}
	// Another name (or none waiting): a write of its own, after the ones
	// waiting, so that no count is lost.
	en.queue = append(en.queue, it)
	s.enqueue(en, it)
	if en.state == stNone {
		s.move(en, stReady, time.Time{})
	}
	return true
}

// next returns the write to start now, if any; otherwise the time at which
// to ask again (zero: when something changes).
func (s *sched) next(now time.Time) (*task, time.Time) {
	s.heldBack = false
	s.promote(now)
	// The soonest end of a timed state: ask again then, whatever else
	// holds the ready writes.
	var wake time.Time
	if len(s.timed) > 0 {
		wake = s.timed[0].readyAt
	}
	if len(s.ready) == 0 {
		return nil, wake
	}
	if len(s.busy) >= s.window {
		s.heldBack = true
		return nil, wake
	}
	if c := s.pace.concurrency(); float64(len(s.busy)) >= c {
		if n, until := s.counted(now); float64(n) >= c {
			s.heldBack = true
			return nil, earliest(until, wake)
		}
	}
	probe := false
	if s.health.down {
		if s.health.probing {
			s.heldBack = true
			return nil, wake
		}
		if now.Before(s.health.probeAt) {
			s.heldBack = true
			return nil, earliest(s.health.probeAt, wake)
		}
		probe = true
	}
	// Every request takes a token, the probe too: a probe is a write, and
	// a sink whose every event fails at first (client-go's TestLotsOfEvents)
	// is written through probes at the configured rate, not above it.
	s.weigh(now, nil)
	if wait := s.pace.take(now); wait > 0 {
		s.heldBack = true
		return nil, earliest(now.Add(wait), wake)
	}
	if probe {
		s.health.probing = true
		s.health.probes++
	}
	var en *entry
	switch {
	case probe:
		en = s.probeEntry()
	case len(s.held) > 0 && s.held[0].order < s.ready[0].order:
		// A key held by a Retry-After whose place (ageOrder, its event's
		// age moved back by the Retry-After) is older than every ready
		// one goes first: the server's load is the rate's business, and
		// holding the key longer would only put younger events ahead of
		// it.
		en = s.held[0]
	default:
		en = s.ready[0]
	}
	it := en.queue[0]
	s.dequeue(en, it)
	en.queue[0] = nil
	en.queue = en.queue[1:]
	t := &task{en: en, it: it, probe: probe, sentAt: now}
	en.busy = t
	s.move(en, stBusy, time.Time{})
	s.busy = append(s.busy, t)
	return t, time.Time{}
}

// counted returns how many of the writes under way count against the
// pacer's concurrency now, and when the first of them stops counting: a
// straggler does not (see pacer.straggling), so that one slow write holds
// no one else back.
func (s *sched) counted(now time.Time) (n int, until time.Time) {
	late := s.pace.straggling()
	for _, t := range s.busy {
		d := round
		if t.sentAt.Before(s.lastSent) {
			d = min(late, round)
		}
		if at := t.sentAt.Add(d); at.After(now) {
			n++
			until = earliest(until, at)
		}
	}
	return n, until
}

// probeEntry chooses the write that probes a server seen down: the oldest
// ready key whose own last write did not fail and whose namespace has not
// failed since the last success, else the oldest whose last write did not
// fail, else the oldest. A key refused for reasons of its own (a webhook, a
// limit of its namespace) then never keeps the server looking down for the
// others.
func (s *sched) probeEntry() *entry {
	var best, fallback *entry
	for _, en := range s.ready {
		if en.failed {
			continue
		}
		if !s.blame.suspect(en.ns) && (best == nil || (readyOrder{}).less(en, best)) {
			best = en
		}
		if fallback == nil || (readyOrder{}).less(en, fallback) {
			fallback = en
		}
	}
	return cmp.Or(best, fallback, s.ready[0])
}

// earliest returns the earlier of a and b, a zero time meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// promote ends the timed states that have passed by now: an entry with
// writes queued becomes ready, at its place in the age order as usual;
// one with none is forgotten.
func (s *sched) promote(now time.Time) {
	for len(s.timed) > 0 && !s.timed[0].readyAt.After(now) {
		s.settle(s.timed[0])
	}
}

// releaseDelayed makes every entry that waits for its interval with writes
// queued ready at once (a Flush does not wait out intervals). The entries
// with none stay, to remember their key's last write, and so do those held
// by the server's Retry-After or backing off after a failure of their own.
// It reports whether it released any.
func (s *sched) releaseDelayed() bool {
	var spaced []*entry
	for _, en := range s.timed {
		if en.state == stSpaced && len(en.queue) > 0 {
			spaced = append(spaced, en)
		}
	}
	for _, en := range spaced {
		s.move(en, stReady, time.Time{})
	}
	return len(spaced) > 0
}

// queued returns the events waiting in en's queue.
func queued(en *entry) int64 {
	var n int64
	for _, it := range en.queue {
		n += it.n
	}
	return n
}

// flushing reports whether a Flush waits for one of en's queued writes.
func flushing(en *entry) bool {
	for _, it := range en.queue {
		if len(it.waiters) > 0 {
			return true
		}
	}
	return false
}

// visit calls f for every write queued or under way (task non-nil for the
// one under way).
func (s *sched) visit(f func(it *item, t *task)) {
	for _, en := range s.entries {
		if en.busy != nil {
			f(en.busy.it, en.busy)
		}
		for _, it := range en.queue {
			f(it, nil)
		}
	}
}

// clear forgets every queued write (the engine stopped).
func (s *sched) clear() {
	clear(s.entries)
	s.ready, s.timed, s.held = nil, nil, nil
	s.queued = [numStates]int64{}
	s.pendingEvents, s.pendingWrites = 0, 0
	s.busy = nil
	s.sinceSum = 0
}

// stats fills the scheduler's part of st.
func (s *sched) stats(st *Stats, now time.Time) {
	st.Pending = s.pendingEvents
	st.Server = ServerHealthy
	switch {
	case s.health.down:
		st.Server = ServerProbing
	case now.Before(s.shedUntil):
		st.Server = ServerShedding
	}
	st.Probes = s.health.probes
	st.RateCuts = s.pace.cuts + s.pace.trims
	st.WriteRate = s.pace.current(now)
	// The events held by a Retry-After, and when the server, the window
	// or the write budget holds the rest, those: not the keys waiting for
	// their interval or backing off after a failure of their own.
	st.HeldBack = s.queued[stHeld]
	if s.heldBack || s.health.down {
		st.HeldBack += s.queued[stReady] + s.queued[stBusy]
	}
	if t := s.oldest(); !t.IsZero() {
		st.OldestPending = now.Sub(t)
	}
}

// oldest returns when the oldest event not yet written was added (zero if
// none).
func (s *sched) oldest() time.Time {
	var t time.Time
	s.visit(func(it *item, _ *task) {
		if t.IsZero() || it.since.Before(t) {
			t = it.since
		}
	})
	return t
}

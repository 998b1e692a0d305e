package sink

import (
	"cmp"
	"container/heap"
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
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
	interval   time.Duration // Options.KeyInterval: between the starts of two writes of a key
	base, max  time.Duration // backoff of the server-wide probe and of a failing key
	rnd        *rand.Rand    // jitter

	// entries holds every key in a state other than stNone, and only
	// those.
	entries map[string]*entry
	// ready holds exactly the entries in stReady, oldest waiting event
	// first (ties: first come, first served, by seq).
	ready entryHeap[readyOrder]
	seq   uint64
	// timed holds exactly the entries in stSpaced, stBackoff and stHeld,
	// soonest readyAt first.
	timed entryHeap[timedOrder]
	// held holds exactly the entries in stHeld, oldest waiting event
	// first: one older than every ready entry goes before its Retry-After
	// has passed (see next).
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
	// inFlight is the number of entries in stBusy.
	inFlight int

	// queued[st] is the number of events (an item stands for item.n) in
	// the queues of the entries in state st; queued[stNone] is zero.
	// pendingEvents is their sum and pendingWrites the number of items.
	queued        [numStates]int64
	pendingEvents int64
	pendingWrites int  // what MaxPending bounds
	heldBack      bool // the last next() found ready writes but was held by health, window or rate
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

// keyState is where a key is. An entry's queue, busy and heap indexes
// follow from its state:
//
//	state      busy    queue      heaps
//	stNone     nil     empty      none (the entry is not in entries)
//	stReady    nil     not empty  ready
//	stBusy     set     any        none (a worker writes busy.it)
//	stSpaced   nil     any        timed (its key's interval, until readyAt; empty: only remembers the key)
//	stBackoff  nil     not empty  timed (its own last write failed; until readyAt)
//	stHeld     nil     not empty  timed and held (a 429's Retry-After, until readyAt)
//
// Waiting for the server is not a state of a key: while the server is seen
// down, ready keys stay ready and next lets one probe go at a time.
type keyState uint8

const (
	stNone keyState = iota
	stReady
	stBusy
	stSpaced
	stBackoff
	stHeld
	numStates
)

var stateNames = [numStates]string{"none", "ready", "busy", "spaced", "backoff", "held"}

func (st keyState) String() string { return stateNames[st] }

// entry is the state of one key (one correlation key: one event on the
// server, or a few when the correlator forgot it and started anew).
type entry struct {
	key   string
	ns    string // the namespace of its events: failures are judged per namespace too
	state keyState
	queue []*item // waiting writes, oldest first; neighbours have different event names
	busy  *task   // the write under way, in stBusy
	// failures counts the consecutive tries of this key charged to it
	// (see blame); it is dropped after maxTries.
	failures int
	// failed: the last write of this key failed (it is then not chosen as
	// a probe while another key waits); sheds: consecutive 429s with
	// Retry-After (only the first cuts the rate).
	failed   bool
	failedAt time.Time // when its last write failed (zero: it did not)
	sheds    int
	// order is the ready or held order: unix ns of the oldest waiting
	// event; seq breaks ties in ready.
	order   int64
	seq     uint64
	readyAt time.Time // in timed: when it is ready again
	// Indexes in the heaps, -1 when not in them.
	idx, tidx, hidx int
}

// item is one write: the newest state of one event and what it stands for.
type item struct {
	ev      *v1.Event
	patch   []byte
	create  bool       // the API server does not have this event yet
	n       int64      // events this write stands for (itself plus coalesced ones)
	since   time.Time  // when the oldest of those events was added
	waiters []*barrier // Flush calls waiting for this write to finish
	// sent: an earlier try of this write failed in a way that may have
	// reached the server (a lost answer); a Create answered AlreadyExists
	// then found its own event.
	sent bool
}

// task is one write handed to a worker.
type task struct {
	en     *entry
	it     *item
	probe  bool      // the one request allowed while the server is down
	sentAt time.Time // when it was dispatched
	// abandoned is set (under the engine's lock) by Stop when it gave up
	// waiting for this write; the worker then accounts nothing.
	abandoned bool
}

// outcome is what happened to a task's write.
type outcome int

const (
	outWritten   outcome = iota // stored
	outDropped                  // refused for good by the server or the sink (per key)
	outFailed                   // failed, may work later: see fault
	outAbandoned                // the engine stopped under it
)

// fault tells what kind of failure an outFailed write met; blame decides
// whose it is.
type fault int

const (
	faultStatus    fault = iota // the server answered 5xx (or 408): a webhook, etcd, the server itself
	faultTransport              // no answer: a transport error, a timeout, an unknown error
	faultLimited                // 429 without Retry-After: a limit (EventRateLimit), or overload
	faultShed                   // 429 with Retry-After: priority and fairness shedding load
)

// result is what the engine tells finish about a write.
type result struct {
	out        outcome
	fault      fault         // for outFailed
	retryAfter time.Duration // for outFailed: what the server asked for, or zero
}

// verdict is what finish tells the engine to account.
type verdict int

const (
	vDone      verdict = iota // written, dropped (the engine's reason) or abandoned, as the result said
	vRetry                    // put back to wait
	vExhausted                // dropped: maxTries failures of its own
)

func newSched(o Options, rnd *rand.Rand, now time.Time) *sched {
	s := &sched{
		maxTries:   o.MaxTries,
		maxPending: o.MaxPending,
		interval:   o.KeyInterval,
		base:       o.BaseDelay,
		max:        o.MaxDelay,
		rnd:        rnd,
		entries:    map[string]*entry{},
		window:     1, // grows with the first successes, as TCP's initial window
		workers:    o.Workers,
		t0:         now,
		idleSince:  now,
	}
	s.pace.init(o.QPS, o.Burst, !o.DisableAdaptiveRate, now)
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
	case stBusy:
		s.inFlight--
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
		en.order, en.seq = en.queue[0].since.UnixNano(), s.seq
		heap.Push(&s.ready, en)
	case stBusy:
		s.inFlight++
	case stHeld:
		en.order = en.queue[0].since.UnixNano()
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
	if s.pendingWrites == 0 && s.inFlight == 0 && !s.idleSince.IsZero() {
		// Work again after a quiet time: the rate restarts gently if the
		// server was in trouble lately.
		s.pace.restartAfterIdle(now, now.Sub(s.idleSince))
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
	if s.inFlight >= s.window {
		s.heldBack = true
		return nil, wake
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
		s.health.probing = true
		s.health.probes++
	} else {
		s.weigh(now, nil)
		if wait := s.pace.take(now); wait > 0 {
			s.heldBack = true
			return nil, earliest(now.Add(wait), wake)
		}
	}
	var en *entry
	switch {
	case probe:
		en = s.probeEntry()
	case len(s.held) > 0 && s.held[0].order < s.ready[0].order:
		// A key held by a Retry-After whose event is older than every
		// ready one goes first: the server's load is the rate's business,
		// and holding the key longer would only put younger events ahead
		// of it.
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
	return t, time.Time{}
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
// writes queued becomes ready, ordered by its oldest waiting event as
// usual; one with none is forgotten.
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

// finish records the result of t and moves its key on. It returns what the
// engine must account (see verdict).
func (s *sched) finish(t *task, r result, now time.Time) verdict {
	en := t.en
	en.busy = nil
	s.weigh(now, t.it)
	v := vDone
	switch r.out {
	case outWritten, outDropped:
		s.answered(en, r.out == outWritten, now)
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

// answered records that the server answered a write of en (stored it, or
// refused it for a reason of its own): it is up.
func (s *sched) answered(en *entry, written bool, now time.Time) {
	en.failures, en.failed, en.failedAt, en.sheds = 0, false, time.Time{}, 0
	s.blame.success(en.ns, !s.health.down, now)
	if s.health.down && s.health.overloaded {
		s.pace.restartAfterPause(now)
	}
	s.health.up()
	s.pace.resume(now)
	if written {
		s.pace.success(now)
	}
	s.window = min(s.workers, s.window+1)
}

// failed handles a write that failed and may work later: whose failure it
// is (see blameOf) decides who waits. It requeues the write, or returns
// vExhausted when the key has failed maxTries times.
func (s *sched) failed(t *task, r result, now time.Time) verdict {
	en := t.en
	defer func() { en.failed, en.failedAt = true, now }()
	if t.probe {
		s.health.probing = false
	}
	// The Retry-After is honoured up to MaxDelay; without one, a key
	// waits BaseDelay or its backoff.
	wait := min(cmp.Or(r.retryAfter, s.base), s.max)
	switch s.blameOf(t, r, now, wait) {
	case byShedding:
		// Not charged: load shedding never exhausts a key. The rate is
		// cut (once per round, and only at the key's first refusal), the
		// other keys go on at that rate, and this one is held for the
		// Retry-After.
		en.sheds++
		if en.sheds == 1 {
			s.pace.shed(now, t.sentAt, wait)
		}
		s.shedUntil = now.Add(max(wait, time.Second))
		s.requeue(en, t.it)
		s.move(en, stHeld, now.Add(wait))
		return vRetry
	case byKey:
		en.failures++
		if en.failures >= s.maxTries {
			en.failures = 0
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
		age = max(age, now.Sub(time.Unix(0, s.ready[0].order)))
	}
	s.health.fail(now, t.sentAt, t.probe, overload, r.retryAfter, age, s.base, s.max, s.rnd)
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

// blameOf decides whose fault a failed write is (see the package
// documentation's table). It also refunds the tries charged to keys whose
// failures turn out to be the server's.
func (s *sched) blameOf(t *task, r result, now time.Time, wait time.Duration) whose {
	switch {
	case r.fault == faultShed && !t.probe && !s.health.down && s.pace.adaptive && s.pace.answered(now, max(wait, time.Second)):
		return byShedding
	case t.probe, s.health.down, r.fault == faultShed:
		// A failed probe is the server's; so is a write that was under
		// way when the server was seen down, and a 429 with Retry-After
		// when nothing was accepted lately (an outage answered 429).
		s.blame.note(t.en)
		return byServer
	}
	w, refund := s.blame.failure(t.en, t.sentAt, r.fault == faultTransport, s.readyOutside)
	for _, en := range refund {
		en.failures = max(0, en.failures-1)
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
	if s.pendingWrites == 0 && s.inFlight == 0 {
		s.idleSince = now
		s.sinceSum = 0 // nothing waits: no rounding left behind either
	}
}

// requeue puts it back at the front of en's queue, merged with the next
// write when that is the same event (which then carries it).
func (s *sched) requeue(en *entry, it *item) {
	it.sent = true
	if len(en.queue) > 0 && en.queue[0].ev.Name == it.ev.Name {
		nx := en.queue[0]
		s.dequeue(en, nx)
		nx.n += it.n
		nx.create = nx.create || it.create
		nx.sent = true
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
	s.pendingEvents, s.pendingWrites, s.inFlight = 0, 0, 0
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
	st.RateCuts = s.pace.cuts
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

// health is the shared view of the API server: up, or down with one probe
// at a time after an exponential backoff.
type health struct {
	down       bool
	probing    bool      // the probe is under way
	probeAt    time.Time // when the next probe may go
	failures   int       // consecutive escalations of the backoff
	since      time.Time // when the server was last seen failing (the last escalation)
	probes     int64     // probes sent
	overloaded bool      // down for a 429 (the server shed everything), not an outage
}

// raJitter is the most, as a fraction of the Retry-After, that an engine
// adds to it before its probe, for events just recorded; events that have
// waited longer add less (see fail).
const raJitter = 0.5

// fail records a server-wide failure of a request sent at sentAt. The
// backoff grows only with failures that tell something new: the probe's, or
// the first one, or one of a request sent after the last escalation; the
// others are requests that were under way when the server went down.
//
// overload tells a 429; age is how long the oldest of the engine's waiting
// events has waited.
func (h *health) fail(now, sentAt time.Time, probe, overload bool, retryAfter, age, base, max time.Duration, rnd *rand.Rand) {
	if h.down && !probe && sentAt.Before(h.since) {
		return
	}
	h.down = true
	h.since = now
	h.overloaded = overload
	var d time.Duration
	if ra := min(retryAfter, max); ra > 0 {
		// The server said when to come back: then, and a little later at
		// random, so that the engines it told the same thing do not all
		// come back in the same instant. The random part is up to
		// raJitter of the Retry-After for new events and shrinks as
		// 1s/(1s+age): engines whose events have waited longest come back
		// first, so that a fleet drains its backlog oldest first. The
		// exponential backoff does not grow: the server is answering,
		// and the adaptive rate deals with its load.
		j := float64(ra) * raJitter * rnd.Float64() * float64(time.Second) / float64(time.Second+age)
		d = ra + time.Duration(j)
	} else {
		h.failures++
		d = backoff(h.failures, base, max, rnd)
	}
	h.probeAt = now.Add(d)
}

func (h *health) up() {
	h.down, h.probing, h.failures = false, false, 0
}

// backoff is base·2^(n-1) capped at max, with jitter in [d/2, d].
func backoff(n int, base, max time.Duration, rnd *rand.Rand) time.Duration {
	d := max
	if n-1 < 32 {
		if x := base << (n - 1); x > 0 && x < max {
			d = x
		}
	}
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + time.Duration(rnd.Int64N(int64(d-half)+1))
}

// entryHeap is a heap of entries in the order O gives; each entry keeps
// its index in the heap in the field O names, so that it can be removed.
type entryHeap[O heapOrder] []*entry

// heapOrder is the order of an entryHeap and the entry field that holds an
// entry's index in it.
type heapOrder interface {
	less(a, b *entry) bool
	index(en *entry) *int
}

// readyOrder: by (order, seq), the oldest waiting first; index idx.
type readyOrder struct{}

func (readyOrder) less(a, b *entry) bool {
	if a.order != b.order {
		return a.order < b.order
	}
	return a.seq < b.seq
}
func (readyOrder) index(en *entry) *int { return &en.idx }

// timedOrder: by readyAt, soonest first; index tidx.
type timedOrder struct{}

func (timedOrder) less(a, b *entry) bool { return a.readyAt.Before(b.readyAt) }
func (timedOrder) index(en *entry) *int  { return &en.tidx }

// heldOrder: by order, the oldest waiting event first; index hidx.
type heldOrder struct{}

func (heldOrder) less(a, b *entry) bool { return a.order < b.order }
func (heldOrder) index(en *entry) *int  { return &en.hidx }

func (h entryHeap[O]) Len() int           { return len(h) }
func (h entryHeap[O]) Less(i, j int) bool { var o O; return o.less(h[i], h[j]) }
func (h entryHeap[O]) Swap(i, j int) {
	var o O
	h[i], h[j] = h[j], h[i]
	*o.index(h[i]), *o.index(h[j]) = i, j
}
func (h *entryHeap[O]) Push(x any) {
	var o O
	en := x.(*entry)
	*o.index(en) = len(*h)
	*h = append(*h, en)
}
func (h *entryHeap[O]) Pop() any {
	var o O
	old := *h
	n := len(old)
	en := old[n-1]
	old[n-1] = nil
	*o.index(en) = -1
	*h = old[:n-1]
	return en
}

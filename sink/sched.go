package sink

import (
	"cmp"
	"container/heap"
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
)

// sched is the engine's state: the writes waiting per key, the order in
// which keys are written, the shared health of the API server and the
// adaptive write rate. It is a plain state machine: it starts no goroutine
// and reads no clock (every method takes now), so that a simulation can run
// many of them deterministically. The Engine holds it under its mutex.
type sched struct {
	maxTries   int
	maxPending int
	interval   time.Duration // Options.KeyInterval: between the starts of two writes of a key
	base, max  time.Duration // backoff of the server-wide probe
	rnd        *rand.Rand    // jitter

	entries map[string]*entry
	ready   entryHeap[readyOrder] // entries with a write waiting and none under way, oldest first
	seq     uint64                // tie-break of the ready order: first come, first served
	// held holds the entries of later held by a Retry-After, oldest
	// waiting event first (see next).
	held entryHeap[heldOrder]
	// later holds the entries waiting for their key's interval (see
	// Options.KeyInterval) or a Retry-After, soonest first: with writes
	// queued, which are not ready yet, or with none, only to remember when
	// the key was last written until the interval has passed. An entry is
	// in at most one of ready and later, and in neither while its write is
	// under way.
	later entryHeap[laterOrder]

	health health
	pace   pacer

	// window caps the writes under way, as TCP's congestion window: one
	// after a server-wide failure, one more with each success, up to the
	// number of workers. A fleet of engines coming back after an outage
	// then sends one request each until the server has answered, not a
	// burst each.
	window, workers, inFlight int

	// What is waiting, in events (an item stands for item.n events).
	pendingEvents int64 // in queues (ready or not)
	pendingWrites int   // items in queues: what MaxPending bounds
	delayedEvents int64 // in queues of entries in later (their key's interval, or a Retry-After)
	heldEvents    int64 // of those, the ones held by a Retry-After
	heldBack      bool  // the last next() found ready writes but was held by health or rate
	// sinceSum is the sum over the queued items of n times since (in
	// seconds after t0): with pendingEvents it gives the total waiting of
	// the queued events, which weighs the adaptive rate.
	sinceSum float64
	t0       time.Time
	// idleSince is when the engine last had nothing queued or under way
	// (zero while it has).
	idleSince time.Time
	// shedUntil: the server shed load (a 429 while it accepted other
	// writes) until then, as Stats reports it.
	shedUntil time.Time
}

// entry is the state of one key (one correlation key: one event on the
// server, or a few when the correlator forgot it and started anew).
type entry struct {
	key      string
	queue    []*item // waiting writes, oldest first; neighbours have different event names
	busy     *task   // the write under way, if any
	failures int     // consecutive failed tries of this key
	// probeFailed: the last write of this key was a probe, and failed.
	probeFailed bool
	order       int64 // position in the ready (or held) order: unix ns of its oldest waiting event
	seq         uint64
	idx         int       // index in the ready heap, -1 when not in it
	readyAt     time.Time // in later: when the key's interval or Retry-After has passed
	lidx        int       // index in the later heap, -1 when not in it
	held        bool      // in later for the server's Retry-After, not for the key's interval
	hidx        int       // index in the held heap, -1 when not in it
}

// item is one write: the newest state of one event and what it stands for.
type item struct {
	ev      *v1.Event
	patch   []byte
	create  bool       // the API server does not have this event yet
	n       int64      // events this write stands for (itself plus coalesced ones)
	since   time.Time  // when the oldest of those events was added
	waiters []*barrier // Flush calls waiting for this write to finish
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
	outWritten      outcome = iota // stored
	outDropped                     // refused for good by the server or the sink (per key)
	outServerFailed                // transport error, timeout, 5xx, 429: the server's fault
	outAbandoned                   // the engine stopped under it
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
	return s
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
		last := en.queue[len(en.queue)-1]
		if last.ev.Name == it.ev.Name {
			// The same event on the server: the newer state carries the
			// older one's count, so it replaces it.
			s.sinceSum += float64(it.n) * last.since.Sub(s.t0).Seconds()
			s.pendingEvents += it.n
			if en.lidx >= 0 {
				s.delayedEvents += it.n
				if en.held {
					s.heldEvents += it.n
				}
			}
			it.n += last.n
			it.create = it.create || last.create
			it.waiters = last.waiters
			it.since = last.since
			en.queue[len(en.queue)-1] = it
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
		en = &entry{key: key, idx: -1, lidx: -1, hidx: -1}
		s.entries[key] = en
	}
	// Another name (or none waiting): a write of its own, after the ones
	// waiting, so that no count is lost.
	en.queue = append(en.queue, it)
	s.count(it, 1)
	s.pendingEvents += it.n
	s.pendingWrites++
	switch {
	case en.lidx >= 0:
		// It waits for the key's interval or Retry-After.
		s.delayedEvents += it.n
		if en.held {
			s.heldEvents += it.n
		}
	case en.busy == nil && en.idx < 0:
		s.push(en, it.since.UnixNano())
	}
	return true
}

func (s *sched) push(en *entry, order int64) {
	s.seq++
	en.order, en.seq = order, s.seq
	heap.Push(&s.ready, en)
}

// next returns the write to start now, if any; otherwise the time at which
// to ask again (zero: when something changes).
func (s *sched) next(now time.Time) (*task, time.Time) {
	s.heldBack = false
	s.promote(now)
	// The soonest end of a key's interval: ask again then, whatever else
	// holds the ready writes.
	var wake time.Time
	if len(s.later) > 0 {
		wake = s.later[0].readyAt
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
	if !probe && len(s.held) > 0 {
		// A key held by a Retry-After whose event is older than every
		// ready one goes first: the server's load is the rate's business,
		// and holding the key longer would only put younger events ahead
		// of it.
		en = s.releaseOlderHeld(s.ready[0].order)
	}
	if en == nil {
		en = heap.Pop(&s.ready).(*entry)
	}
	if probe && en.probeFailed && len(s.ready) > 0 {
		// The oldest key failed the last probe it was: probe with the
		// next one, so that a key whose writes fail (a poison key) does
		// not keep the server looking down for the others.
		alt := heap.Pop(&s.ready).(*entry)
		heap.Push(&s.ready, en)
		en = alt
	}
	it := en.queue[0]
	en.queue[0] = nil
	en.queue = en.queue[1:]
	s.count(it, -1)
	s.pendingEvents -= it.n
	s.pendingWrites--
	t := &task{en: en, it: it, probe: probe, sentAt: now}
	en.busy = t
	s.inFlight++
	return t, time.Time{}
}

// earliest returns the earlier of a and b, a zero time meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// promote ends the intervals that have passed by now: an entry with writes
// queued becomes ready, ordered by its oldest waiting event as usual; one
// with none is forgotten.
func (s *sched) promote(now time.Time) {
	for len(s.later) > 0 && !s.later[0].readyAt.After(now) {
		en := heap.Pop(&s.later).(*entry)
		s.delayedEvents -= queued(en)
		if en.held {
			s.heldEvents -= queued(en)
			heap.Remove(&s.held, en.hidx)
			en.held = false
		}
		if len(en.queue) > 0 {
			s.push(en, en.queue[0].since.UnixNano())
		} else if s.entries[en.key] == en {
			delete(s.entries, en.key)
		}
	}
}

// releaseDelayed makes every entry that waits for its interval with writes
// queued ready at once (a Flush does not wait out intervals). The entries
// with none stay, to remember their key's last write, and so do those held
// by the server's Retry-After. It reports whether it released any.
func (s *sched) releaseDelayed() bool {
	released := false
	kept := s.later[:0]
	for _, en := range s.later {
		if len(en.queue) == 0 || en.held {
			en.lidx = len(kept)
			kept = append(kept, en)
			continue
		}
		s.delayedEvents -= queued(en)
		en.lidx = -1
		s.push(en, en.queue[0].since.UnixNano())
		released = true
	}
	clear(s.later[len(kept):])
	s.later = kept
	heap.Init(&s.later)
	return released
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

// finish records the outcome of t. For outServerFailed, retryAfter is the
// delay the server asked for and overload tells a 429. It returns what the
// caller must account: the events written, dropped as retries exhausted
// (exhausted), or put back to wait (requeued).
func (s *sched) finish(t *task, out outcome, retryAfter time.Duration, overload bool, now time.Time) (exhausted, requeued bool) {
	en := t.en
	en.busy = nil
	s.inFlight--
	s.weigh(now, t.it)
	switch out {
	case outWritten, outDropped:
		en.probeFailed = false
		// The server answered: it is up.
		if s.health.down && s.health.overloaded {
			s.pace.restartAfterPause(now)
		}
		s.health.up()
		s.pace.resume(now)
		if out == outWritten {
			s.pace.success(now)
		}
		s.window = min(s.workers, s.window+1)
		en.failures = 0
	case outServerFailed:
		// The Retry-After is honoured up to MaxDelay, as for a probe;
		// without one, a refused key waits BaseDelay.
		wait := min(cmp.Or(retryAfter, s.base), s.max)
		if overload && !t.probe && !s.health.down && s.pace.adaptive && s.pace.answered(now, max(wait, time.Second)) {
			// The server sheds load but accepts other writes: the rate
			// is cut, the other keys go on at that rate, and this one
			// is held for the Retry-After (as client-go's REST client
			// would make it wait), unless it is the oldest (see next).
			// The refusal is charged to the key: one refused again and
			// again while the others are accepted meets a limit of its
			// own (an admission plugin limiting events per object), and
			// is dropped after MaxTries instead of taking the tokens for
			// good; its repeated refusals do not cut the rate again.
			en.failures++
			if en.failures >= s.maxTries {
				en.failures = 0
				exhausted = true
				break
			}
			if en.failures == 1 {
				s.pace.shed(now, t.sentAt, wait)
			}
			s.shedUntil = now.Add(max(wait, time.Second))
			s.requeue(en, t.it)
			if wait > 0 {
				s.hold(en, now.Add(wait))
			} else {
				s.push(en, en.queue[0].since.UnixNano())
			}
			return false, true
		}
		if t.probe {
			s.health.probing = false
		}
		age := now.Sub(t.it.since)
		if len(s.ready) > 0 {
			age = max(age, now.Sub(time.Unix(0, s.ready[0].order)))
		}
		s.health.fail(now, t.sentAt, t.probe, overload, retryAfter, age, s.base, s.max, s.rnd)
		s.window = 1
		defer s.pace.pause(now) // after a cut, which measures up to now
		if overload {
			s.pace.overload(now, t.sentAt)
		} else {
			s.pace.failed(now)
		}
		// A failed probe is the server's failure, not the key's: while
		// the server is down events wait, however long (MaxPending bounds
		// them). So is a 429 when nothing is accepted (a shed 429 is
		// charged above). A key that fails otherwise while the server
		// answers the others is charged, and dropped after maxTries.
		if !t.probe && !overload {
			en.failures++
		}
		if en.failures >= s.maxTries {
			en.failures = 0
			exhausted = true
			break
		}
		s.requeue(en, t.it)
		en.probeFailed = t.probe
		s.push(en, en.queue[0].since.UnixNano())
		return false, true
	case outAbandoned:
		if t.probe {
			s.health.probing = false
		}
	}
	defer s.noteIdle(now)
	if (out == outWritten || out == outDropped) && s.interval > 0 && s.entries[en.key] == en {
		// The server answered about this key: its next write waits until
		// the interval since this one was sent has passed, unless a Flush
		// waits for it. An entry with nothing queued stays until then, to
		// remember when its key was written.
		if at := t.sentAt.Add(s.interval); at.After(now) && !flushing(en) {
			en.readyAt = at
			heap.Push(&s.later, en)
			s.delayedEvents += queued(en)
			return exhausted, false
		}
	}
	if len(en.queue) > 0 {
		if en.idx < 0 {
			s.push(en, en.queue[0].since.UnixNano())
		}
	} else if s.entries[en.key] == en {
		delete(s.entries, en.key)
	}
	return exhausted, false
}

// noteIdle records when the engine ran out of work.
func (s *sched) noteIdle(now time.Time) {
	if s.pendingWrites == 0 && s.inFlight == 0 {
		s.idleSince = now
		s.sinceSum = 0 // nothing waits: no rounding left behind either
	}
}

// hold puts en, with writes queued and in no heap, in later until at: the
// server's Retry-After. It may go before then if its event is older than
// every ready one (see next).
func (s *sched) hold(en *entry, at time.Time) {
	en.readyAt, en.held = at, true
	en.order = en.queue[0].since.UnixNano()
	heap.Push(&s.later, en)
	heap.Push(&s.held, en)
	q := queued(en)
	s.delayedEvents += q
	s.heldEvents += q
}

// releaseOlderHeld takes out of later the held entry with the oldest
// waiting event, if that event is older than order (unix ns), and returns
// it; otherwise nil.
func (s *sched) releaseOlderHeld(order int64) *entry {
	if len(s.held) == 0 || s.held[0].order >= order {
		return nil
	}
	en := heap.Pop(&s.held).(*entry)
	heap.Remove(&s.later, en.lidx)
	q := queued(en)
	s.delayedEvents -= q
	s.heldEvents -= q
	en.held = false
	return en
}

// requeue puts it back at the front of en's queue, merged with the next
// write when that is the same event (which then carries it).
func (s *sched) requeue(en *entry, it *item) {
	s.pendingEvents += it.n
	if len(en.queue) > 0 && en.queue[0].ev.Name == it.ev.Name {
		nx := en.queue[0]
		s.count(nx, -1)
		nx.n += it.n
		nx.create = nx.create || it.create
		nx.waiters = append(nx.waiters, it.waiters...)
		if it.since.Before(nx.since) {
			nx.since = it.since
		}
		s.count(nx, 1)
		return
	}
	s.count(it, 1)
	en.queue = append(en.queue, nil)
	copy(en.queue[1:], en.queue)
	en.queue[0] = it
	s.pendingWrites++
}

// clear forgets every queued write (the engine stopped).
func (s *sched) clear() {
	clear(s.entries)
	s.ready, s.later, s.held = nil, nil, nil
	s.pendingEvents, s.pendingWrites, s.delayedEvents, s.heldEvents = 0, 0, 0, 0
	s.sinceSum = 0
}

// oldest returns when the oldest event not yet written was added (zero if
// none).
func (s *sched) oldest() time.Time {
	var t time.Time
	for _, en := range s.entries {
		if en.busy != nil && (t.IsZero() || en.busy.it.since.Before(t)) {
			t = en.busy.it.since
		}
		for _, it := range en.queue {
			if t.IsZero() || it.since.Before(t) {
				t = it.since
			}
		}
	}
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

// laterOrder: by readyAt, soonest first; index lidx.
type laterOrder struct{}

func (laterOrder) less(a, b *entry) bool { return a.readyAt.Before(b.readyAt) }
func (laterOrder) index(en *entry) *int  { return &en.lidx }

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

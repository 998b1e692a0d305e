// The state of one key (keyState, entry, item, task), the results a write
// can have (outcome, fault, result, verdict), and the heaps that order keys.

package sink

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

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
	// (see blame); it is dropped after maxTries. suspectTries are those of
	// them charged while the key was a suspect (no evidence yet whose the
	// failure was): all are refunded if a second key shows it was the
	// server's.
	failures, suspectTries int
	// failed: the last write of this key failed (it is then not chosen as
	// a probe while another key waits); sheds: consecutive 429s with
	// Retry-After (only the first cuts the rate).
	failed   bool
	failedAt time.Time // when its last write failed (zero: it did not)
	sheds    int
	// shedFor is the hold of the last of them: the key's place in the
	// age order is as if its events had been added that much later (see
	// ageOrder).
	shedFor time.Duration
	// order is the ready or held order (see ageOrder); seq breaks ties in
	// ready.
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
	// stored is set (under the engine's lock) by the worker when the
	// server stored the write and only OnWritten is left to run: a Stop
	// that gives up meanwhile counts it written, not abandoned.
	stored bool
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
	// unsent: no request went (the engine's context had ended, or the
	// request could not be built): the outcome says nothing of the server.
	unsent bool
}

// verdict is what finish tells the engine to account.
type verdict int

const (
	vDone      verdict = iota // written, dropped (the engine's reason) or abandoned, as the result said
	vRetry                    // put back to wait
	vExhausted                // dropped: maxTries failures of its own
)

// entryHeap is a heap of entries in the order O gives; each entry keeps
// its index in the heap in the field O names, so that it can be removed.
type entryHeap[O heapOrder] []*entry

// heapOrder is the order of an entryHeap and the entry field that holds an
// entry's index in it.
type heapOrder interface {
	less(a, b *entry) bool
	index(en *entry) *int
}

// ageOrder is the key's place in the ready and held order: the unix ns
// of its oldest waiting event, moved back by the hold of its last 429 with
// Retry-After (none once it is answered). A refused key then goes after
// the events added within its Retry-After after its own (sent before them,
// it would meet the overload that refused it), and still before younger
// ones: across batches, the old events go first. In the fleet simulation
// with each event at its own instant (sink's TestFleetSimulation), a key
// that went first again at the next token was refused again 12-20% of
// the time, more often than a first try (8-13%); moved back by its
// Retry-After, 2-9%.
func (en *entry) ageOrder() int64 {
	return en.queue[0].since.UnixNano() + int64(en.shedFor)
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

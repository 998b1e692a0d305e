package correlator

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/golang/groupcache/lru"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/heraldk8s/herald/internal/eventkey"
	"github.com/heraldk8s/herald/internal/eventname"
)

// errNilEvent is returned by EventCorrelate for a nil event.
var errNilEvent = errors.New("correlator: event is nil")

// EventCorrelator aggregates, counts and rate-limits events before they are
// written: it combines similar events that differ only in their message
// once too many occur, counts repeats of the same event (and builds the
// patch that updates the existing event), and skips events whose source
// and object exceed their rate. See the package documentation for the
// stages and for how it differs from client-go's.
//
// It takes the place of client-go's tools/record EventCorrelator, with its
// name, constructors and methods (herald's record.EventCorrelator is this
// type), and herald's broadcaster runs one, backed by three LRU caches, for
// each sink.
// EventCorrelate and UpdateState are client-go's methods; Stats and
// UpdateStateForWrite are herald additions for a writer that counts outcomes
// and coalesces writes by key.
//
// An EventCorrelator is safe for concurrent use. Build it with
// [NewEventCorrelator] or [NewEventCorrelatorWithOptions]; the zero value is
// not usable.
type EventCorrelator struct {
	clock          clock.PassiveClock
	keyFunc        EventAggregatorKeyFunc     // nil: EventAggregatorByReasonFunc
	messageFunc    EventAggregatorMessageFunc // nil: EventAggregatorByReasonMessageFunc
	spamKeyFunc    EventSpamKeyFunc           // nil: defaultSpamKey or spamKeyWithoutReason
	spamWithReason bool
	messageLimit   int // of combined messages, in bytes

	mu   sync.Mutex
	agg  *aggregator // nil: aggregation off
	obs  *lru.Cache  // correlation key -> *observation
	spam *spamFilter // nil: spam filter off
	st   Stats       // counters; evictions and sizes are filled in by Stats
}

// observation is what the correlator remembers of an event it has seen.
// count 0 means "not seen", as in client-go.
type observation struct {
	count int32
	first metav1.Time
	name  string
	rv    string
}

// EventCorrelateResult is the result of [EventCorrelator.EventCorrelate].
type EventCorrelateResult struct {
	// Event is the event to write, after correlation: a new event, never
	// the argument (which is not modified). It shares the argument's maps
	// and slices (annotations, owner references, managed fields): do not
	// modify them. Nil if Skip.
	Event *v1.Event
	// Patch, if not nil, is the strategic-merge patch (count, lastTimestamp
	// and message) that updates the existing event on the server: it is set
	// when the event was seen before, and then Event has the remembered
	// name and a Count one more than the remembered one. Nil if Skip.
	Patch []byte
	// Skip reports that the event must not be written: its spam key has
	// no token left.
	Skip bool

	// Key is the correlation key under which the event's count is kept:
	// the aggregate group's key for a combined event, the event key
	// otherwise. Two results with the same Key update the same event on
	// the server, so a writer may coalesce them into the last one. It is
	// an opaque string, set even if Skip. Herald addition.
	Key string
	// Aggregated reports that this occurrence was folded into a combined
	// "(combined from similar events)" event, set even if Skip. Herald
	// addition.
	Aggregated bool
}

// resultBox holds a result, its event and (if it is short) its patch in one
// allocation.
type resultBox struct {
	res   EventCorrelateResult
	ev    v1.Event
	patch [128]byte
}

// Stats are an EventCorrelator's counters since it was made. Every
// correlated occurrence is counted once in Correlated, and at most once in
// Aggregated or Filtered.
type Stats struct {
	// Correlated counts occurrences correlated (non-nil events).
	Correlated uint64
	// Aggregated counts occurrences folded into a combined event and not
	// skipped.
	Aggregated uint64
	// Filtered counts occurrences skipped by the spam filter, aggregated
	// or not.
	Filtered uint64

	// AggregateEvictions, ObserveEvictions and SpamEvictions count the
	// entries evicted from each full cache: aggregation records (the
	// message set of a group starts again), observations (a later repeat
	// is created anew, with count 1) and token buckets (a full burst is
	// allowed again).
	AggregateEvictions, ObserveEvictions, SpamEvictions uint64
	// AggregateEntries, ObserveEntries and SpamEntries are the current
	// numbers of entries of the caches.
	AggregateEntries, ObserveEntries, SpamEntries int
}

// NewEventCorrelator returns an EventCorrelator with the default options and
// the given clock: like NewEventCorrelatorWithOptions(CorrelatorOptions{Clock: clock}).
//
// By default:
//   - Events that differ only in their message are combined into one
//     event once 10 distinct messages occur within 10 minutes of each other.
//   - Repeats of the same event increase the count of one event.
//   - A source may send a burst of 25 events about an object with one
//     type and reason, refilled at one event per 5 minutes.
func NewEventCorrelator(clock clock.PassiveClock) *EventCorrelator {
	return NewEventCorrelatorWithOptions(CorrelatorOptions{Clock: clock})
}

// NewEventCorrelatorWithOptions returns an EventCorrelator configured by
// options; zero fields mean their defaults. Combined messages are cut to
// 1024 bytes.
func NewEventCorrelatorWithOptions(options CorrelatorOptions) *EventCorrelator {
	return NewWithMessageLimit(options, defaultMessageLimit)
}

// NewWithMessageLimit is NewEventCorrelatorWithOptions with combined
// messages cut to messageLimit bytes (the broadcaster's message limit); a
// limit of zero or less means 1024.
func NewWithMessageLimit(options CorrelatorOptions, messageLimit int) *EventCorrelator {
	o := options.withDefaults()
	if messageLimit <= 0 {
		messageLimit = defaultMessageLimit
	}
	c := &EventCorrelator{
		clock:          o.Clock,
		keyFunc:        o.KeyFunc,
		messageFunc:    o.MessageFunc,
		spamKeyFunc:    o.SpamKeyFunc,
		spamWithReason: !o.SpamKeyWithoutReason,
		messageLimit:   messageLimit,
		obs:            lru.New(o.LRUCacheSize),
	}
	c.obs.OnEvicted = func(lru.Key, interface{}) { c.st.ObserveEvictions++ }
	if !o.DisableAggregation {
		c.agg = newAggregator(o.LRUCacheSize, o.MaxEvents, o.MaxIntervalInSeconds)
	}
	if !o.DisableSpamFilter {
		c.spam = newSpamFilter(o.LRUCacheSize, o.BurstSize, o.QPS)
	}
	return c
}

// EventCorrelate aggregates, counts and filters newEvent as if it occurred
// at the time of the options' clock, and returns the event to write. newEvent is not modified. The
// errors are for a nil event, and one wrapping [ErrPanicked] when a
// function of the options panicked.
//
// The stages run in client-go's order:
//
//  1. Aggregation: if newEvent is the MaxEvents-th distinct local key
//     (message) of its aggregate key within the window, or a new one once
//     that happened, it is replaced by the combined event
//     (Result.Aggregated).
//  2. Observation: if the (possibly combined) event was seen before, it
//     takes the name, resource version and first timestamp remembered for
//     it, its count becomes the remembered count plus one, and a patch is
//     built. The new count is remembered even if the next stage skips the
//     event, so a later write carries it.
//  3. Spam filter: the event takes a token from its spam key's bucket, or is
//     skipped (Result.Skip) if there is none. No patch is built for a
//     skipped event.
//
// The key and message functions of the options are called without the
// correlator's lock held. If one panics, the panic is recovered and
// EventCorrelate returns an error wrapping [ErrPanicked] that names the
// function; the occurrence is then not correlated: no counter of [Stats]
// and no observation or token bucket keeps a trace of it, with two
// exceptions. MessageFunc and SpamKeyFunc run after the aggregation stage,
// which keeps the occurrence's message among the group's distinct messages
// (it did occur). And SpamKeyFunc runs after the observation stage, as
// client-go's does: a first occurrence's observation was added to the
// cache by then (so that an occurrence correlated meanwhile counts on it),
// and it may have evicted the least recently used observation, whose next
// occurrence is then a new event.
func (c *EventCorrelator) EventCorrelate(newEvent *v1.Event) (*EventCorrelateResult, error) {
	return c.correlateAt(c.clock.Now(), newEvent)
}

// correlateAt is EventCorrelate at the time now.
func (c *EventCorrelator) correlateAt(now time.Time, newEvent *v1.Event) (*EventCorrelateResult, error) {
	if newEvent == nil {
		return nil, errNilEvent
	}
	var aggregateKey, localKey string
	if c.agg != nil {
		if c.keyFunc != nil {
			var err error
			if aggregateKey, localKey, err = callKeyFunc(c.keyFunc, newEvent); err != nil {
				return nil, err
			}
		} else {
			aggregateKey, localKey = eventkey.Aggregate(newEvent), newEvent.Message
		}
	}
	builtinSpam := c.spam != nil && c.spamKeyFunc == nil
	var spamKey string
	sharedSpamKey := false
	switch {
	case !builtinSpam:
	case c.agg != nil && c.keyFunc == nil:
		// The default spam key is a prefix of the default aggregate key.
		spamKey, sharedSpamKey = eventkey.SpamOfAggregate(aggregateKey, c.spamWithReason), true
	default:
		spamKey = eventkey.Spam(newEvent, c.spamWithReason)
	}

	c.mu.Lock()
	aggregated, key := false, ""
	if c.agg != nil {
		aggregated, key = c.agg.observe(now, aggregateKey, localKey)
	}
	var message string
	if aggregated && c.messageFunc != nil {
		// The user's function runs before the observation, outside the
		// lock, so a panic leaves nothing half done.
		c.mu.Unlock()
		var err error
		if message, err = callMessageFunc(c.messageFunc, newEvent); err != nil {
			return nil, err
		}
		c.mu.Lock()
	}
	if !aggregated {
		key = eventkey.Event(newEvent)
	}
	rec, obs, seen := c.observe(now, key, newEvent, aggregated)
	skip := false
	if builtinSpam {
		skip = !c.spam.allow(now, spamKey, sharedSpamKey)
	}
	if c.spam == nil || builtinSpam {
		c.count(skip, aggregated)
	}
	c.mu.Unlock()
	if skip {
		return &EventCorrelateResult{Skip: true, Key: key, Aggregated: aggregated}, nil
	}

	box := new(resultBox)
	ev := &box.ev
	if aggregated {
		if c.messageFunc == nil {
			message = EventAggregatorByReasonMessageFunc(newEvent)
		}
		fillAggregate(ev, newEvent, now, obs.name, eventname.Valid(message, c.messageLimit))
	} else {
		*ev = *newEvent
	}
	ev.Name = obs.name
	ev.ResourceVersion = obs.rv
	ev.FirstTimestamp = obs.first
	ev.Count = obs.count

	if c.spam != nil && !builtinSpam {
		// A custom spam key function sees the event as client-go's does:
		// after aggregation and observation.
		spamKey, err := callSpamKeyFunc(c.spamKeyFunc, ev)
		c.mu.Lock()
		if err != nil {
			c.unobserve(rec, obs.count, seen)
			c.mu.Unlock()
			return nil, err
		}
		skip = !c.spam.allow(now, spamKey, false)
		c.count(skip, aggregated)
		c.mu.Unlock()
		if skip {
			box.res = EventCorrelateResult{Skip: true, Key: key, Aggregated: aggregated}
			return &box.res, nil
		}
	}

	box.res = EventCorrelateResult{Event: ev, Key: key, Aggregated: aggregated}
	if seen {
		buf := box.patch[:0]
		if n := patchSize(ev.Message); n > len(box.patch) {
			buf = make([]byte, 0, n)
		}
		box.res.Patch = appendPatch(buf, ev.Count, ev.LastTimestamp, ev.Message)
	}
	return &box.res, nil
}

// ErrPanicked is wrapped by the error [EventCorrelator.EventCorrelate]
// returns when a function of the
// [CorrelatorOptions] (KeyFunc, MessageFunc or SpamKeyFunc) panicked. The
// error's text names the function and the panic value. The correlator stays
// usable: the occurrence is simply not correlated. herald's broadcaster
// counts such an event as dropped. Herald addition (client-go crashes).
var ErrPanicked = errors.New("correlator: option function panicked")

func panicked(fn string, v any) error {
	return fmt.Errorf("%w: %s: %v", ErrPanicked, fn, v)
}

func callKeyFunc(f EventAggregatorKeyFunc, ev *v1.Event) (aggregateKey, localKey string, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicked("KeyFunc", v)
		}
	}()
	aggregateKey, localKey = f(ev)
	return aggregateKey, localKey, nil
}

func callMessageFunc(f EventAggregatorMessageFunc, ev *v1.Event) (msg string, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicked("MessageFunc", v)
		}
	}()
	return f(ev), nil
}

func callSpamKeyFunc(f EventSpamKeyFunc, ev *v1.Event) (key string, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicked("SpamKeyFunc", v)
		}
	}()
	return f(ev), nil
}

// observe records an occurrence under key and returns the record, what the
// event to write takes from it, and whether the key was seen before. c.mu
// is held.
func (c *EventCorrelator) observe(now time.Time, key string, ev *v1.Event, aggregated bool) (*observation, observation, bool) {
	v, ok := c.obs.Get(key)
	if ok {
		rec := v.(*observation)
		if rec.count != 0 {
			rec.count++ // int32 arithmetic, as client-go's int32(count)+1
			return rec, *rec, true
		}
		*rec = c.fresh(now, ev, aggregated)
		return rec, *rec, false
	}
	rec := c.fresh(now, ev, aggregated)
	c.obs.Add(key, &rec)
	return &rec, rec, false
}

// unobserve takes back the occurrence observe recorded in rec with the
// resulting count, when the event is not correlated after all: a repeat
// gives back its count; a first occurrence that no other one followed yet
// makes the key "not seen" again. c.mu is held.
func (c *EventCorrelator) unobserve(rec *observation, count int32, seen bool) {
	if !seen && rec.count == count {
		rec.count = 0
		return
	}
	rec.count--
}

// fresh is the observation of a first occurrence: the event's own fields,
// or those of a new combined event.
func (c *EventCorrelator) fresh(now time.Time, ev *v1.Event, aggregated bool) observation {
	if aggregated {
		return observation{
			count: 1,
			first: metav1.NewTime(now),
			name:  aggregateName(ev.InvolvedObject.Name, now),
		}
	}
	return observation{count: ev.Count, first: ev.FirstTimestamp, name: ev.Name, rv: ev.ResourceVersion}
}

// count updates the outcome counters. c.mu is held.
func (c *EventCorrelator) count(skip, aggregated bool) {
	c.st.Correlated++
	switch {
	case skip:
		c.st.Filtered++
	case aggregated:
		c.st.Aggregated++
	}
}

// UpdateState records the server's view of an event the sink has written:
// its name, resource version and first timestamp, and its count unless the
// correlator already counted more. It is keyed by the event key of event
// (so, as in client-go, the state of a combined event is recorded under the
// key of its own message, not under its group's key).
//
// Difference from client-go: the count never goes down. Writes are
// asynchronous, so by the time the server answers, later occurrences may
// already have been counted; client-go would overwrite their count with the
// server's smaller one. A nil event is ignored.
func (c *EventCorrelator) UpdateState(event *v1.Event) {
	if event == nil {
		return
	}
	c.updateStateForKey(eventkey.Event(event), event)
}

// updateStateForKey is UpdateState under an explicit correlation key, the
// Key of the EventCorrelateResult the written event came from. herald's
// delivery engine uses it, so the state of a combined event is recorded
// under its group's key, where the next occurrence looks for it (client-go
// records it under a key no later occurrence uses). A nil event is ignored.
func (c *EventCorrelator) updateStateForKey(key string, event *v1.Event) {
	if event == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updateLocked(key, event)
}

// updateLocked records the server's view of event under key.
func (c *EventCorrelator) updateLocked(key string, event *v1.Event) {
	if v, ok := c.obs.Get(key); ok {
		rec := v.(*observation)
		rec.count = max(rec.count, event.Count)
		rec.first = event.FirstTimestamp
		rec.name = event.Name
		rec.rv = event.ResourceVersion
		return
	}
	c.obs.Add(key, &observation{
		count: event.Count,
		first: event.FirstTimestamp,
		name:  event.Name,
		rv:    event.ResourceVersion,
	})
}

// UpdateStateForWrite records the server's answer to a write under an
// explicit correlation key, the Key of the EventCorrelateResult the written
// event came from, for a writer that knows the name it wrote under
// (sentName; the server's answer, event, may carry another) and that may
// hold later states of the same event still unwritten. The answer is taken
// only while the key still follows the written event:
//
//   - if the key now follows another event, because the correlator forgot
//     the written one and started a new one while the write was under way,
//     carrying the old event's count over to the new one would count
//     occurrences twice;
//   - if the correlator forgot the key, bringing it back with the answer's
//     count would hand the next occurrence a count that a later write still
//     waiting in the writer already carries (its occurrences would be
//     written twice under one count, and one of them would be in no stored
//     count): the next occurrence starts a new event instead, as after any
//     eviction.
//
// herald's delivery engine uses it. Herald addition.
func (c *EventCorrelator) UpdateStateForWrite(key, sentName string, event *v1.Event) {
	if event == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.obs.Get(key); ok && v.(*observation).name == sentName {
		c.updateLocked(key, event)
	}
}

// Stats returns a snapshot of the correlator's counters.
func (c *EventCorrelator) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.st
	s.ObserveEntries = c.obs.Len()
	if c.agg != nil {
		s.AggregateEvictions = c.agg.evictions
		s.AggregateEntries = c.agg.cache.Len()
	}
	if c.spam != nil {
		s.SpamEvictions = c.spam.evictions
		s.SpamEntries = c.spam.cache.Len()
	}
	return s
}

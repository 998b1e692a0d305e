package correlator

import (
	"sync"
	"time"

	"github.com/golang/groupcache/lru"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/heraldk8s/herald/internal/eventkey"
	"github.com/heraldk8s/herald/internal/eventname"
)

// aggregator is the unlocked aggregation core: an LRU of aggregate keys,
// each with the set of local keys seen within the window.
type aggregator struct {
	cache       *lru.Cache // aggregate key -> *aggregateRecord
	maxEvents   uint
	maxInterval time.Duration
	evictions   uint64
}

func newAggregator(size, maxEvents, maxIntervalInSeconds int) *aggregator {
	a := &aggregator{
		cache: lru.New(size),
		// The conversions are client-go's: a negative maxEvents becomes huge
		// (never aggregate).
		maxEvents:   uint(maxEvents),
		maxInterval: time.Duration(uint(maxIntervalInSeconds)) * time.Second,
	}
	a.cache.OnEvicted = func(lru.Key, interface{}) { a.evictions++ }
	return a
}

// aggregateRecord is the state of one aggregate key: the local keys seen in
// the current window, as a set ordered from least to most recently seen (a
// doubly linked list), indexed by a map once it holds more than
// smallSetSize keys (smaller sets are searched linearly, which saves the
// map of every new record).
type aggregateRecord struct {
	corrKey string    // correlation key of the combined event
	last    time.Time // last occurrence; the window slides from it
	n       int       // number of local keys
	index   map[string]*keyNode
	oldest  *keyNode
	newest  *keyNode
}

const smallSetSize = 8

type keyNode struct {
	key        string
	prev, next *keyNode // towards oldest, towards newest
}

func (r *aggregateRecord) reset() {
	clear(r.index)
	r.n = 0
	r.oldest, r.newest = nil, nil
}

func (r *aggregateRecord) find(key string) *keyNode {
	if r.index != nil {
		return r.index[key]
	}
	for n := r.newest; n != nil; n = n.prev {
		if n.key == key {
			return n
		}
	}
	return nil
}

func (r *aggregateRecord) unlink(n *keyNode) {
	if n.prev != nil {
		n.prev.next = n.next
	} else {
		r.oldest = n.next
	}
	if n.next != nil {
		n.next.prev = n.prev
	} else {
		r.newest = n.prev
	}
	n.prev, n.next = nil, nil
}

func (r *aggregateRecord) pushNewest(n *keyNode) {
	n.prev = r.newest
	if r.newest != nil {
		r.newest.next = n
	} else {
		r.oldest = n
	}
	r.newest = n
}

// touch marks key as the most recently seen local key, adding it if needed.
func (r *aggregateRecord) touch(key string) {
	if n := r.find(key); n != nil {
		if n != r.newest {
			r.unlink(n)
			r.pushNewest(n)
		}
		return
	}
	n := &keyNode{key: key}
	r.pushNewest(n)
	r.n++
	switch {
	case r.index != nil:
		r.index[key] = n
	case r.n > smallSetSize:
		r.index = make(map[string]*keyNode, 2*r.n)
		for n := r.oldest; n != nil; n = n.next {
			r.index[n.key] = n
		}
	}
}

// removeOldest drops the least recently seen local key.
func (r *aggregateRecord) removeOldest() {
	n := r.oldest
	r.unlink(n)
	r.n--
	if r.index != nil {
		delete(r.index, n.key)
	}
}

// observe records an occurrence of (aggregateKey, localKey) at now. It
// reports whether the occurrence is folded into the combined event, and if
// so the correlation key of that event.
//
// Like client-go: a record older than the window (strictly) starts afresh;
// the local key joins the set and the window restarts at now; when the set
// reaches maxEvents the occurrence is aggregated and one local key leaves
// the set. Unlike client-go, which removes an arbitrary one (Go map order),
// the least recently seen local key leaves, so results are deterministic.
func (a *aggregator) observe(now time.Time, aggregateKey, localKey string) (bool, string) {
	var r *aggregateRecord
	if v, ok := a.cache.Get(aggregateKey); ok {
		r = v.(*aggregateRecord)
		if now.Sub(r.last) > a.maxInterval {
			r.reset()
		}
	} else {
		r = &aggregateRecord{}
		a.cache.Add(aggregateKey, r)
	}
	r.touch(localKey)
	r.last = now
	if uint(r.n) < a.maxEvents {
		return false, ""
	}
	r.removeOldest()
	if r.corrKey == "" {
		r.corrKey = eventkey.Correlation(aggregateKey)
	}
	return true, r.corrKey
}

// aggregateName is the name of a combined event made at now: client-go's
// <involvedName>.<hex of now in ns>, made valid if the object name would
// make it invalid, and with a stamp from the process-wide source the
// recorder uses too, so it never equals the name of another event (with a
// frozen clock, client-go's combined event takes the name of the object's
// first event: its create fails and its patches overwrite that event).
func aggregateName(involvedName string, now time.Time) string {
	return eventname.New(involvedName, now)
}

// fillAggregate sets dst to the combined event client-go makes from ev: it
// carries neither annotations nor the reporting and action fields.
func fillAggregate(dst *v1.Event, ev *v1.Event, now time.Time, name, message string) {
	t := metav1.NewTime(now)
	*dst = v1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: ev.Namespace,
		},
		Count:          1,
		FirstTimestamp: t,
		InvolvedObject: ev.InvolvedObject,
		LastTimestamp:  t,
		Message:        message,
		Type:           ev.Type,
		Reason:         ev.Reason,
		Source:         ev.Source,
	}
}

// EventAggregator identifies similar events and combines them into a single
// event once too many distinct ones occur within an interval. It is safe
// for concurrent use. Build it with [NewEventAggregator]; the zero value is
// not usable.
//
// Differences from client-go: the mutex is not embedded (no Lock/Unlock
// methods); the local key that leaves a full set is the least recently seen
// one, not an arbitrary one; zero arguments of [NewEventAggregator] mean
// the defaults.
type EventAggregator struct {
	mu          sync.Mutex
	core        *aggregator
	keyFunc     EventAggregatorKeyFunc
	messageFunc EventAggregatorMessageFunc
	clock       clock.PassiveClock
}

// NewEventAggregator returns an EventAggregator keeping up to lruCacheSize
// aggregate keys, which combines events once maxEvents distinct local keys
// of one aggregate key occur with at most maxIntervalInSeconds between
// consecutive ones. A zero (or, for lruCacheSize, negative) argument and a
// nil function or clock mean the default (4096,
// [EventAggregatorByReasonFunc], [EventAggregatorByReasonMessageFunc],
// 10, 600, the real clock).
func NewEventAggregator(lruCacheSize int, keyFunc EventAggregatorKeyFunc, messageFunc EventAggregatorMessageFunc,
	maxEvents int, maxIntervalInSeconds int, clock clock.PassiveClock) *EventAggregator {
	o := CorrelatorOptions{
		LRUCacheSize:         lruCacheSize,
		MaxEvents:            maxEvents,
		MaxIntervalInSeconds: maxIntervalInSeconds,
		Clock:                clock,
	}.withDefaults()
	if keyFunc == nil {
		keyFunc = EventAggregatorByReasonFunc
	}
	if messageFunc == nil {
		messageFunc = EventAggregatorByReasonMessageFunc
	}
	return &EventAggregator{
		core:        newAggregator(o.LRUCacheSize, o.MaxEvents, o.MaxIntervalInSeconds),
		keyFunc:     keyFunc,
		messageFunc: messageFunc,
		clock:       o.Clock,
	}
}

// EventAggregate records newEvent and returns the event to write and its
// correlation key. If newEvent is not aggregated, that is newEvent itself
// (not a copy) and its event key; otherwise a new combined event (name
// <involvedName>.<hex stamp>, see the package documentation, count 1, first
// and last timestamp now, message from the message function cut to
// 1024 bytes, and Namespace, InvolvedObject,
// Type, Reason and Source of newEvent) and the key of the aggregate group.
// The keys are opaque strings. newEvent is not modified and must not be nil.
func (e *EventAggregator) EventAggregate(newEvent *v1.Event) (*v1.Event, string) {
	now := e.clock.Now()
	aggregateKey, localKey := e.keyFunc(newEvent)
	e.mu.Lock()
	aggregated, key := e.core.observe(now, aggregateKey, localKey)
	e.mu.Unlock()
	if !aggregated {
		return newEvent, eventkey.Event(newEvent)
	}
	out := new(v1.Event)
	msg := eventname.Valid(e.messageFunc(newEvent), defaultMessageLimit)
	fillAggregate(out, newEvent, now, aggregateName(newEvent.InvolvedObject.Name, now), msg)
	return out, key
}

package correlator

import (
	"math"
	"strings"
	"sync"
	"time"

	"github.com/golang/groupcache/lru"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// bucket is one spam key's token bucket. Its arithmetic is that of
// golang.org/x/time/rate.Limiter.AllowN(now, 1), which client-go's spam
// filter uses, so the same occurrences pass; it is just smaller (no mutex,
// no reservation bookkeeping).
type bucket struct {
	tokens float64
	last   time.Time
}

// spamFilter is the unlocked spam-filter core: an LRU of token buckets.
type spamFilter struct {
	cache     *lru.Cache // spam key -> *bucket
	burst     int
	limit     float64 // tokens per second
	evictions uint64
}

func newSpamFilter(size, burst int, qps float32) *spamFilter {
	s := &spamFilter{cache: lru.New(size), burst: burst, limit: float64(qps)}
	s.cache.OnEvicted = func(lru.Key, interface{}) { s.evictions++ }
	return s
}

// allow takes a token from key's bucket at now and reports whether there
// was one. A new bucket starts full. If shared, key is part of a larger
// string and is cloned before the cache keeps it.
func (s *spamFilter) allow(now time.Time, key string, shared bool) bool {
	var b *bucket
	if v, ok := s.cache.Get(key); ok {
		b = v.(*bucket)
	} else {
		if shared {
			key = strings.Clone(key)
		}
		b = &bucket{tokens: float64(s.burst)}
		s.cache.Add(key, b)
	}
	// advance
	last := b.last
	if now.Before(last) {
		last = now
	}
	var delta float64 // rate.Limit.tokensFromDuration
	if !(s.limit <= 0) {
		delta = now.Sub(last).Seconds() * s.limit
	}
	tokens := b.tokens + delta
	if burst := float64(s.burst); tokens > burst {
		tokens = burst
	}
	// reserve one token without waiting
	tokens--
	var wait time.Duration
	if tokens < 0 {
		wait = durationFromTokens(-tokens, s.limit)
	}
	if 1 > s.burst || wait > 0 {
		return false
	}
	b.last = now
	b.tokens = tokens
	return true
}

// durationFromTokens is rate.Limit.durationFromTokens: how long limit takes
// to produce tokens, truncated to whole nanoseconds.
func durationFromTokens(tokens, limit float64) time.Duration {
	if limit <= 0 {
		return math.MaxInt64
	}
	d := (tokens / limit) * float64(time.Second)
	if d > float64(math.MaxInt64) {
		return math.MaxInt64
	}
	return time.Duration(d)
}

// EventSourceObjectSpamFilter limits how many events a spam key (by
// default: a source, an involved object, a type and a reason) may produce:
// a token bucket per key, starting full. It is safe for concurrent use.
// Build it with [NewEventSourceObjectSpamFilter]; the zero value is not
// usable.
type EventSourceObjectSpamFilter struct {
	mu          sync.Mutex
	core        *spamFilter
	clock       clock.PassiveClock
	spamKeyFunc EventSpamKeyFunc
}

// NewEventSourceObjectSpamFilter returns a filter keeping up to lruCacheSize
// token buckets of burst tokens each, refilled at qps tokens per second. A
// zero (or, for lruCacheSize, negative) argument and a nil clock or key
// function mean the default (4096, 25, one
// per 5 minutes, the real clock, a key of the event's source, involved
// object, type and reason). Differences from client-go:
// client-go uses the arguments as given (a zero cache size is unbounded, a
// zero burst filters everything, a nil function panics), and its spam key
// has no Reason.
func NewEventSourceObjectSpamFilter(lruCacheSize, burst int, qps float32, clock clock.PassiveClock, spamKeyFunc EventSpamKeyFunc) *EventSourceObjectSpamFilter {
	o := CorrelatorOptions{LRUCacheSize: lruCacheSize, BurstSize: burst, QPS: qps, Clock: clock}.withDefaults()
	if spamKeyFunc == nil {
		spamKeyFunc = defaultSpamKey
	}
	return &EventSourceObjectSpamFilter{
		core:        newSpamFilter(o.LRUCacheSize, o.BurstSize, o.QPS),
		clock:       o.Clock,
		spamKeyFunc: spamKeyFunc,
	}
}

// Filter takes a token from event's bucket and reports whether the event
// should be skipped (true: no token left). event must not be nil.
func (f *EventSourceObjectSpamFilter) Filter(event *v1.Event) bool {
	key := f.spamKeyFunc(event)
	now := f.clock.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.core.allow(now, key, false)
}

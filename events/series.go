package events

import (
	"errors"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/golang/groupcache/lru"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/heraldk8s/herald/correlator"
	"github.com/heraldk8s/herald/internal/eventkey"
)

// Series timing and cache size.
const (
	// finishTime is how long a series (or a single event) stays open
	// without a new occurrence; a later occurrence starts a new event.
	// client-go's finishSeries forgets it between 6 and 12 minutes after
	// the last occurrence (a 6-minute sliding tick); herald uses exactly 6.
	finishTime = 6 * time.Minute
	// defaultSeriesInterval is the default WithSeriesInterval: the longest
	// a stored series count lags behind the occurrences (client-go: up to
	// 30 minutes, its refresh period).
	defaultSeriesInterval = 2 * time.Second
	// defaultCacheSize is how many open series (and single events that may
	// become one) are remembered; the least recently seen is forgotten
	// first, and its next occurrence starts a new event. client-go's cache
	// is unbounded.
	defaultCacheSize = 4096
)

// seriesCorrelator forms events.k8s.io/v1 series with client-go's key and
// states: the first occurrence of a key is created; every later one makes
// the event a series whose count and lastObservedTime are patched. It hands
// every occurrence to the engine, which writes the newest state of each key
// (see Option WithSeriesInterval), so no count is lost.
//
// A broadcaster has one, as client-go's has one cache of series: a series
// goes on across a restart of recording. Each recording session correlates
// through a seriesSession of its own, which counts what it correlated.
type seriesCorrelator struct {
	clk clock.PassiveClock

	mu      sync.Mutex
	cache   *lru.Cache // series key -> *series
	evicted uint64     // series forgotten as the cache filled
}

// seriesSession is one recording session's correlator: the broadcaster's
// series, the session's counts (the broadcaster's Stats add up its
// sessions', so each occurrence and eviction is counted in one).
type seriesSession struct {
	c  *seriesCorrelator
	st correlator.Stats // guarded by c.mu
}

// series is one open event: the first occurrence as created and how many
// occurrences it stands for.
type series struct {
	first *v1.Event // never changed once stored
	count int32
	last  time.Time // the last occurrence, by the broadcaster's clock
}

func newSeriesCorrelator(clk clock.PassiveClock, size int) *seriesCorrelator {
	c := &seriesCorrelator{clk: clk, cache: lru.New(size)}
	c.cache.OnEvicted = func(lru.Key, any) { c.evicted++ }
	return c
}

// session returns a new recording session's correlator over c's series.
func (c *seriesCorrelator) session() *seriesSession { return &seriesSession{c: c} }

var errNilEvent = errors.New("events: nil event")

// EventCorrelate returns the write for ev: a Create for the first
// occurrence of its key, else the first occurrence with its series and the
// series patch.
func (s *seriesSession) EventCorrelate(ev *v1.Event) (*correlator.EventCorrelateResult, error) {
	if ev == nil {
		return nil, errNilEvent
	}
	c := s.c
	key := seriesKey(ev)
	now := c.clk.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	s.st.Correlated++
	if v, ok := c.cache.Get(key); ok {
		open := v.(*series)
		if now.Sub(open.last) <= finishTime {
			if open.count < math.MaxInt32 {
				open.count++
			}
			open.last = now
			out := *open.first
			t := metav1.NewMicroTime(now)
			out.Series = &v1.EventSeries{Count: open.count, LastObservedTime: t}
			return &correlator.EventCorrelateResult{Key: key, Event: &out, Patch: seriesPatch(open.count, t)}, nil
		}
	}
	evicted := c.evicted
	c.cache.Add(key, &series{first: ev, count: 1, last: now})
	s.st.ObserveEvictions += c.evicted - evicted
	return &correlator.EventCorrelateResult{Key: key, Event: ev}, nil
}

// UpdateStateForWrite does nothing: a series is patched by name, and the
// server's answer changes nothing the next write needs.
func (s *seriesSession) UpdateStateForWrite(string, string, *v1.Event) {}

func (s *seriesSession) Stats() correlator.Stats {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	st := s.st
	st.ObserveEntries = s.c.cache.Len()
	return st
}

// seriesKey is client-go's key of an events.k8s.io/v1 event: its type,
// action, reason, reporting controller and instance, and the whole
// regarding and related references (a nil related is an empty one). The
// note and annotations are not in it: the first occurrence's are kept.
func seriesKey(ev *v1.Event) string {
	var rel v1.ObjectReference
	if ev.Related != nil {
		rel = *ev.Related
	}
	r := &ev.InvolvedObject
	return eventkey.Join("s", ev.Type, ev.Action, ev.Reason, ev.ReportingController, ev.ReportingInstance,
		r.Kind, r.Namespace, r.Name, string(r.UID), r.APIVersion, r.ResourceVersion, r.FieldPath,
		rel.Kind, rel.Namespace, rel.Name, string(rel.UID), rel.APIVersion, rel.ResourceVersion, rel.FieldPath)
}

// seriesPatch is the strategic-merge patch client-go sends for a series:
// {"series":{"count":N,"lastObservedTime":"<RFC 3339, microseconds, UTC>"}}.
func seriesPatch(count int32, t metav1.MicroTime) []byte {
	b := make([]byte, 0, 80)
	b = append(b, `{"series":{"count":`...)
	b = strconv.AppendInt(b, int64(count), 10)
	b = append(b, `,"lastObservedTime":"`...)
	b = t.UTC().AppendFormat(b, metav1.RFC3339Micro)
	return append(b, `"}}`...)
}

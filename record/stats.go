package record

import (
	"sync/atomic"

	"github.com/heraldk8s/herald/sink"
)

// Stats is a snapshot of a broadcaster's counters, summed over its sinks.
//
// With one sink, every call to a recorder is counted in exactly one of
// Dropped, Filtered, Coalesced, Created, Patched, Abandoned, Queued, Pending
// and InFlight:
//
//	Recorded == Dropped.Total() + Filtered + Coalesced + Created + Patched +
//	            Abandoned + Queued + Pending + InFlight
//
// (with k sinks, the events that reach the broadcaster are counted once per
// sink). Aggregated and Retried describe how events travelled, not where they
// ended, and are not part of the identity.
type Stats struct {
	// Recorded counts calls to Event, Eventf and AnnotatedEventf.
	Recorded int64
	// Filtered counts events the spam filter skipped. Their occurrences
	// still raise the count a later write of the same event carries.
	Filtered int64
	// Aggregated counts events folded into a "(combined from similar
	// events)" event and not filtered; each is written as part of that
	// event.
	Aggregated int64
	// CacheEvictions counts entries the correlators' LRU caches evicted
	// (aggregation sets, counts and spam buckets forgotten). A steady rise
	// means WithCorrelatorOptions' LRUCacheSize is too small for the number
	// of objects the controller reports on.
	CacheEvictions int64
	// Coalesced counts events that reached the API server inside a later
	// write of the same event (that write carried their count).
	Coalesced int64
	// Created and Patched count successful writes.
	Created, Patched int64
	// Retried counts failed write attempts that were scheduled again.
	Retried int64
	// Abandoned counts events still unwritten when Shutdown gave up.
	Abandoned int64
	// Queued counts events accepted by the broadcaster but not yet taken
	// by the sinks (incoming queue and sink watcher channels).
	Queued int64
	// Pending counts events waiting in the delivery engines; InFlight those
	// in a request under way.
	Pending, InFlight int64
	// Dropped counts events given up for good, by reason.
	Dropped Drops
}

// Drops counts dropped events by reason. The first four happen in the
// recorder and broadcaster; the rest in the delivery engine (see
// sink.DropReason).
type Drops struct {
	// Invalid: nil or unreferenceable object, bad event type, invalid
	// annotations.
	Invalid int64
	// QueueFull: the broadcaster's incoming queue was full.
	QueueFull int64
	// WatcherFull: a sink's watcher channel was full.
	WatcherFull int64
	// AfterShutdown: recorded after Shutdown began.
	AfterShutdown int64
	sink.Drops
}

// Total is the sum of all reasons.
func (d Drops) Total() int64 {
	return d.Invalid + d.QueueFull + d.WatcherFull + d.AfterShutdown + d.Drops.Total()
}

// The recorder-side drop reasons, as metric labels.
const (
	DropInvalid       = "invalid"
	DropQueueFull     = "queue_full"
	DropWatcherFull   = "watcher_full"
	DropAfterShutdown = "after_shutdown"
)

// ByReason returns the drops as a map from reason label to count, every
// reason present.
func (d Drops) ByReason() map[string]int64 {
	m := map[string]int64{
		DropInvalid:       d.Invalid,
		DropQueueFull:     d.QueueFull,
		DropWatcherFull:   d.WatcherFull,
		DropAfterShutdown: d.AfterShutdown,
	}
	for _, r := range sink.Reasons() {
		m[string(r)] = d.Drops.Get(r)
	}
	return m
}

// counters are the recorder-side live counters.
type counters struct {
	recorded atomic.Int64
	dropped  [numSlots]atomic.Int64 // by recorder drop slot
}

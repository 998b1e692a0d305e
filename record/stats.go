package record

import (
	"sync/atomic"

	"github.com/heraldk8s/herald/sink"
)

// Stats is a snapshot of a broadcaster's counters, summed over its sinks,
// those whose watch was stopped included.
//
// Every call to a recorder (Recorded) is dropped by the recorder (Invalid,
// QueueFull, AfterShutdown), waits in the broadcaster's queue (part of
// Queued), or is broadcast (Broadcast): offered to every sink registered at
// that moment, however many there are. Each sink accounts for every event
// offered to it (Offered, summed over sinks) in exactly one of WatcherFull,
// CorrelatorPanicked, Filtered, Coalesced, Created, Patched, the engine's
// drops, Abandoned, Queued, Pending and InFlight. So, in every configuration
// (no sink, one, several, sinks started late or stopped early), whenever no
// event is between two of these places:
//
//	Recorded + Offered - Broadcast ==
//	    Dropped.Total() + Filtered + Coalesced + Created + Patched +
//	    Abandoned + Queued + Pending + InFlight
//
// [Stats.Unaccounted] returns the difference of the two sides. With exactly
// one sink, started before the first event and never stopped before
// Shutdown, Offered == Broadcast and the identity reads
// Recorded == Dropped.Total() + Filtered + ... + InFlight. With no sink,
// Broadcast - Offered events were given to no sink (StartRecordingToSink was
// not called, was refused a nil sink, or its watch was stopped); with one
// sink at a time that difference is exactly the number of those events.
// Aggregated, Retried and CacheEvictions describe how events travelled, not
// where they ended, and are not part of the identity.
type Stats struct {
	// Recorded counts calls to Event, Eventf and AnnotatedEventf.
	Recorded int64
	// Broadcast counts events the broadcaster took from its queue and
	// offered to the sinks (and other watchers) registered at the time.
	Broadcast int64
	// Offered counts events offered to a sink, summed over sinks: an event
	// broadcast while k sinks were registered counts k times.
	Offered int64
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
	// Queued counts events accepted by the broadcaster but not yet taken
	// by the sinks (incoming queue and sink watcher channels).
	Queued int64

	// The delivery engines' counters, summed over the sinks (see
	// [sink.Stats]: Created, Patched, Coalesced, Retried, Pending,
	// InFlight, Probes, RateCuts, WriteRate, HeldBack, OldestPending,
	// Server), with two differences. Abandoned counts, besides the events
	// an engine still held when Shutdown gave up (or when the grace period
	// of a sink whose watch was stopped ran out), those a sink had not
	// taken from its queue yet (or was correlating, in a user's key
	// function, say) when Shutdown stopped waiting for it; so once
	// Shutdown has returned, Queued, Pending and InFlight are zero.
	// Dropped counts, besides the engines' drops, the broadcaster's:
	// Invalid, QueueFull, WatcherFull, AfterShutdown and
	// CorrelatorPanicked. Server is the worst view of a live sink,
	// WriteRate the sum of the live sinks' rates (+Inf when one has no
	// limit; 0 with no sink).
	sink.Stats
}

// Unaccounted returns how many events the snapshot does not place in
// exactly one bucket: the left side of the identity in [Stats] minus the
// right. It is 0 whenever no event is on its way between two buckets (after
// Flush or Shutdown, say).
func (s Stats) Unaccounted() int64 {
	return s.Recorded + s.Offered - s.Broadcast -
		(s.Dropped.Total() + s.Filtered + s.Coalesced + s.Created + s.Patched +
			s.Abandoned + s.Queued + s.Pending + s.InFlight)
}

// counters are the recorder-side live counters.
type counters struct {
	recorded atomic.Int64
	dropped  [numSlots]atomic.Int64 // by recorder drop slot
}

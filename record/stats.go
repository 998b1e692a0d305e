package record

import (
	"sync/atomic"
	"time"

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
	// Coalesced counts events that reached the API server inside a later
	// write of the same event (that write carried their count).
	Coalesced int64
	// Created and Patched count successful writes.
	Created, Patched int64
	// Retried counts failed write attempts that were scheduled again.
	Retried int64
	// Abandoned counts events still unwritten when Shutdown gave up, or
	// when the grace period of a sink whose watch was stopped ran out:
	// those pending or in flight in a sink's engine, and those a sink had
	// not taken from its queue yet (or was correlating, in a user's key
	// function, say) when Shutdown stopped waiting for it. So once Shutdown
	// has returned, Queued, Pending and InFlight are zero.
	Abandoned int64
	// Queued counts events accepted by the broadcaster but not yet taken
	// by the sinks (incoming queue and sink watcher channels).
	Queued int64
	// Pending counts events waiting in the delivery engines; InFlight those
	// in a request under way.
	Pending, InFlight int64
	// Dropped counts events given up for good, by reason.
	Dropped Drops

	// The delivery engines' view of the API server (see package sink):
	//
	// Server is probing when a live sink's engine has seen the server fail
	// (transport errors, timeouts, 5xx, or 429 with nothing accepted
	// lately) and sends one probe at a time until one succeeds; shedding
	// when, short of that, one saw a 429 within its Retry-After while the
	// server accepted other writes; healthy otherwise.
	Server sink.ServerState
	// Probes counts the requests sent as probes while the server was seen
	// down.
	Probes int64
	// WriteRate is the sum of the live sinks' current write rates, in
	// writes per second: their configured limit, or less after 429s (it
	// grows back). +Inf when one has no limit; 0 with no sink.
	WriteRate float64
	// RateCuts counts the times a 429 cut a sink's write rate.
	RateCuts int64
	// HeldBack counts the pending events that wait only because the
	// server is seen down, asked them to retry later (a 429's
	// Retry-After) or the write rate is spent (a gauge).
	HeldBack int64
	// OldestPending is how long the oldest event not yet written has been
	// waiting in an engine (pending or in flight); zero when none is.
	OldestPending time.Duration
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

// DropReason says why an event was dropped. Its String is the reason's
// metric label (herald_events_dropped_total{reason}). [Reasons] lists every
// value; [Drops.Get] and [Drops.ByReason] accept exactly these.
type DropReason string

// String returns the reason's label.
func (r DropReason) String() string { return string(r) }

// The drop reasons. The first five happen in the recorder, the broadcaster
// and a sink's correlator; the others in a sink's delivery engine (they are
// sink.DropReason's values).
const (
	// DropInvalid: nil or unreferenceable object, bad event type, invalid
	// annotations.
	DropInvalid DropReason = "invalid"
	// DropQueueFull: the broadcaster's incoming queue was full.
	DropQueueFull DropReason = "queue_full"
	// DropWatcherFull: a sink's watcher channel was full.
	DropWatcherFull DropReason = "watcher_full"
	// DropAfterShutdown: recorded after Shutdown began.
	DropAfterShutdown DropReason = "after_shutdown"
	// DropCorrelatorPanicked: a sink's correlator failed on the event (a
	// user's KeyFunc, MessageFunc or SpamKeyFunc panicked).
	DropCorrelatorPanicked DropReason = "correlator_panicked"

	DropAlreadyExists        = DropReason(sink.DropAlreadyExists)
	DropNamespaceTerminating = DropReason(sink.DropNamespaceTerminating)
	DropForbidden            = DropReason(sink.DropForbidden)
	DropRejected             = DropReason(sink.DropRejected)
	DropBadResponse          = DropReason(sink.DropBadResponse)
	DropRetriesExhausted     = DropReason(sink.DropRetriesExhausted)
	DropPendingFull          = DropReason(sink.DropPendingFull)
)

// recordReasons are the reasons counted outside the engines.
var recordReasons = [...]DropReason{DropInvalid, DropQueueFull, DropWatcherFull, DropAfterShutdown, DropCorrelatorPanicked}

// Reasons returns every drop reason, in a fixed order: the record-side
// ones, then the engine's (sink.Reasons).
func Reasons() []DropReason {
	rs := append([]DropReason(nil), recordReasons[:]...)
	for _, r := range sink.Reasons() {
		rs = append(rs, DropReason(r))
	}
	return rs
}

// Drops counts dropped events by reason: the record-side reasons in its own
// fields, the engine's in the embedded sink.Drops.
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
	// CorrelatorPanicked: a sink's correlator failed on the event.
	CorrelatorPanicked int64
	sink.Drops
}

// Get returns the count for one reason, 0 for a value that is not in
// [Reasons].
func (d Drops) Get(r DropReason) int64 {
	switch r {
	case DropInvalid:
		return d.Invalid
	case DropQueueFull:
		return d.QueueFull
	case DropWatcherFull:
		return d.WatcherFull
	case DropAfterShutdown:
		return d.AfterShutdown
	case DropCorrelatorPanicked:
		return d.CorrelatorPanicked
	}
	return d.Drops.Get(sink.DropReason(r))
}

// Total is the sum of all reasons.
func (d Drops) Total() int64 {
	var n int64
	for _, r := range Reasons() {
		n += d.Get(r)
	}
	return n
}

// ByReason returns the drops as a map from reason label to count, every
// reason of [Reasons] present: ByReason()[r.String()] == Get(r).
func (d Drops) ByReason() map[string]int64 {
	rs := Reasons()
	m := make(map[string]int64, len(rs))
	for _, r := range rs {
		m[r.String()] = d.Get(r)
	}
	return m
}

// counters are the recorder-side live counters.
type counters struct {
	recorded atomic.Int64
	dropped  [numSlots]atomic.Int64 // by recorder drop slot
}

package sink

import "time"

// Stats is a snapshot of an engine's counters and state. Every event handed
// to [Engine.Add] is counted in exactly one of Created, Patched, Coalesced,
// Dropped, Abandoned, Pending or InFlight, so
//
//	added == Created + Patched + Coalesced + Dropped.Total() + Abandoned + Pending + InFlight
//
// holds at every snapshot.
type Stats struct {
	// Created and Patched count writes that succeeded; each stands for the
	// newest event of its key.
	Created, Patched int64
	// Coalesced counts events that reached the API server folded into a
	// later write of the same event (that write carried their count).
	Coalesced int64
	// Retried counts failed attempts that were put back to wait, and those
	// tried again at once after a 401 (client-go's transport refreshes its
	// credentials on one). It counts attempts, not events, and is not part
	// of the identity.
	Retried int64
	// Abandoned counts events still unwritten when the engine stopped.
	Abandoned int64
	// Pending counts events waiting to be written; InFlight those in a
	// write under way.
	Pending, InFlight int64
	// Dropped counts events given up for good, by reason.
	Dropped Drops

	// Server is the engine's view of the API server: healthy, shedding
	// (it answered 429 within the last Retry-After while accepting other
	// writes: the rate is cut, the rejected keys wait, the others go on)
	// or probing (a server-wide failure was seen; one request at a time
	// goes until one succeeds).
	Server ServerState
	// Probes counts the requests sent as probes while the server was
	// seen down.
	Probes int64
	// WriteRate is the current write budget in writes per second: the
	// configured limit, or less after the server answered 429 or its
	// round trips told of a queue (it grows back). +Inf means no limit.
	WriteRate float64
	// RateCuts counts the times a 429, or round trips that told of a
	// queue at the server, cut the write rate.
	RateCuts int64
	// HeldBack counts the pending events that wait only because the
	// server is down, asked them to retry later (a 429's Retry-After) or
	// the write budget (or the in-flight window) is spent (a gauge).
	HeldBack int64
	// OldestPending is the age of the oldest event not yet written
	// (pending or in flight); zero when none is.
	OldestPending time.Duration
}

// ServerState is the engine's view of the API server, in rising order of
// trouble.
type ServerState int

const (
	// ServerHealthy: writes go at the write rate.
	ServerHealthy ServerState = iota
	// ServerShedding: the server answered 429 with a Retry-After, within
	// it (at least a second), while it accepted other writes: the write
	// rate was cut, the others go on at the cut rate, and the keys it
	// refused wait for the Retry-After (one older than every other
	// waiting even when moved back by it goes before).
	ServerShedding
	// ServerProbing: a failure was judged the server's (see the package
	// documentation's table: a failed probe, no answer, 5xx of distinct
	// keys with nothing answered in between, a 429 with nothing accepted
	// lately); one probe at a time goes, after a backoff or the
	// Retry-After, until one succeeds.
	ServerProbing
)

// String returns "healthy", "shedding" or "probing".
func (s ServerState) String() string {
	switch s {
	case ServerShedding:
		return "shedding"
	case ServerProbing:
		return "probing"
	}
	return "healthy"
}

// Drops counts the events given up for good, by reason. The first five
// reasons are counted by a broadcaster (package record) before an event
// reaches a delivery engine, the others by the engine; an engine's own Stats
// has only the latter. [Drops.ByReason] names each by its metric label.
type Drops struct {
	// Invalid: an object with no valid reference (nil, unreferenceable, an
	// invalid namespace, a field over 1024 bytes), a bad event type,
	// invalid annotations ("invalid").
	Invalid int64
	// QueueFull: the broadcaster's incoming queue was full ("queue_full").
	QueueFull int64
	// WatcherFull: a sink's watcher channel was full ("watcher_full").
	WatcherFull int64
	// AfterShutdown: recorded after Shutdown began ("after_shutdown").
	AfterShutdown int64
	// CorrelatorPanicked: a sink's correlator failed on the event (a user's
	// KeyFunc, MessageFunc or SpamKeyFunc panicked) ("correlator_panicked").
	CorrelatorPanicked int64

	// AlreadyExists: Create answered AlreadyExists ("already_exists").
	AlreadyExists int64
	// NamespaceTerminating: the event's namespace is being deleted
	// ("namespace_terminating").
	NamespaceTerminating int64
	// Forbidden: the API server refused the write (RBAC) ("forbidden").
	Forbidden int64
	// Rejected: any other 4xx (an invalid event, too large, a bad
	// request), or a request that could not be built ("rejected").
	Rejected int64
	// BadResponse: the sink returned no event and no error
	// ("bad_response").
	BadResponse int64
	// RetriesExhausted: the key's own writes failed MaxTries times in a
	// row ("retries_exhausted").
	RetriesExhausted int64
	// PendingFull: MaxPending writes were already waiting ("pending_full").
	PendingFull int64
	// NilEvent: Engine.Add was called with a nil event ("nil_event").
	NilEvent int64
	// SinkPanicked: the EventSink panicked during the write
	// ("sink_panicked").
	SinkPanicked int64
}

// Total is the sum of all reasons.
func (d Drops) Total() int64 {
	var n int64
	for _, r := range allReasons {
		n += *d.field(r)
	}
	return n
}

// Add adds o's counts to d.
func (d *Drops) Add(o Drops) {
	for _, r := range allReasons {
		*d.field(r) += *o.field(r)
	}
}

// ByReason returns the counts by metric label (the "reason" label of
// herald_events_dropped_total), every reason present.
func (d Drops) ByReason() map[string]int64 {
	m := make(map[string]int64, len(allReasons))
	for _, r := range allReasons {
		m[string(r)] = *d.field(r)
	}
	return m
}

func (d *Drops) field(r dropReason) *int64 {
	switch r {
	case dropInvalid:
		return &d.Invalid
	case dropQueueFull:
		return &d.QueueFull
	case dropWatcherFull:
		return &d.WatcherFull
	case dropAfterShutdown:
		return &d.AfterShutdown
	case dropCorrelatorPanicked:
		return &d.CorrelatorPanicked
	case dropAlreadyExists:
		return &d.AlreadyExists
	case dropNamespaceTerminating:
		return &d.NamespaceTerminating
	case dropForbidden:
		return &d.Forbidden
	case dropBadResponse:
		return &d.BadResponse
	case dropRetriesExhausted:
		return &d.RetriesExhausted
	case dropPendingFull:
		return &d.PendingFull
	case dropNilEvent:
		return &d.NilEvent
	case dropSinkPanicked:
		return &d.SinkPanicked
	}
	return &d.Rejected // dropRejected; an unknown reason is still counted
}

// counters are the engine's counters, guarded by the engine's mutex.
type counters struct {
	created, patched, coalesced, retried, abandoned, inFlight int64
	dropped                                                   [numReasons]int64
}

// written counts the write of it stored, by Create or by Patch.
func (c *counters) written(it *item) {
	if it.create {
		c.created++
	} else {
		c.patched++
	}
	c.coalesced += it.n - 1
}

// drop counts n events dropped for r and returns the total for r.
func (c *counters) drop(r dropReason, n int64) int64 {
	i := reasonIndex(r)
	c.dropped[i] += n
	return c.dropped[i]
}

// reasons are the engine's drop reasons; allReasons adds the broadcaster's.
var reasons = [...]dropReason{dropAlreadyExists, dropNamespaceTerminating, dropForbidden, dropRejected, dropBadResponse, dropRetriesExhausted, dropPendingFull, dropNilEvent, dropSinkPanicked}

var allReasons = [...]dropReason{dropInvalid, dropQueueFull, dropWatcherFull, dropAfterShutdown, dropCorrelatorPanicked,
	dropAlreadyExists, dropNamespaceTerminating, dropForbidden, dropRejected, dropBadResponse, dropRetriesExhausted, dropPendingFull, dropNilEvent, dropSinkPanicked}

const numReasons = len(reasons)

func reasonIndex(r dropReason) int {
	for i, x := range reasons {
		if x == r {
			return i
		}
	}
	return 3 // dropRejected: an unknown reason is still counted
}

func (c *counters) snapshot() Stats {
	s := Stats{
		Created:   c.created,
		Patched:   c.patched,
		Coalesced: c.coalesced,
		Retried:   c.retried,
		Abandoned: c.abandoned,
		InFlight:  c.inFlight,
	}
	for i, r := range reasons {
		*s.Dropped.field(r) = c.dropped[i]
	}
	return s
}

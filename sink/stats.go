package sink

import "sync/atomic"

// Stats is a snapshot of an engine's counters. Every event handed to
// [Engine.Add] is counted in exactly one of Created, Patched, Coalesced,
// Dropped, Abandoned, Pending or InFlight, so
//
//	added == Created + Patched + Coalesced + Dropped.Total() + Abandoned + Pending + InFlight
//
// holds at every snapshot taken while no Add or write is under way.
type Stats struct {
	// Created and Patched count writes that succeeded; each stands for the
	// newest event of its key.
	Created, Patched int64
	// Coalesced counts events that reached the API server folded into a
	// later write of the same key (it carried their count).
	Coalesced int64
	// Retried counts failed attempts that were scheduled again. It counts
	// attempts, not events, and is not part of the identity above.
	Retried int64
	// Abandoned counts events still waiting when the engine stopped.
	Abandoned int64
	// Pending counts events waiting to be written; InFlight those in a
	// write under way.
	Pending, InFlight int64
	// Dropped counts events given up for good, by reason.
	Dropped Drops
}

// Drops counts dropped events by [DropReason].
type Drops struct {
	AlreadyExists, NamespaceTerminating, Forbidden, Rejected, BadResponse, RetriesExhausted, PendingFull int64
}

// Total is the sum of all reasons.
func (d Drops) Total() int64 {
	return d.AlreadyExists + d.NamespaceTerminating + d.Forbidden + d.Rejected + d.BadResponse + d.RetriesExhausted + d.PendingFull
}

// Get returns the count for one reason (0 for a reason that is not the engine's).
func (d Drops) Get(r DropReason) int64 {
	switch r {
	case DropAlreadyExists:
		return d.AlreadyExists
	case DropNamespaceTerminating:
		return d.NamespaceTerminating
	case DropForbidden:
		return d.Forbidden
	case DropRejected:
		return d.Rejected
	case DropBadResponse:
		return d.BadResponse
	case DropRetriesExhausted:
		return d.RetriesExhausted
	case DropPendingFull:
		return d.PendingFull
	}
	return 0
}

// counters are the live, atomically updated form of Stats.
type counters struct {
	created, patched, coalesced, retried, abandoned, pending, inFlight atomic.Int64
	dropped                                                            [numReasons]atomic.Int64
}

// Reasons returns every reason the engine drops events for, in a fixed
// order.
func Reasons() []DropReason { return append([]DropReason(nil), reasons[:]...) }

var reasons = [...]DropReason{DropAlreadyExists, DropNamespaceTerminating, DropForbidden, DropRejected, DropBadResponse, DropRetriesExhausted, DropPendingFull}

const numReasons = len(reasons)

func reasonIndex(r DropReason) int {
	for i, x := range reasons {
		if x == r {
			return i
		}
	}
	return 3 // DropRejected: an unknown reason is still counted
}

func (c *counters) snapshot() Stats {
	d := func(r DropReason) int64 { return c.dropped[reasonIndex(r)].Load() }
	return Stats{
		Created:   c.created.Load(),
		Patched:   c.patched.Load(),
		Coalesced: c.coalesced.Load(),
		Retried:   c.retried.Load(),
		Abandoned: c.abandoned.Load(),
		Pending:   c.pending.Load(),
		InFlight:  c.inFlight.Load(),
		Dropped: Drops{
			AlreadyExists:        d(DropAlreadyExists),
			NamespaceTerminating: d(DropNamespaceTerminating),
			Forbidden:            d(DropForbidden),
			Rejected:             d(DropRejected),
			BadResponse:          d(DropBadResponse),
			RetriesExhausted:     d(DropRetriesExhausted),
			PendingFull:          d(DropPendingFull),
		},
	}
}

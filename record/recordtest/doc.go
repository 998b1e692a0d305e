// Package recordtest provides [Recorder], a record.EventRecorderLogger for
// unit tests that keeps every event it is given — object, type, reason,
// message, annotations — for structured assertions. Unlike a string channel
// it never blocks and never drops.
//
//	rec := recordtest.New()
//	reconcile(ctx, obj, rec)
//	if got := rec.WithReason("InvalidSpec"); len(got) != 1 { ... }
package recordtest

package events

import (
	"context"

	cgevents "k8s.io/client-go/tools/events"

	"github.com/heraldk8s/herald/record"
)

// EventRecorder and EventRecorderLogger are client-go's own interfaces (type
// aliases), so a recorder of this package can be passed wherever client-go's
// or controller-runtime's recorder types are expected, and the other way
// round. AnnotatedEventRecorder (annotated.go) has the method set of
// client-go's.
type (
	EventRecorder       = cgevents.EventRecorder
	EventRecorderLogger = cgevents.EventRecorderLogger
)

// EventSink knows how to store events.k8s.io/v1 Events. It is client-go's
// events.EventSink (a type alias), so client-go's *events.EventSinkImpl is
// accepted unchanged.
//
// A sink may be called from several goroutines at once, never for the same
// event at the same time, and only Create and Patch are called. The context
// carries the request timeout and is cancelled when the pipeline stops. On
// success a sink must return the stored event; a nil event (or one without a
// name) with a nil error is counted as a bad response and dropped. A panic in
// a sink is recovered and counted (sink_panicked).
type EventSink = cgevents.EventSink

// EventBroadcaster is client-go's events.EventBroadcaster with herald's
// additions: Flush, ShutdownWithContext and Stats.
type EventBroadcaster interface {
	cgevents.EventBroadcaster

	// Flush waits until every event recorded before the call has been
	// written (or dropped, counted) by the sink and handed to every
	// watcher, or until ctx ends. Every pending series count is written.
	// Called from inside a watcher's handler it waits for the sink only.
	Flush(ctx context.Context) error
	// ShutdownWithContext flushes what is pending until ctx ends, then stops
	// every goroutine the broadcaster started. Events still unwritten when
	// ctx ends are abandoned, counted in Stats().Abandoned and reported in
	// the error. Later calls return the first call's result.
	ShutdownWithContext(ctx context.Context) error
	// Stats returns the broadcaster's counters. It never blocks.
	Stats() Stats
}

// Stats are the broadcaster's counters, the same as record's (see
// record.Stats): each occurrence of an event is one recorded event, and
// every repeat of a series is either a write of its own (Patched) or folded
// into the count of the next write (Coalesced). A series write carries the
// series' whole count: when one is given up (Dropped) and a later write of
// the same series succeeds, the server's count includes the occurrences
// Stats count as dropped, so Dropped can overstate what the server lacks.
type Stats = record.Stats

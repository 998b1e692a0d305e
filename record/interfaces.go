package record

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	clientrecord "k8s.io/client-go/tools/record"

	"github.com/heraldk8s/herald/correlator"
	"github.com/heraldk8s/herald/sink"
)

// EventSink knows how to store events; it is client-go's record.EventSink
// itself (sink.EventSink is an alias of it).
// client-go's *typedcorev1.EventSinkImpl and herald's sink.EventSinkImpl both
// satisfy it.
type EventSink = sink.EventSink

// CorrelatorOptions configures the EventCorrelator of each sink. It is
// client-go's record.CorrelatorOptions with herald's additions
// (DisableAggregation, DisableSpamFilter, SpamKeyWithoutReason); a zero field
// means its default, and a negative one means what it means in client-go
// (the fields are documented in package correlator).
type CorrelatorOptions = correlator.CorrelatorOptions

// Correlator names kept from client-go's tools/record, so code that spells
// them record.X keeps compiling after the import path changes. A
// broadcaster makes the correlator of each sink itself.
type (
	EventCorrelateResult        = correlator.EventCorrelateResult
	EventAggregatorKeyFunc      = correlator.EventAggregatorKeyFunc
	EventAggregatorMessageFunc  = correlator.EventAggregatorMessageFunc
	EventSpamKeyFunc            = correlator.EventSpamKeyFunc
	EventFilterFunc             = correlator.EventFilterFunc
	EventAggregator             = correlator.EventAggregator
	EventSourceObjectSpamFilter = correlator.EventSourceObjectSpamFilter
)

// EventRecorder knows how to record events on behalf of an EventSource.
// It is client-go's record.EventRecorder itself (a type alias), so herald
// recorders and client-go recorders are interchangeable:
//
//   - Event constructs an event and puts it in the queue for sending. object
//     is the object the event is about (an *v1.ObjectReference is accepted
//     too); eventtype is Normal or Warning; reason is a short UpperCamelCase
//     word; message is for humans. A herald recorder never blocks: an event
//     that cannot be queued is dropped, logged at a bounded rate and counted.
//   - Eventf is Event with Sprintf for the message.
//   - AnnotatedEventf is Eventf with annotations, which herald copies.
type EventRecorder = clientrecord.EventRecorder

// EventRecorderLogger is an EventRecorder whose WithLogger returns a recorder
// that logs its problems with the given logger. It is client-go's
// record.EventRecorderLogger itself (a type alias).
type EventRecorderLogger = clientrecord.EventRecorderLogger

// EventBroadcaster receives events and sends them to any number of event
// watchers. Its first six methods are those of client-go's
// record.EventBroadcaster, so a herald EventBroadcaster is a client-go one
// (controller-runtime's manager.Options.EventBroadcaster takes it); Flush,
// ShutdownWithContext and Stats are herald's. All methods are safe for
// concurrent use.
type EventBroadcaster interface {
	// StartEventWatcher calls eventHandler, from one goroutine of its own,
	// with every event recorded after the call. Stop the returned watcher to
	// end it; Shutdown ends it too. A handler that falls behind (or never
	// returns) fills only its own channel (WithQueueLength); the events it
	// misses are counted by the returned watch's Dropped method (reach it
	// with a type assertion to interface{ Dropped() uint64 }), not in
	// Stats, and no other watcher, Flush (past its context), Stats or
	// Start* waits for it. A nil handler is refused with an error log and
	// an empty watch.
	StartEventWatcher(eventHandler func(*v1.Event)) watch.Interface

	// StartRecordingToSink correlates every event recorded after the call
	// and writes it to sink through a delivery engine (see package sink).
	// Each call gets its own correlator and engine. Stop on the returned
	// watch retires the sink: it stops taking events, writes what it holds
	// for at most the grace period (WithShutdownGracePeriod; what is left
	// then is counted as abandoned), stops its goroutines and releases its
	// memory; its counters stay in Stats, and Flush waits for it. A nil
	// sink is refused with an error log and an empty watch: the events it
	// would have got show in Stats as Broadcast but not Offered.
	StartRecordingToSink(sink EventSink) watch.Interface

	// StartLogging calls logf with a line for each event, in client-go's
	// format. A nil logf is refused as a nil handler is.
	StartLogging(logf func(format string, args ...interface{})) watch.Interface

	// StartStructuredLogging logs each event as "Event occurred" at the
	// given verbosity, through the broadcaster's logger.
	StartStructuredLogging(verbosity klog.Level) watch.Interface

	// NewRecorder returns an EventRecorderLogger that records events with
	// the given source. scheme resolves the kind of objects without TypeMeta.
	NewRecorder(scheme *runtime.Scheme, source v1.EventSource) EventRecorderLogger

	// Shutdown flushes for the grace period (WithShutdownGracePeriod,
	// default 10 s), then stops every goroutine the broadcaster started.
	// Events still unwritten are counted as abandoned and logged. A
	// StartEventWatcher handler that does not return by then is not waited
	// for (and logged as still running); its goroutine ends when the
	// handler returns, without handling the rest of its channel.
	// Recording after Shutdown is a counted drop, and Start* after it start
	// nothing and return an empty watch. It is idempotent; see
	// ShutdownWithContext for concurrent calls and calls from a handler.
	Shutdown()

	// Flush waits until every event recorded before the call has been
	// written, folded into another event's count, filtered or dropped (or
	// abandoned by a sink whose watch was stopped), and every handler whose
	// watch is not stopped has been called with it, or until ctx ends (then
	// it returns ctx's error).
	// It does not stop anything. Called from a StartEventWatcher handler, it
	// waits for the sinks only: not for that handler's own watcher, which
	// cannot go on before the handler returns, nor for other handlers, which
	// may be flushing too. Called from a sink's correlator function (a
	// CorrelatorOptions KeyFunc, MessageFunc or SpamKeyFunc, run by that
	// sink's goroutine), it waits only until every event recorded before
	// the call has been broadcast: every sink runs those functions, and two
	// sinks flushing from them would wait for each other. If Shutdown
	// finishes while Flush still waits for a handler that never returned,
	// Flush returns an error then.
	Flush(ctx context.Context) error

	// ShutdownWithContext is Shutdown with ctx bounding the flush instead of
	// the grace period. It returns an error that says how many events were
	// abandoned (wrapping the flush's error, if any), or nil when none were.
	// Later calls return the first result; a call made while the first is
	// still running waits for it until its own ctx ends, then returns an
	// error wrapping ctx's. Called from a StartEventWatcher handler, it does
	// not wait for that handler's own watcher, and while another call's
	// shutdown runs (which may be waiting for that handler) it returns an
	// error at once.
	ShutdownWithContext(ctx context.Context) error

	// Stats returns a snapshot of the broadcaster's counters. It never
	// waits.
	Stats() Stats
}

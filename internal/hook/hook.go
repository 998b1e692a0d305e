// Package hook joins herald's events package (events.k8s.io/v1) to the
// broadcaster of its record package (core/v1), so that both APIs share one
// pipeline: the queue, the watchers, the delivery engine, Flush, Shutdown,
// Stats and the drop accounting. The record package fills in the variables
// when it is initialised; the events package imports record, so they are set
// before any of its code runs.
//
// Events of both APIs travel through the pipeline as core/v1 Events: the API
// server stores one kind of object and serves it under both APIs, and a
// core/v1 Event has every field of an events.k8s.io/v1 Event (EventTime,
// Series, Action, Related, ReportingController, ReportingInstance), so the
// conversion at the sink is lossless.
//
// The package is internal: nothing in it is API.
package hook

import (
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/heraldk8s/herald/correlator"
)

// Correlator is what a sink's pipeline asks of its correlator. record's own
// is correlator.EventCorrelator; the events package brings one that forms
// events.k8s.io series.
type Correlator interface {
	// EventCorrelate returns what to write for ev: the event and, for an
	// event the API server already has, the patch.
	EventCorrelate(ev *v1.Event) (*correlator.EventCorrelateResult, error)
	// UpdateStateForWrite tells the correlator that the write of sentName
	// for key stored stored.
	UpdateStateForWrite(key, sentName string, stored *v1.Event)
	// Stats returns the correlator's counters.
	Stats() correlator.Stats
}

// NewCorrelator makes the correlator of one sink. clk is the broadcaster's
// clock.
type NewCorrelator func(clk clock.PassiveClock) Correlator

// Core is what record's broadcaster offers to a recorder of another API.
// Every method is safe for concurrent use and never blocks.
type Core interface {
	// Begin counts one recorded event and makes the checks every recorder
	// makes: the broadcaster is not shut down, the object has a reference
	// that can be written, the type is Normal or Warning, the annotations
	// are valid. It writes the reference into *ref (inside the event the
	// recorder builds) and returns the annotations to store (a copy), or ok
	// false when it dropped the event (counted, and logged to logger at a
	// bounded rate).
	Begin(logger klog.Logger, scheme *runtime.Scheme, object runtime.Object, annotations map[string]string,
		eventtype, reason string, ref *v1.ObjectReference) (ann map[string]string, ok bool)
	// Related returns the reference to related, the related object of ev
	// (nil for none). One that cannot be referenced is left out and logged:
	// the event is still reported.
	Related(logger klog.Logger, scheme *runtime.Scheme, related runtime.Object, ev *v1.Event) *v1.ObjectReference
	// DropInvalid counts one event that Begin accepted as dropped for being
	// invalid, and logs msg with kv at a bounded rate.
	DropInvalid(logger klog.Logger, err error, msg string, kv func() []any)
	// Enqueue queues ev, an event Begin accepted, for every watcher. A
	// full queue or a shutdown is a counted drop. An event without a name
	// is named by the broadcaster's loop before the watchers see it.
	Enqueue(logger klog.Logger, ev *v1.Event)
	// DropQueueFull counts ev, an event Begin accepted, as dropped for a
	// full queue (queue_full), and logs it at a bounded rate.
	DropQueueFull(logger klog.Logger, ev *v1.Event)
	// QueueLength is the capacity of the broadcaster's incoming queue.
	QueueLength() int
	// Now reads the broadcaster's clock.
	Now() time.Time
	// MessageLimit is the longest message kept, in bytes.
	MessageLimit() int
	// GracePeriod is how long Shutdown writes what is pending.
	GracePeriod() time.Duration
	// Stopping reports whether the broadcaster is shutting down or shut down.
	Stopping() bool
	// Logger is the broadcaster's logger.
	Logger() klog.Logger
	// ShutDown is closed once the broadcaster has shut down, whoever shut
	// it down (a Shutdown call, or the end of record.WithContext's context).
	ShutDown() <-chan struct{}
}

var (
	// WithCorrelator returns a record.BroadcasterOption (as any) that gives
	// every sink of the broadcaster a correlator made by f.
	WithCorrelator func(f NewCorrelator) any
	// WithKeyInterval returns a record.BroadcasterOption (as any) that sets
	// the key interval of every sink's engine: the shortest time between
	// two writes of one correlation key. A negative d is ignored.
	WithKeyInterval func(d time.Duration) any
	// WithBeforeShutdown returns a record.BroadcasterOption (as any) whose
	// f the broadcaster calls once its shutdown starts, however it was
	// started (Shutdown, or the end of record.WithContext's context), before
	// it refuses new events.
	WithBeforeShutdown func(f func()) any
	// SetKeyInterval returns opts, a sink.Options (as any), with its key
	// interval set to d. The sink package fills it in.
	SetKeyInterval func(opts any, d time.Duration) any
	// CoreOf returns the Core of b, a broadcaster returned by
	// record.NewBroadcaster; ok is false for any other value.
	CoreOf func(b any) (c Core, ok bool)
)

// ErrNotSent is returned by a sink that wraps the broadcaster's for a write
// whose state is stored already: the engine counts it written, but as no
// request (no evidence of the server).
var ErrNotSent = errors.New("herald: state stored already, no request sent")

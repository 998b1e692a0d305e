package events

import (
	"context"
	"errors"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	cgevents "k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/heraldk8s/herald/internal/hook"
	"github.com/heraldk8s/herald/internal/nilcheck"
	"github.com/heraldk8s/herald/record"
)

// broadcaster is herald's events.k8s.io/v1 EventBroadcaster. It runs on
// record's broadcaster (see internal/hook): the same queue, watchers,
// engine, Flush, Shutdown and Stats, with a series correlator in front of
// the engine and events.k8s.io/v1 Events at the edges (recorders, watchers,
// the sink).
type broadcaster struct {
	rb     record.EventBroadcaster
	core   hook.Core
	sink   record.EventSink // nil: NewBroadcaster was given no sink
	logger klog.Logger

	mu        sync.Mutex
	recording apiwatch.Interface // the sink's watch while it records
	stopAfter func() bool        // unregisters the stop of recording on its context's end
}

var _ EventBroadcaster = (*broadcaster)(nil)

// errStopped is apimachinery's error for a watch on a stopped broadcaster.
var errStopped = errors.New("broadcaster already stopped")

// NewBroadcaster returns a broadcaster writing to s (client-go's
// constructor, with herald's options). Like record's, it starts one
// goroutine at once and one per watcher started later; Shutdown stops them
// all, after writing what is pending, so call it when done.
func NewBroadcaster(s EventSink, opts ...Option) EventBroadcaster {
	var cs record.EventSink
	if s != nil && !isNilSink(s) {
		cs = coreSink{eventsSink(s)}
	}
	return newBroadcaster(cs, opts)
}

// newBroadcaster returns a broadcaster writing to a core/v1 sink s (the
// adapter writes events.k8s.io/v1-shaped events through core/v1).
func newBroadcaster(s record.EventSink, opts []Option) *broadcaster {
	all := make([]Option, 0, len(opts)+2)
	all = append(all,
		hook.WithCorrelator(func(clk clock.PassiveClock) hook.Correlator {
			return newSeriesCorrelator(clk, DefaultCacheSize)
		}).(record.BroadcasterOption),
		WithSeriesInterval(DefaultSeriesInterval))
	all = append(all, opts...)
	rb := record.NewBroadcaster(all...)
	core, _ := hook.CoreOf(rb)
	return &broadcaster{rb: rb, core: core, sink: s, logger: core.Logger()}
}

// WithSeriesInterval sets the shortest time between two writes of one
// event: the occurrences of a series within it are folded into the count
// of one patch, so the stored count lags behind by at most about d (plus
// the write itself), and a series repeated a thousand times a second costs
// one write per d. Flush and Shutdown write every pending count at once.
// Default DefaultSeriesInterval; 0 writes each new count as soon as the
// previous write of the event has finished.
func WithSeriesInterval(d time.Duration) Option {
	return hook.WithKeyInterval(d).(record.BroadcasterOption)
}

// isNilSink reports whether s is a nil pointer (or map, func, chan)
// in an interface, or herald's or client-go's sink without a client.
func isNilSink(s EventSink) bool {
	switch x := s.(type) {
	case *EventSinkImpl:
		return x == nil || x.Interface == nil
	case *cgevents.EventSinkImpl:
		return x == nil || x.Interface == nil
	}
	return nilcheck.IsNil(s)
}

// StartRecordingToSink is client-go's deprecated form of
// StartRecordingToSinkWithContext: recording stops when stopCh closes (or at
// Shutdown; a nil stopCh never closes).
func (b *broadcaster) StartRecordingToSink(stopCh <-chan struct{}) {
	if stopCh == nil {
		// Nothing to wait for: recording stops at Shutdown (or when the
		// broadcaster's own context ends), and no goroutine is left behind.
		if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
			b.logger.Error(err, "Failed to start recording to sink")
		}
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		cancel()
		b.logger.Error(err, "Failed to start recording to sink")
		return
	}
	go func() {
		select {
		case <-stopCh:
		case <-b.core.ShutDown(): // however it was shut down (Shutdown, record.WithContext)
		}
		cancel()
	}()
}

// StartRecordingToSinkWithContext starts writing recorded events to the
// broadcaster's sink until ctx ends or Shutdown: when ctx ends, what was
// recorded before is still written (for the shutdown grace period), then
// the sink's goroutines stop. It returns an error after Shutdown, without a
// sink, or while the broadcaster already records (client-go would start a
// second pipeline that writes every event twice).
func (b *broadcaster) StartRecordingToSinkWithContext(ctx context.Context) error {
	if b.sink == nil {
		return errors.New("events: the broadcaster has no sink (NewBroadcaster was given nil)")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.core.Stopping():
		return errStopped
	case b.recording != nil:
		return errors.New("events: the broadcaster already records to its sink")
	case ctx.Err() != nil:
		return ctx.Err()
	}
	w := b.rb.StartRecordingToSink(b.sink)
	b.recording = w
	b.stopAfter = context.AfterFunc(ctx, func() { b.stopRecording(w) })
	return nil
}

// stopRecording stops the sink's watch w, so that it takes every event
// recorded before (record's sink watch does), writes them and stops; then
// recording may start again (not before: the two sinks would both take
// what is recorded meanwhile and write it twice).
func (b *broadcaster) stopRecording(w apiwatch.Interface) {
	w.Stop()
	b.mu.Lock()
	if b.recording == w {
		b.recording, b.stopAfter = nil, nil
	}
	b.mu.Unlock()
}

// NewRecorder returns a recorder whose events name reportingController
// (which must be a qualified name, as the API server requires) and
// reportingInstance "<reportingController>-<hostname>", cut to 128 bytes.
// The scheme resolves the kinds of objects without TypeMeta.
func (b *broadcaster) NewRecorder(scheme *runtime.Scheme, reportingController string) EventRecorderLogger {
	return newRecorder(b.core, scheme, reportingController, b.logger)
}

// StartEventWatcher calls handler with each recorded event, an
// *eventsv1.Event of the handler's own, in its own goroutine. The returned
// function stops it.
func (b *broadcaster) StartEventWatcher(handler func(event runtime.Object)) (func(), error) {
	if handler == nil {
		return nil, errors.New("events: nil event handler")
	}
	return b.watch(func(e *v1.Event) { handler(toEventsV1(e).DeepCopy()) })
}

func (b *broadcaster) watch(h func(*v1.Event)) (func(), error) {
	if b.core.Stopping() {
		return nil, errStopped
	}
	return b.rb.StartEventWatcher(h).Stop, nil
}

// StartStructuredLogging is client-go's deprecated form of StartLogging
// with the broadcaster's logger at verbosity.
func (b *broadcaster) StartStructuredLogging(verbosity klog.Level) func() {
	stop, err := b.StartLogging(b.logger.V(int(verbosity)))
	if err != nil {
		b.logger.Error(err, "Failed to start event watcher")
		return func() {}
	}
	return stop
}

// StartLogging logs every recorded event to logger, as client-go does:
// "Event occurred" with the object, kind, apiVersion, type, reason, action
// and note.
func (b *broadcaster) StartLogging(logger klog.Logger) (func(), error) {
	return b.watch(func(e *v1.Event) {
		logger.Info("Event occurred", "object", klog.KRef(e.InvolvedObject.Namespace, e.InvolvedObject.Name),
			"kind", e.InvolvedObject.Kind, "apiVersion", e.InvolvedObject.APIVersion,
			"type", e.Type, "reason", e.Reason, "action", e.Action, "note", e.Message)
	})
}

func (b *broadcaster) Flush(ctx context.Context) error { return b.rb.Flush(ctx) }

func (b *broadcaster) Stats() Stats { return b.rb.Stats() }

// Shutdown writes what is pending, for the shutdown grace period at most,
// and stops every goroutine of the broadcaster.
func (b *broadcaster) Shutdown() {
	b.close()
	b.rb.Shutdown()
}

func (b *broadcaster) ShutdownWithContext(ctx context.Context) error {
	b.close()
	return b.rb.ShutdownWithContext(ctx)
}

// close forgets the stop of recording registered on its context: the
// shutdown stops the sink anyway.
func (b *broadcaster) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopAfter != nil {
		b.stopAfter()
		b.stopAfter = nil
	}
}

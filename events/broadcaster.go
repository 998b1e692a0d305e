package events

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

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

	// mu guards rec and next, and is taken before hold.mu.
	mu   sync.Mutex
	rec  *session // the sink's pipeline while it records or stops; nil: none
	next *session // a start waiting for rec to stop (see start)

	hold hold // the recorders' events while recording restarts
}

// session is one StartRecordingToSink: the sink's pipeline, from its start
// to the end of its context (or stopCh).
type session struct {
	ctx       context.Context
	stopCh    <-chan struct{}    // StartRecordingToSink's; nil for WithContext
	w         apiwatch.Interface // the sink's watch, once started
	stopAfter func() bool        // unregisters the stop on ctx's end
}

// ended reports whether the session's context has ended or its stopCh is
// closed (the goroutine that cancels the context for it may not have run
// yet).
func (s *session) ended() bool {
	if s.ctx.Err() != nil {
		return true
	}
	select {
	case <-s.stopCh: // a nil stopCh never closes
		return true
	default:
		return false
	}
}

// hold keeps the events recorded while recording restarts (a start waits
// for the old sink's watch to stop), and queues them once the new sink's
// watch is registered: the old sink takes every event queued before its
// stop, the new one every event queued after its start, so an event held
// in between reaches exactly one sink. The recorders pass through it at
// the cost of one atomic load when nothing is held.
type hold struct {
	on atomic.Bool // events are held (set and cleared under mu)
	mu sync.Mutex
	// events are the held events and their recorders' loggers, in the
	// order they were recorded; at most maxHeld, later ones are queued at
	// once (they reach the old sink if it still takes events, else none).
	events []heldEvent
	// done is closed when the hold ends; nil when nothing is held.
	done chan struct{}
}

type heldEvent struct {
	logger klog.Logger
	ev     *v1.Event
}

// maxHeld bounds the events held during a restart (a restart waits for the
// loop to pass what is queued: milliseconds, at most the shutdown grace
// period).
const maxHeld = 4096

// gatedCore is the broadcaster's hook.Core as its recorders see it: every
// event passes the hold.
type gatedCore struct {
	hook.Core
	b *broadcaster
}

func (c gatedCore) Enqueue(logger klog.Logger, ev *v1.Event) { c.b.enqueue(logger, ev) }

// enqueue queues ev, or holds it while recording restarts. It never
// blocks for longer than the release of a restart takes to queue what it
// held (queuing never waits).
func (b *broadcaster) enqueue(logger klog.Logger, ev *v1.Event) {
	if b.hold.on.Load() {
		b.hold.mu.Lock()
		if b.hold.on.Load() && len(b.hold.events) < maxHeld {
			b.hold.events = append(b.hold.events, heldEvent{logger, ev})
			b.hold.mu.Unlock()
			return
		}
		b.hold.mu.Unlock()
	}
	b.core.Enqueue(logger, ev)
}

// holdLocked starts holding the recorders' events. b.mu is held.
func (b *broadcaster) holdLocked() {
	b.hold.mu.Lock()
	defer b.hold.mu.Unlock()
	if b.hold.done == nil {
		b.hold.done = make(chan struct{})
		b.hold.on.Store(true)
	}
}

// releaseLocked queues the held events in the order they were recorded and
// ends the hold; recorders wait for it meanwhile, so none of their later
// events overtakes a held one. b.mu is held.
func (b *broadcaster) releaseLocked() {
	b.hold.mu.Lock()
	defer b.hold.mu.Unlock()
	if b.hold.done == nil {
		return
	}
	for i, h := range b.hold.events {
		b.core.Enqueue(h.logger, h.ev)
		b.hold.events[i] = heldEvent{}
	}
	b.hold.events = b.hold.events[:0]
	b.hold.on.Store(false)
	close(b.hold.done)
	b.hold.done = nil
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
	o := newOptions(opts)
	all := make([]record.BroadcasterOption, 0, len(o.record)+2)
	all = append(all,
		hook.WithCorrelator(func(clk clock.PassiveClock) hook.Correlator {
			return newSeriesCorrelator(clk, defaultCacheSize)
		}).(record.BroadcasterOption),
		hook.WithKeyInterval(o.seriesInterval).(record.BroadcasterOption))
	all = append(all, o.record...)
	rb := record.NewBroadcaster(all...)
	core, _ := hook.CoreOf(rb)
	b := &broadcaster{rb: rb, core: core, sink: s, logger: core.Logger()}
	for _, bad := range o.invalid {
		b.logger.Error(nil, "Invalid broadcaster option, using its default instead", "option", bad.option, "value", bad.value, "default", bad.def)
	}
	return b
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
// Shutdown; a nil stopCh never closes). Called again once stopCh is closed,
// it starts recording again, as client-go does.
func (b *broadcaster) StartRecordingToSink(stopCh <-chan struct{}) {
	if stopCh == nil {
		// Nothing to wait for: recording stops at Shutdown (or when the
		// broadcaster's own context ends), and no goroutine is left behind.
		if err := b.start(context.Background(), nil); err != nil {
			b.logger.Error(err, "Failed to start recording to sink")
		}
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := b.start(ctx, stopCh); err != nil {
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
//
// Recording may start again once the context of the previous start has
// ended, at once, even while the old sink still takes what was recorded
// before: the new sink starts as soon as the old one has taken it (within
// milliseconds; at most the shutdown grace period), and the events
// recorded meanwhile are held and handed to the new sink, so that each
// event recorded after the call is written once, by one of them. The call
// never waits for that.
func (b *broadcaster) StartRecordingToSinkWithContext(ctx context.Context) error {
	return b.start(ctx, nil)
}

var errRecording = errors.New("events: the broadcaster already records to its sink")

// start starts recording until ctx ends (or stopCh closes, which cancels
// ctx soon after). If the previous recording has ended but its sink has not
// stopped yet, the start is left to stopRecording, and the recorders'
// events are held until then.
func (b *broadcaster) start(ctx context.Context, stopCh <-chan struct{}) error {
	if b.sink == nil {
		return errors.New("events: the broadcaster has no sink (NewBroadcaster was given nil)")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.core.Stopping():
		return errStopped
	case ctx.Err() != nil:
		return ctx.Err()
	}
	s := &session{ctx: ctx, stopCh: stopCh}
	switch {
	case b.rec == nil:
		b.beginLocked(s)
	case !b.rec.ended(), b.next != nil && !b.next.ended():
		return errRecording
	default:
		// The old sink is stopping (or about to: its context has ended);
		// stopRecording starts this one once it has stopped.
		b.next = s
		b.holdLocked()
	}
	return nil
}

// beginLocked starts the sink's pipeline for s. b.mu is held.
func (b *broadcaster) beginLocked(s *session) {
	s.w = b.rb.StartRecordingToSink(b.sink)
	b.rec = s
	s.stopAfter = context.AfterFunc(s.ctx, func() { b.stopRecording(s) })
}

// stopRecording stops the sink's watch of s, so that it takes every event
// recorded before (record's sink watch does), writes them and stops; then
// the next recording, if one waits, starts (not before: the two sinks
// would both take what is recorded meanwhile and write it twice), and the
// events held meanwhile are queued for it.
func (b *broadcaster) stopRecording(s *session) {
	s.w.Stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rec != s {
		return
	}
	b.rec = nil
	n := b.next
	b.next = nil
	if n != nil && !n.ended() && !b.core.Stopping() {
		b.beginLocked(n)
	}
	b.releaseLocked()
}

// NewRecorder returns a recorder whose events name reportingController
// (which must be a qualified name, as the API server requires) and
// reportingInstance "<reportingController>-<hostname>", cut to 128 bytes.
// The scheme resolves the kinds of objects without TypeMeta.
func (b *broadcaster) NewRecorder(scheme *runtime.Scheme, reportingController string) EventRecorderLogger {
	return newRecorder(gatedCore{b.core, b}, scheme, reportingController, b.logger)
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

// Flush writes what was recorded before the call. While recording
// restarts it first waits for the new sink to start (see
// StartRecordingToSinkWithContext), so that the events held meanwhile are
// flushed too.
func (b *broadcaster) Flush(ctx context.Context) error {
	b.hold.mu.Lock()
	done := b.hold.done
	b.hold.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return b.rb.Flush(ctx)
}

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

// close forgets the stop of recording registered on its context (the
// shutdown stops the sink anyway) and any start waiting for it, and queues
// the events held for that start: the old sink takes them if it still
// takes events, as it does until stopRecording has stopped its watch.
func (b *broadcaster) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rec != nil && b.rec.stopAfter != nil {
		b.rec.stopAfter()
		b.rec.stopAfter = nil
	}
	b.next = nil
	b.releaseLocked()
}

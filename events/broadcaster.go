package events

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

	// mu guards rec, next and closed, and is taken before hold.mu.
	mu     sync.Mutex
	rec    *session // the sink's pipeline while it records or stops; nil: none
	next   *session // a start waiting for rec to stop (see start)
	closed bool     // the shutdown has begun (close ran): no start is accepted

	hold hold // the recorders' events while recording restarts
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
	return newBroadcaster(cs, newOptions(opts))
}

// newBroadcaster returns a broadcaster writing to a core/v1 sink s (the
// adapter writes events.k8s.io/v1-shaped events through core/v1).
func newBroadcaster(s record.EventSink, o options) *broadcaster {
	all := make([]record.BroadcasterOption, 0, len(o.record)+2)
	var (
		once   sync.Once
		series *seriesCorrelator // one per broadcaster, as client-go's cache
		self   atomic.Pointer[broadcaster]
	)
	all = append(all,
		hook.WithCorrelator(func(clk clock.PassiveClock) hook.Correlator {
			once.Do(func() { series = newSeriesCorrelator(clk, defaultCacheSize) })
			return series.session()
		}).(record.BroadcasterOption),
		hook.WithKeyInterval(o.seriesInterval).(record.BroadcasterOption),
		// However the shutdown starts (record.WithContext's context
		// included), the events held for a waiting start go to the sink
		// that still records first.
		hook.WithBeforeShutdown(func() {
			if b := self.Load(); b != nil {
				b.close()
			}
		}).(record.BroadcasterOption))
	all = append(all, o.record...)
	rb := record.NewBroadcaster(all...)
	core, _ := hook.CoreOf(rb)
	if s != nil {
		s = newSeriesOrder(s)
	}
	b := &broadcaster{rb: rb, core: core, sink: s, logger: core.Logger()}
	self.Store(b)
	o.invalid.Log(b.logger, "Invalid broadcaster option, using its default instead")
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
	b.closed = true
	if b.rec != nil && b.rec.stopAfter != nil {
		b.rec.stopAfter()
		b.rec.stopAfter = nil
	}
	b.next = nil
	b.releaseLocked()
}

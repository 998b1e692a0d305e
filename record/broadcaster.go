package record

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/correlator"
	"github.com/heraldk8s/herald/internal/ratelog"
	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/watch"
)

// broadcaster is herald's EventBroadcaster: a watch.Broadcaster fanning
// recorded events out to watchers, each served by one goroutine.
type broadcaster struct {
	cfg    config
	logger klog.Logger
	b      *watch.Broadcaster
	names  nameClock
	kinds  kindCache
	c      counters
	drops  *ratelog.Limiter // one loud drop line per reason and interval

	// ctx is cancelled when the broadcaster has shut down; the engines log
	// through it.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	watchers []*eventWatcher // live watchers, sinks among them
	sinks    []*sinkPipeline // every sink ever started (their counters stay)
	stopping atomic.Bool

	shutdownOnce sync.Once
	shutdownErr  error
	shutdownDone chan struct{}
}

// eventWatcher is one watcher of the broadcaster and its goroutine.
type eventWatcher struct {
	w      *watch.Watcher
	handle func(*v1.Event)
	sink   *sinkPipeline // nil for plain handlers
	done   chan struct{} // closed when the goroutine has exited
}

// sinkPipeline is what StartRecordingToSink builds: a correlator feeding a
// delivery engine.
type sinkPipeline struct {
	corr   *correlator.EventCorrelator
	engine *sink.Engine
	w      *watch.Watcher
}

var _ EventBroadcaster = (*broadcaster)(nil)

// NewBroadcaster returns a broadcaster. Like client-go's, it starts one
// goroutine at once (the distribution loop) and one per watcher started
// later; Shutdown (or cancelling the WithContext context) stops them all, so
// call Shutdown when done with it.
func NewBroadcaster(opts ...BroadcasterOption) EventBroadcaster {
	cfg := newConfig(opts)
	logger := klog.FromContext(cfg.ctx)
	if cfg.logger != nil {
		logger = *cfg.logger
	}
	eb := &broadcaster{
		cfg:          cfg,
		logger:       logger,
		b:            watch.NewLongQueueBroadcaster(cfg.queueLength, watch.DropIfChannelFull),
		shutdownDone: make(chan struct{}),
		drops:        ratelog.New(numSlots),
	}
	eb.ctx, eb.cancel = context.WithCancel(klog.NewContext(context.Background(), logger))
	if done := cfg.ctx.Done(); done != nil {
		go func() {
			select {
			case <-done:
				eb.Shutdown()
			case <-eb.shutdownDone:
			}
		}()
	}
	return eb
}

// NewBroadcasterForTests is client-go's constructor for tests: a broadcaster
// whose longest retry wait is sleepDuration (0: retry at once) and whose
// writes have no rate limit, so a test's burst of events is written at the
// speed of its fake sink rather than herald's default 50 writes/s.
func NewBroadcasterForTests(sleepDuration time.Duration) EventBroadcaster {
	return NewBroadcaster(WithSleepDuration(sleepDuration), WithWriteLimit(-1, 0))
}

// NewBroadcasterWithCorrelatorOptions is client-go's shorthand for
// NewBroadcaster(WithCorrelatorOptions(options)).
func NewBroadcasterWithCorrelatorOptions(options CorrelatorOptions) EventBroadcaster {
	return NewBroadcaster(WithCorrelatorOptions(options))
}

func (eb *broadcaster) StartEventWatcher(eventHandler func(*v1.Event)) apiwatch.Interface {
	return eb.startWatcher(eventHandler, nil)
}

func (eb *broadcaster) StartLogging(logf func(format string, args ...interface{})) apiwatch.Interface {
	return eb.StartEventWatcher(func(e *v1.Event) {
		logf("Event(%#v): type: '%v' reason: '%v' %v", e.InvolvedObject, e.Type, e.Reason, e.Message)
	})
}

func (eb *broadcaster) StartStructuredLogging(verbosity klog.Level) apiwatch.Interface {
	loggerV := eb.logger.V(int(verbosity))
	return eb.StartEventWatcher(func(e *v1.Event) {
		loggerV.Info("Event occurred", "object", klog.KRef(e.InvolvedObject.Namespace, e.InvolvedObject.Name),
			"fieldPath", e.InvolvedObject.FieldPath, "kind", e.InvolvedObject.Kind, "apiVersion", e.InvolvedObject.APIVersion,
			"type", e.Type, "reason", e.Reason, "message", e.Message)
	})
}

func (eb *broadcaster) StartRecordingToSink(s EventSink) apiwatch.Interface {
	if s == nil {
		eb.logger.Error(nil, "Unable to start recording to a nil event sink")
		return apiwatch.NewEmptyWatch()
	}
	p := &sinkPipeline{corr: correlator.NewEventCorrelatorWithOptions(eb.cfg.correlator)}
	opts := eb.cfg.engine
	opts.OnWritten = p.corr.UpdateStateForKey
	engine, err := sink.NewEngine(s, opts)
	if err != nil {
		eb.logger.Error(err, "Unable to start recording to sink")
		return apiwatch.NewEmptyWatch()
	}
	p.engine = engine
	return eb.startWatcher(nil, p)
}

// startWatcher registers a watcher and starts its goroutine.
func (eb *broadcaster) startWatcher(handle func(*v1.Event), p *sinkPipeline) apiwatch.Interface {
	eb.mu.Lock()
	defer eb.mu.Unlock()
	wi, err := eb.b.Watch()
	if err != nil {
		eb.logger.Error(err, "Unable to start event watcher (will not retry!)")
		return apiwatch.NewEmptyWatch()
	}
	ew := &eventWatcher{w: wi.(*watch.Watcher), handle: handle, sink: p, done: make(chan struct{})}
	if p != nil {
		p.w = ew.w
		p.engine.Start(eb.ctx)
		eb.sinks = append(eb.sinks, p)
	}
	eb.watchers = append(eb.watchers, ew)
	go eb.serve(ew)
	return ew.w
}

// serve is the goroutine of one watcher: it handles each event in order
// until the watcher's channel closes (Stop or Shutdown).
func (eb *broadcaster) serve(ew *eventWatcher) {
	defer close(ew.done)
	for wev := range ew.w.ResultChan() {
		switch obj := wev.Object.(type) {
		case *v1.Event:
			if ew.sink != nil {
				eb.toSink(ew.sink, obj)
			} else {
				eb.handle(ew.handle, obj)
			}
		case *flushMark:
			obj.reached(ew)
		}
	}
}

// handle runs a user's handler; a panic in it is logged, not fatal to the
// watcher.
func (eb *broadcaster) handle(h func(*v1.Event), ev *v1.Event) {
	defer func() {
		if r := recover(); r != nil {
			eb.logger.Error(fmt.Errorf("panic: %v", r), "Event handler panicked", "event", klog.KObj(ev))
		}
	}()
	h(ev)
}

// toSink correlates ev and hands it to the sink's engine.
func (eb *broadcaster) toSink(p *sinkPipeline, ev *v1.Event) {
	res, err := p.corr.EventCorrelate(ev)
	if err != nil || res == nil || (!res.Skip && res.Event == nil) {
		// Cannot happen for a non-nil event; count it rather than lose it.
		eb.c.dropped[slotInvalid].Add(1)
		eb.logger.Error(err, "Unable to correlate event, dropping it", "event", klog.KObj(ev))
		return
	}
	if res.Skip {
		return // counted by the correlator's Stats
	}
	key := res.Key
	if key == "" {
		key = res.Event.Namespace + "/" + res.Event.Name
	}
	p.engine.Add(key, res.Event, res.Patch)
}

func (eb *broadcaster) NewRecorder(scheme *runtime.Scheme, source v1.EventSource) EventRecorderLogger {
	return &recorder{eb: eb, scheme: scheme, source: source, logger: eb.logger}
}

func (eb *broadcaster) Shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), eb.cfg.gracePeriod)
	defer cancel()
	_ = eb.ShutdownWithContext(ctx)
}

func (eb *broadcaster) ShutdownWithContext(ctx context.Context) error {
	eb.shutdownOnce.Do(func() {
		defer close(eb.shutdownDone)
		eb.stopping.Store(true)
		flushErr := eb.Flush(ctx)

		// Stop distributing: the loop closes every watcher channel after
		// handing out what was queued, and each goroutine then ends.
		eb.b.Shutdown()
		eb.mu.Lock()
		watchers := eb.watchers
		eb.watchers = nil
		eb.mu.Unlock()
		for _, ew := range watchers {
			if ew.sink != nil {
				<-ew.done // our own code: it hands what is left to the engine
				continue
			}
			select {
			case <-ew.done:
			case <-ctx.Done():
				// A user's handler that never returns must not hold up
				// shutdown; its goroutine ends when the handler does.
				eb.logger.Error(ctx.Err(), "Event handler still running at shutdown, not waiting for it")
			}
		}
		var abandoned int64
		for _, p := range eb.sinkList() {
			abandoned += p.engine.Stop(ctx)
		}
		eb.cancel()
		if abandoned > 0 {
			eb.shutdownErr = fmt.Errorf("record: shutdown abandoned %d events: %w", abandoned, flushErr)
			eb.logger.Error(flushErr, "Event broadcaster shut down before every event was written", "abandoned", abandoned)
		} else {
			eb.logger.V(2).Info("Event broadcaster shut down, every event accounted for")
		}
	})
	return eb.shutdownErr
}

func (eb *broadcaster) sinkList() []*sinkPipeline {
	eb.mu.Lock()
	defer eb.mu.Unlock()
	return append([]*sinkPipeline(nil), eb.sinks...)
}

// flushMark travels through the broadcaster behind every event recorded
// before Flush; each watcher's goroutine reports when it reaches it.
type flushMark struct {
	slots map[*eventWatcher]*flushSlot
}

type flushSlot struct {
	reached chan struct{}
	// barrier is the sink engine's barrier, set before reached is closed.
	barrier <-chan struct{}
}

func (m *flushMark) reached(ew *eventWatcher) {
	s, ok := m.slots[ew]
	if !ok {
		return // a watcher started after the Flush call
	}
	if ew.sink != nil {
		s.barrier = ew.sink.engine.Barrier()
	}
	close(s.reached)
}

func (m *flushMark) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (m *flushMark) DeepCopyObject() runtime.Object   { return m }

func (eb *broadcaster) Flush(ctx context.Context) error {
	eb.mu.Lock()
	mark := &flushMark{slots: make(map[*eventWatcher]*flushSlot, len(eb.watchers))}
	watchers := append([]*eventWatcher(nil), eb.watchers...)
	for _, ew := range watchers {
		mark.slots[ew] = &flushSlot{reached: make(chan struct{})}
	}
	eb.mu.Unlock()
	if len(watchers) == 0 {
		return nil
	}
	if err := eb.b.Mark(ctx, mark); err != nil {
		if errors.Is(err, watch.ErrShutdown) {
			return nil // shut down: nothing is left to flush
		}
		return err
	}
	for _, ew := range watchers {
		s := mark.slots[ew]
		select {
		case <-s.reached:
		case <-ew.done:
			continue // watcher stopped: it has nothing more to deliver
		case <-ctx.Done():
			return ctx.Err()
		}
		if s.barrier != nil {
			select {
			case <-s.barrier:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

func (eb *broadcaster) Stats() Stats {
	s := Stats{
		Recorded: eb.c.recorded.Load(),
		Dropped: Drops{
			Invalid:       eb.c.dropped[slotInvalid].Load(),
			QueueFull:     eb.c.dropped[slotQueueFull].Load(),
			AfterShutdown: eb.c.dropped[slotAfterShutdown].Load(),
		},
	}
	bs := eb.b.Stats()
	s.Queued = int64(bs.Queued)
	for _, p := range eb.sinkList() {
		es := p.engine.Stats()
		cs := p.corr.Stats()
		s.Filtered += int64(cs.Filtered)
		s.Aggregated += int64(cs.Aggregated)
		s.CacheEvictions += int64(cs.AggregateEvictions + cs.ObserveEvictions + cs.SpamEvictions)
		s.Coalesced += es.Coalesced
		s.Created += es.Created
		s.Patched += es.Patched
		s.Retried += es.Retried
		s.Abandoned += es.Abandoned
		s.Pending += es.Pending
		s.InFlight += es.InFlight
		s.Dropped.WatcherFull += int64(p.w.Dropped())
		s.Queued += int64(len(p.w.ResultChan()))
		d := &s.Dropped.Drops
		d.AlreadyExists += es.Dropped.AlreadyExists
		d.NamespaceTerminating += es.Dropped.NamespaceTerminating
		d.Forbidden += es.Dropped.Forbidden
		d.Rejected += es.Dropped.Rejected
		d.BadResponse += es.Dropped.BadResponse
		d.RetriesExhausted += es.Dropped.RetriesExhausted
		d.PendingFull += es.Dropped.PendingFull
	}
	return s
}

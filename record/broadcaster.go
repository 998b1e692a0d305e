// This file holds the fan-out: the broadcaster type, its constructors, and
// the wiring from the distribution loop (watch.Broadcaster) to the watchers'
// goroutines (startWatcher, serve). The broadcaster's lifecycle, start →
// record → flush → shutdown, is described in broadcaster_shutdown.go.

package record

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/internal/ratelog"
	"github.com/heraldk8s/herald/internal/watchext"
	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/watch"
)

// watchFuncs are the parts of watch.Broadcaster that are not public API:
// the broadcaster that names events in its loop, and marks (see Flush).
var watchFuncs = watchext.Get[watch.Broadcaster]()

// broadcaster is herald's EventBroadcaster: a watch.Broadcaster fanning
// recorded events out to watchers, each served by one goroutine.
type broadcaster struct {
	cfg    config
	logger klog.Logger
	b      *watch.Broadcaster
	kinds  kindCache
	c      counters
	drops  *ratelog.Limiter // one loud drop line per reason and interval

	// ctx is cancelled when Shutdown ends, or earlier when its context
	// does; the engines log through it, and it bounds the flush of a sink
	// whose watch was stopped.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	watchers []*eventWatcher // watchers whose goroutine still runs, sinks among them
	sinks    []*sinkPipeline // sinks not yet retired
	retired  Stats           // the sink counters of retired sinks
	closed   bool            // Shutdown has taken the watchers: start no more
	stopping atomic.Bool

	shutdownStarted atomic.Bool
	shutdownErr     error
	shutdownDone    chan struct{}
}

var _ EventBroadcaster = (*broadcaster)(nil)

// NewBroadcaster returns a broadcaster. Like client-go's, it starts one
// goroutine at once (the distribution loop; one more watches a cancellable
// WithContext context) and one per watcher started later; Shutdown (or cancelling the WithContext context) stops them all, so
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
		b:            watchFuncs.NewPreparing(cfg.queueLength, int(watch.DropIfChannelFull), nameEvent),
		shutdownDone: make(chan struct{}),
		drops:        ratelog.New(numSlots),
	}
	cfg.invalid.Log(logger, "Invalid broadcaster option, using its default instead")
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
	return NewBroadcaster(WithSleepDuration(sleepDuration), WithSinkOptions(sink.Options{QPS: sink.Unlimited}))
}

// NewBroadcasterWithCorrelatorOptions is client-go's shorthand for
// NewBroadcaster(WithCorrelatorOptions(options)).
func NewBroadcasterWithCorrelatorOptions(options CorrelatorOptions) EventBroadcaster {
	return NewBroadcaster(WithCorrelatorOptions(options))
}

func (eb *broadcaster) NewRecorder(scheme *runtime.Scheme, source v1.EventSource) EventRecorderLogger {
	return &recorder{eb: eb, scheme: scheme, source: boundSource(source), logger: eb.logger}
}

// startWatcher registers a watcher and starts its goroutine (and, for a sink,
// its engine). It holds eb.mu only for a moment, never while it waits for
// the queue, so Stats, Flush and Shutdown never wait behind it. After
// Shutdown it starts nothing and returns an empty watch.
func (eb *broadcaster) startWatcher(handle func(*v1.Event), p *sinkPipeline) apiwatch.Interface {
	if eb.stopping.Load() {
		eb.release(p)
		eb.logger.Error(watch.ErrShutdown, "Unable to start event watcher (will not retry!)")
		return apiwatch.NewEmptyWatch()
	}
	wi, err := eb.b.Watch()
	if err != nil {
		eb.release(p)
		eb.logger.Error(err, "Unable to start event watcher (will not retry!)")
		return apiwatch.NewEmptyWatch()
	}
	ew := &eventWatcher{w: wi.(watchext.Watcher), handle: handle, sink: p, done: make(chan struct{})}
	eb.mu.Lock()
	if eb.closed {
		eb.mu.Unlock()
		ew.w.Stop()
		eb.release(p)
		eb.logger.Error(watch.ErrShutdown, "Unable to start event watcher (will not retry!)")
		return apiwatch.NewEmptyWatch()
	}
	if p != nil {
		p.w = ew.w
		p.engine.Start(eb.ctx)
		eb.sinks = append(eb.sinks, p)
	}
	eb.watchers = append(eb.watchers, ew)
	eb.mu.Unlock()
	go eb.serve(ew)
	if p != nil {
		return &sinkWatch{Watcher: ew.w, eb: eb}
	}
	return ew.w
}

// serve is the goroutine of one watcher: it handles each event in order
// until the watcher's channel closes (Stop or Shutdown). A sink is then
// retired: its engine flushes for the grace period (less if Shutdown's
// context ends first) and stops, its counters are kept and the rest is
// released.
func (eb *broadcaster) serve(ew *eventWatcher) {
	ew.goid.Store(goid())
	defer eb.forget(ew)
	for wev := range ew.w.ResultChan() {
		switch obj := wev.Object.(type) {
		case *v1.Event:
			if p := ew.sink; p != nil {
				p.received.Add(1)
				if !p.begin() {
					p.lost.Add(1) // Shutdown gave up on the sink
					continue
				}
				if !eb.toSink(p, obj) {
					// Shutdown took the channel over: it counted this
					// event, and drains the rest; the channel is then
					// empty and closed, and the loop ends.
					<-p.drained
				}
			} else if ew.begin() {
				eb.handle(ew.handle, obj)
				ew.end()
			}
		case *flushMark:
			obj.reached(ew)
		}
	}
	if p := ew.sink; p != nil {
		p.retiring.Store(true)
		ctx, cancel := context.WithTimeout(eb.ctx, eb.cfg.gracePeriod)
		defer cancel()
		_ = p.engine.Flush(ctx) // what is left is counted as abandoned by Stop
		p.stop(ctx)
		eb.mu.Lock()
		eb.retired.addSink(p)
		eb.sinks = slices.DeleteFunc(eb.sinks, func(x *sinkPipeline) bool { return x == p })
		eb.mu.Unlock()
	}
}

// forget drops a watcher whose goroutine is ending, so that a stopped
// watcher holds nothing until Shutdown.
func (eb *broadcaster) forget(ew *eventWatcher) {
	eb.mu.Lock()
	eb.watchers = slices.DeleteFunc(eb.watchers, func(x *eventWatcher) bool { return x == ew })
	eb.mu.Unlock()
	close(ew.done)
}

// inHandler reports whether the caller is the goroutine of one of the
// broadcaster's watchers (a handler calling back into the broadcaster).
func (eb *broadcaster) inHandler() bool {
	me := goid()
	if me == 0 {
		return false
	}
	eb.mu.Lock()
	defer eb.mu.Unlock()
	for _, ew := range eb.watchers {
		if ew.goid.Load() == me {
			return true
		}
	}
	return false
}

package record

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/correlator"
	"github.com/heraldk8s/herald/internal/hook"
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

// eventWatcher is one watcher of the broadcaster and its goroutine.
type eventWatcher struct {
	w      *watch.Watcher
	handle func(*v1.Event)
	sink   *sinkPipeline // nil for plain handlers
	// done is closed when the goroutine has exited; for a sink, after the
	// sink has been retired.
	done chan struct{}
	// goid is the id of the goroutine, set when it starts; it lets Flush
	// and Shutdown called from a handler skip the handler's own watcher.
	goid atomic.Uint64

	// mu guards running (a plain handler is running) and giveUp (Shutdown
	// stopped waiting: handle nothing more).
	mu      sync.Mutex
	running bool
	giveUp  bool
}

// begin reports whether the handler may run for the next event, and marks it
// running if so.
func (ew *eventWatcher) begin() bool {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	ew.running = !ew.giveUp
	return ew.running
}

func (ew *eventWatcher) end() {
	ew.mu.Lock()
	ew.running = false
	ew.mu.Unlock()
}

// abandon makes the watcher's goroutine handle no more events and reports
// whether its handler is running now.
func (ew *eventWatcher) abandon() (running bool) {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	ew.giveUp = true
	return ew.running
}

// sinkPipeline is what StartRecordingToSink builds: a correlator feeding a
// delivery engine.
//
// Every event taken from w's channel is counted in received, then, unless
// Shutdown gave up on the sink, correlated and handed to the engine. Once
// Shutdown has given up (abandon), the events still in the channel, and the
// one being correlated then, are counted in lost (abandoned) instead, so
// that when Shutdown returns no event of the sink is left in no bucket.
type sinkPipeline struct {
	corr     hook.Correlator
	engine   *sink.Engine
	w        *watch.Watcher
	received atomic.Int64 // events taken from w's channel
	lost     atomic.Int64 // events taken from w's channel after Shutdown gave up: abandoned
	retiring atomic.Bool  // its channel is closed and drained: it is flushing and stopping
	stopMu   sync.Mutex   // serialises stop: a second call returns once the engine has stopped

	// mu guards correlating, giveUp and takenOver: the hand-over of an
	// event between serve and a Shutdown that gives up.
	mu          sync.Mutex
	correlating bool // serve holds an event it has not handed to the engine yet
	giveUp      bool // Shutdown stopped waiting: nothing more goes to the engine
	// takenOver is set when Shutdown gave up while serve was correlating
	// (perhaps stuck in a user's key function): Shutdown counted that
	// event as lost and drains the channel itself; serve reads nothing
	// more from it and waits for drained before it retires the sink.
	takenOver bool
	drained   chan struct{}
}

// begin reports whether serve may correlate the event it has just taken,
// and marks it correlating if so. After Shutdown gave up it reports false:
// the caller counts the event as lost.
func (p *sinkPipeline) begin() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.correlating = !p.giveUp
	return p.correlating
}

// abandon is Shutdown giving up on the sink: nothing more goes to its
// engine. It reports whether Shutdown must drain the channel itself (serve
// was correlating an event: that event is counted as lost here, and serve
// reads no more).
func (p *sinkPipeline) abandon() (takeOver bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.giveUp {
		return false
	}
	p.giveUp = true
	if p.correlating {
		p.takenOver = true
		p.drained = make(chan struct{})
		p.lost.Add(1)
	}
	return p.takenOver
}

// drain is Shutdown emptying the channel of a sink it took over from serve
// (see abandon): the events left are counted as lost, the flush marks are
// passed on. The channel is closed by then (the broadcaster has shut down,
// or the watch was stopped).
func (p *sinkPipeline) drain(ew *eventWatcher) {
	for wev := range ew.w.ResultChan() {
		switch obj := wev.Object.(type) {
		case *v1.Event:
			p.received.Add(1)
			p.lost.Add(1)
		case *flushMark:
			obj.reached(ew)
		}
	}
	close(p.drained)
}

// stop stops the engine. Unlike Engine.Stop, a call made while another is
// under way returns only once the engine has stopped, so the caller can read
// final counters.
func (p *sinkPipeline) stop(ctx context.Context) {
	p.stopMu.Lock()
	defer p.stopMu.Unlock()
	p.engine.Stop(ctx)
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
		b:            watch.NewPreparingBroadcaster(cfg.queueLength, watch.DropIfChannelFull, nameEvent),
		shutdownDone: make(chan struct{}),
		drops:        ratelog.New(numSlots),
	}
	for _, p := range cfg.invalid {
		logger.Error(nil, "Invalid broadcaster option, using its default instead", "option", p.option, "value", p.value, "default", p.def)
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
		eb.logger.Error(nil, "Unable to start recording to a nil event sink; events are not written anywhere by it")
		return apiwatch.NewEmptyWatch()
	}
	if eb.stopping.Load() {
		eb.logger.Error(watch.ErrShutdown, "Unable to start recording to sink (will not retry!)")
		return apiwatch.NewEmptyWatch()
	}
	p := &sinkPipeline{corr: eb.newCorrelator()}
	opts := eb.cfg.engine
	opts.OnWritten = func(key string, sent, stored *v1.Event) {
		p.corr.UpdateStateForWrite(key, sent.Name, stored)
	}
	engine, err := sink.NewEngine(s, opts)
	if err != nil {
		eb.logger.Error(err, "Unable to start recording to sink")
		return apiwatch.NewEmptyWatch()
	}
	p.engine = engine
	return eb.startWatcher(nil, p)
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
	ew := &eventWatcher{w: wi.(*watch.Watcher), handle: handle, sink: p, done: make(chan struct{})}
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

// sinkWatch is the watch StartRecordingToSink returns. Its Stop first lets
// the loop hand the sink every event recorded before the call (they may
// still wait in the incoming queue, and a stopped watcher is offered
// nothing more), for the shutdown grace period at most, then stops the
// watcher: the sink writes what it got as it retires. It never waits for a
// write, only for the loop to pass what is queued.
type sinkWatch struct {
	*watch.Watcher
	eb   *broadcaster
	once sync.Once
}

func (s *sinkWatch) Stop() {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(s.eb.ctx, s.eb.cfg.gracePeriod)
		defer cancel()
		mark := &flushMark{passed: make(chan struct{})} // no slots: a marker only
		if s.eb.b.Mark(ctx, mark) == nil {
			select {
			case <-mark.passed:
			case <-ctx.Done():
			}
		}
		s.Watcher.Stop()
	})
}

// release frees the engine of a sink that was not started (NewEngine
// already holds goroutines of its queue). p may be nil.
func (eb *broadcaster) release(p *sinkPipeline) {
	if p != nil {
		p.stop(eb.ctx)
	}
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

// toSink correlates ev and hands it to the sink's engine. An event the
// correlator fails on (the only failures are panics in the user's key and
// message functions) is a counted correlator_panicked drop. It is called
// after p.begin and ends the correlation; it reports false when Shutdown
// took the sink's channel over meanwhile (see sinkPipeline.abandon): the
// event was counted as lost then, and nothing of it is counted here.
func (eb *broadcaster) toSink(p *sinkPipeline, ev *v1.Event) bool {
	res, err := correlate(p.corr, ev)
	if err == nil && (res == nil || (!res.Skip && res.Event == nil)) {
		err = errors.New("record: correlator returned no event")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.correlating = false
	if p.takenOver {
		if err == nil && res.Skip {
			// The correlator counted it as filtered as well: it is
			// counted once.
			p.lost.Add(-1)
		}
		return false
	}
	if err != nil {
		n := eb.c.dropped[slotCorrelatorPanicked].Add(1)
		msg := "Unable to correlate event, dropping it"
		if eb.drops.Allow(slotCorrelatorPanicked, eb.cfg.clock.Now()) {
			eb.logger.Error(err, msg, "event", klog.KObj(ev), "dropReason", DropCorrelatorPanicked.String(), "droppedForReason", n)
		} else if v := eb.logger.V(4); v.Enabled() {
			v.Info(msg, "event", klog.KObj(ev), "dropReason", DropCorrelatorPanicked.String(), "droppedForReason", n, "err", err)
		}
		return true
	}
	if res.Skip {
		return true // counted by the correlator's Stats
	}
	key := res.Key
	if key == "" {
		key = res.Event.Namespace + "/" + res.Event.Name
	}
	// Under p.mu, so that a Shutdown giving up meanwhile finds the event
	// either in the engine or still correlating. Add never blocks.
	p.engine.Add(key, res.Event, res.Patch)
	return true
}

// correlate is c.EventCorrelate with a panic (from a user's key or message
// function) turned into an error.
func correlate(c hook.Correlator, ev *v1.Event) (res *correlator.EventCorrelateResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("record: correlator panicked: %v", r)
		}
	}()
	return c.EventCorrelate(ev)
}

func (eb *broadcaster) NewRecorder(scheme *runtime.Scheme, source v1.EventSource) EventRecorderLogger {
	return &recorder{eb: eb, scheme: scheme, source: boundSource(source), logger: eb.logger}
}

func (eb *broadcaster) Shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), eb.cfg.gracePeriod)
	defer cancel()
	_ = eb.ShutdownWithContext(ctx)
}

// errShutdownInProgress is wrapped by a ShutdownWithContext whose context
// ends while another call's shutdown is still running.
var errShutdownInProgress = errors.New("record: shutdown still in progress in another call")

func (eb *broadcaster) ShutdownWithContext(ctx context.Context) error {
	if !eb.shutdownStarted.CompareAndSwap(false, true) {
		select {
		case <-eb.shutdownDone:
			return eb.shutdownErr
		default:
		}
		if eb.inHandler() {
			// The running shutdown may be waiting for this very handler.
			return errShutdownInProgress
		}
		select {
		case <-eb.shutdownDone:
			return eb.shutdownErr
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", errShutdownInProgress, ctx.Err())
		}
	}
	defer close(eb.shutdownDone)
	// When ctx ends, so does every flush still under way.
	defer context.AfterFunc(ctx, eb.cancel)()
	abandonedBefore := eb.Stats().Abandoned
	eb.stopping.Store(true)
	flushErr := eb.Flush(ctx)

	// Stop distributing: the loop closes every watcher channel after
	// handing out what was queued, and each goroutine then ends (a sink's
	// once its engine has flushed and stopped).
	eb.b.Shutdown()
	eb.mu.Lock()
	eb.closed = true
	watchers := slices.Clone(eb.watchers)
	eb.mu.Unlock()
	me := goid()
	for _, ew := range watchers {
		if me != 0 && ew.goid.Load() == me {
			continue // called from this watcher's own handler
		}
		select {
		case <-ew.done:
			continue
		default:
		}
		select {
		case <-ew.done:
			continue
		case <-ctx.Done():
		}
		select {
		case <-ew.done:
		default:
			if p := ew.sink; p != nil {
				eb.cancel() // ends the flush of every retiring sink
				if !p.retiring.Load() {
					// Stop the engine from here: its goroutine may be
					// stuck in the correlator (in a user's key
					// function).
					p.stop(ctx)
				}
				// Nothing more goes to the engine: what is left in the
				// channel is abandoned.
				if p.abandon() {
					// Its goroutine is correlating, perhaps stuck in a
					// user's function: the event it holds is counted,
					// and the channel drained from here.
					p.drain(ew)
					continue
				}
				// Its goroutine counts what is left in the channel,
				// calling no user code, then retires the stopped
				// sink: all within a moment.
				<-ew.done
				continue
			}
			if ew.abandon() {
				// A user's handler that has not returned must not hold
				// up shutdown; its goroutine ends when the handler does.
				eb.logger.Error(ctx.Err(), "Event handler still running at shutdown, not waiting for it")
				continue
			}
			// Between two events: it skips the rest of its channel and
			// ends without calling the handler again.
			<-ew.done
		}
	}
	eb.cancel()
	abandoned := eb.Stats().Abandoned - abandonedBefore
	eb.shutdownErr = shutdownError(abandoned, flushErr)
	if abandoned > 0 {
		eb.logger.Error(flushErr, "Event broadcaster shut down before every event was written", "abandoned", abandoned)
	} else {
		eb.logger.V(2).Info("Event broadcaster shut down, every event accounted for")
	}
	return eb.shutdownErr
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

// shutdownError is the error of a shutdown that abandoned events: it says how
// many and wraps the flush error, if any. It is nil when none were abandoned.
func shutdownError(abandoned int64, flushErr error) error {
	switch {
	case abandoned <= 0:
		return nil
	case flushErr != nil:
		return fmt.Errorf("record: shutdown abandoned %d events: %w", abandoned, flushErr)
	default:
		return fmt.Errorf("record: shutdown abandoned %d events", abandoned)
	}
}

// flushMark travels through the broadcaster behind every event recorded
// before Flush; each watcher's goroutine reports when it reaches it.
type flushMark struct {
	slots map[*eventWatcher]*flushSlot
	// mu guards the slots' forget and cancelled: a Flush that gives up
	// forgets the engine waits its mark took, and a watcher that reaches
	// the mark after that takes none.
	mu        sync.Mutex
	cancelled bool
	// passed is closed when the loop has offered the mark to every
	// watcher: every event recorded before Flush has been broadcast.
	passed chan struct{}
}

func (m *flushMark) MarkDistributed() { close(m.passed) }

type flushSlot struct {
	reached chan struct{}
	// barrier is the sink engine's wait, set before reached is closed;
	// forget removes it (see flushMark.mu).
	barrier <-chan struct{}
	forget  func()
}

func (m *flushMark) reached(ew *eventWatcher) {
	s, ok := m.slots[ew]
	if !ok {
		return // a watcher started after the Flush call
	}
	if ew.sink != nil {
		m.mu.Lock()
		if !m.cancelled {
			s.barrier, s.forget = ew.sink.engine.Wait()
		}
		m.mu.Unlock()
	}
	close(s.reached)
}

// cancel forgets the engine waits of a Flush that gave up: none of them
// stays on the pending writes.
func (m *flushMark) cancel() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cancelled = true
	for _, s := range m.slots {
		if s.forget != nil {
			s.forget()
		}
	}
}

func (m *flushMark) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (m *flushMark) DeepCopyObject() runtime.Object   { return m }

// errFlushShutdown is returned by a Flush that was still waiting for a
// watcher when Shutdown finished.
var errFlushShutdown = errors.New("record: broadcaster shut down before the flush completed")

func (eb *broadcaster) Flush(ctx context.Context) (err error) {
	me := goid()
	eb.mu.Lock()
	mark := &flushMark{slots: make(map[*eventWatcher]*flushSlot, len(eb.watchers)), passed: make(chan struct{})}
	defer func() {
		if err != nil {
			mark.cancel()
		}
	}()
	watchers := make([]*eventWatcher, 0, len(eb.watchers))
	fromHandler := false
	for _, ew := range eb.watchers {
		fromHandler = fromHandler || (me != 0 && ew.goid.Load() == me)
	}
	for _, ew := range eb.watchers {
		if fromHandler && ew.sink == nil {
			// Called from a handler, which cannot reach the mark before
			// it returns: wait for the sinks only, so that handlers
			// flushing at the same time never wait for each other.
			continue
		}
		watchers = append(watchers, ew)
		mark.slots[ew] = &flushSlot{reached: make(chan struct{})}
	}
	eb.mu.Unlock()
	if err := eb.b.Mark(ctx, mark); err != nil {
		if !errors.Is(err, watch.ErrShutdown) {
			return err
		}
		// Shutting down: the loop distributes what is left, the watchers'
		// goroutines drain it and the sinks flush as they retire; wait
		// for that below.
	} else {
		// Every event recorded so far is broadcast (and counted) once
		// the loop has passed the mark; it never waits for a watcher.
		select {
		case <-mark.passed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, ew := range watchers {
		s := mark.slots[ew]
		var stopped <-chan struct{}
		if ew.sink == nil {
			// A stopped handler is not waited for, even if it has not
			// returned yet. (A stopped sink is: it flushes as it retires.)
			stopped = ew.w.Stopped()
		}
		select {
		case <-s.reached:
		case <-stopped:
			continue
		case <-ew.done:
			// Stopped: a plain watcher has nothing more to deliver, and a
			// sink's goroutine ends only once the sink has flushed (or
			// counted its events as abandoned).
			continue
		case <-ctx.Done():
			return ctx.Err()
		case <-eb.shutdownDone:
			select { // the watcher may have finished too
			case <-s.reached:
			case <-ew.done:
				continue
			default:
				return errFlushShutdown
			}
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
			Invalid:            eb.c.dropped[slotInvalid].Load(),
			QueueFull:          eb.c.dropped[slotQueueFull].Load(),
			AfterShutdown:      eb.c.dropped[slotAfterShutdown].Load(),
			CorrelatorPanicked: eb.c.dropped[slotCorrelatorPanicked].Load(),
		},
	}
	bs := eb.b.Stats()
	s.Broadcast = int64(bs.Distributed)
	s.Queued = int64(bs.Queued)
	eb.mu.Lock()
	defer eb.mu.Unlock()
	s.addSinkTotals(eb.retired)
	for _, p := range eb.sinks {
		s.addSink(p)
	}
	return s
}

// addSink adds the counters of one sink to s.
func (s *Stats) addSink(p *sinkPipeline) {
	es := p.engine.Stats()
	cs := p.corr.Stats()
	var t Stats
	t.Filtered = int64(cs.Filtered)
	t.Aggregated = int64(cs.Aggregated)
	t.CacheEvictions = int64(cs.AggregateEvictions + cs.ObserveEvictions + cs.SpamEvictions)
	t.Coalesced = es.Coalesced
	t.Created = es.Created
	t.Patched = es.Patched
	t.Retried = es.Retried
	t.Abandoned = es.Abandoned + p.lost.Load()
	t.Pending = es.Pending
	t.InFlight = es.InFlight
	t.Dropped.Drops = es.Dropped
	t.Probes = es.Probes
	t.RateCuts = es.RateCuts
	// Gauges: live sinks only (addSinkTotals also folds retired sinks).
	s.Server = max(s.Server, es.Server)
	s.WriteRate += es.WriteRate
	s.HeldBack += es.HeldBack
	s.OldestPending = max(s.OldestPending, es.OldestPending)
	if p.w != nil {
		offered, dropped := int64(p.w.Offered()), int64(p.w.Dropped())
		t.Offered = offered
		t.Dropped.WatcherFull = dropped
		t.Queued = max(offered-dropped-p.received.Load(), 0)
	}
	s.addSinkTotals(t)
}

// addSinkTotals adds the sink-side fields of t to s.
func (s *Stats) addSinkTotals(t Stats) {
	s.Offered += t.Offered
	s.Filtered += t.Filtered
	s.Aggregated += t.Aggregated
	s.CacheEvictions += t.CacheEvictions
	s.Coalesced += t.Coalesced
	s.Created += t.Created
	s.Patched += t.Patched
	s.Retried += t.Retried
	s.Abandoned += t.Abandoned
	s.Pending += t.Pending
	s.InFlight += t.InFlight
	s.Queued += t.Queued
	s.Dropped.WatcherFull += t.Dropped.WatcherFull
	s.Dropped.Drops.Add(t.Dropped.Drops)
	s.Probes += t.Probes
	s.RateCuts += t.RateCuts
}

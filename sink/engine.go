package sink

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/heraldk8s/herald/internal/nilcheck"
	"github.com/heraldk8s/herald/internal/optval"
	"github.com/heraldk8s/herald/internal/ratelog"
)

// Engine delivers events to an EventSink.
//
// It keeps the newest state of each key (a correlation key: one event on
// the server) and writes keys oldest first, with several workers, never two
// writes of one key at once. A failed write is judged by evidence (the
// package documentation's table "Whose failure is it"): a failure of the
// server holds every key behind one probe; a failure of one key (or of one
// namespace) while the server answers the others backs that key off alone;
// a 429 with Retry-After while others are accepted cuts the write rate. The
// write budget is a token bucket (Options.QPS and Burst) whose rate adapts
// to the server (see [Options.DisableAdaptiveRate]).
//
// Create it with [NewEngine], start it with [Engine.Start] and stop it with
// [Engine.Stop]; the goroutines it starts (a dispatcher and Options.Workers
// workers) run until Stop, whatever happens to the context given to Start.
// All methods are safe for concurrent use.
type Engine struct {
	sink EventSink
	opts Options

	wake chan struct{} // cap 1: something changed, the dispatcher should look
	work chan *task    // dispatcher -> workers; cap Workers, never full
	quit chan struct{} // closed by Stop: the dispatcher returns
	disp chan struct{} // closed when the dispatcher has returned
	wg   sync.WaitGroup

	// mu guards s, idle, started, stopped, logger and c (ctx and cancel are
	// set before the goroutines start; drops has a lock of its own). The
	// lock order, once: mu is a leaf. It is never held during a sink call,
	// a callback, a channel send that can block (the send to work cannot),
	// or while another lock is taken; barriers are released under it
	// (closing a channel does not block).
	mu      sync.Mutex
	s       *sched
	idle    int // workers waiting for a task
	started bool
	stopped bool
	ctx     context.Context // cancelled by Stop: cancels the requests in flight
	cancel  context.CancelFunc
	logger  klog.Logger
	c       counters
	drops   *ratelog.Limiter // one loud log line per reason and interval
	// loudFirst holds the reason and namespace pairs whose first drop was
	// logged loud, at most maxLoudFirst of them; guarded by mu.
	loudFirst map[loudKey]struct{}
	invalid   optval.List // fields of the Options given, reset to their default; logged by Start
}

// NewEngine returns an engine writing to s. It starts nothing: call Start.
// It returns an error for a nil sink (a nil interface or a nil pointer)
// only: a field of opts out of range means its default (Start logs it).
func NewEngine(s EventSink, opts Options) (*Engine, error) {
	if isNil(s) {
		return nil, errorf("nil EventSink")
	}
	o, invalid := opts.withDefaults()
	now := o.Clock.Now()
	e := &Engine{
		sink:    s,
		opts:    o,
		wake:    make(chan struct{}, 1),
		work:    make(chan *task, o.Workers),
		quit:    make(chan struct{}),
		disp:    make(chan struct{}),
		s:       newSched(o, rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())), now),
		drops:   ratelog.New(numReasons),
		logger:  klog.Background(),
		invalid: invalid,
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	return e, nil
}

func isNil(s EventSink) bool { return nilcheck.IsNil(s) }

// Start starts the dispatcher and the workers. They log through
// klog.FromContext(ctx). They run until Stop: ending ctx does not stop
// them (Stop decides what happens to what is left). Calling Start more
// than once, or after Stop, does nothing.
func (e *Engine) Start(ctx context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started || e.stopped {
		return
	}
	e.started = true
	e.logger = klog.FromContext(ctx)
	e.ctx = klog.NewContext(e.ctx, e.logger)
	e.invalid.Log(e.logger, "Invalid sink option, using its default")
	e.idle = e.opts.Workers
	e.wg.Add(e.opts.Workers)
	for range e.opts.Workers {
		go e.worker()
	}
	go e.dispatch()
}

// Add hands the engine the newest state of key: the event to write and, for
// an event the API server already has, the patch to send (nil means
// Create). It never blocks.
//
// If a write of the same event (same name) is waiting, the new state
// replaces it and carries its count. A state of another event of the same
// key (the correlator started a new one) waits behind it as a write of its
// own, so that no count is lost. It returns false when the event was
// dropped (nil event, MaxPending writes waiting) or the engine is stopped;
// both are counted.
func (e *Engine) Add(key string, ev *v1.Event, patch []byte) bool {
	if ev == nil {
		e.countDrop(dropNilEvent, nil, 1, errors.New("sink: Add called with a nil event"))
		return false
	}
	e.mu.Lock()
	if e.stopped {
		e.c.abandoned++
		e.mu.Unlock()
		return false
	}
	now := e.opts.Clock.Now()
	it := &item{ev: ev, patch: patch, create: len(patch) == 0, n: 1, since: now}
	if !e.s.add(key, it, now) {
		e.mu.Unlock()
		e.countDrop(dropPendingFull, ev, 1, nil)
		return false
	}
	e.mu.Unlock()
	e.poke()
	return true
}

// poke wakes the dispatcher.
func (e *Engine) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// stopSlack is how long Stop waits, past its context, for writes that were
// cancelled to return.
const stopSlack = 100 * time.Millisecond

// Stop cancels the requests in flight, stops the dispatcher and the workers
// and counts every event not yet written as abandoned. It returns how many
// events this call abandoned. To deliver first, call Flush before Stop.
//
// Stop returns once the workers have returned, or at the latest when ctx
// ends plus a short slack (100 ms) for cancelled requests to return. A
// write still under way then (a sink that ignores its context or has none)
// is counted as abandoned now; its worker goroutine, and one of Stop's
// waiting for it, stay until the sink call returns, and its result, if it
// comes, is not counted again (it is logged at V(2)). A write the server
// stored whose OnWritten callback is still running then is counted
// written, not abandoned. Stop is idempotent; Add after Stop counts the
// event as abandoned.
func (e *Engine) Stop(ctx context.Context) int64 {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return 0
	}
	e.stopped = true
	started := e.started
	before := e.c.abandoned
	e.cancel()
	close(e.quit)
	e.mu.Unlock()

	if started {
		<-e.disp // never blocks for long: the dispatcher holds no call
		close(e.work)
		done := make(chan struct{})
		go func() { e.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			t := time.NewTimer(stopSlack)
			select {
			case <-done:
			case <-t.C:
			}
			t.Stop()
		}
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	var abandoned int64
	e.s.visit(func(it *item, t *task) {
		switch {
		case t == nil:
			abandoned += it.n
			releaseAll(it)
		case t.stored && !t.abandoned:
			// Stored; its worker is still in OnWritten.
			t.abandoned = true
			e.c.inFlight -= it.n
			e.c.written(it)
			releaseAll(it)
		case !t.abandoned:
			t.abandoned = true
			abandoned += it.n
			e.c.inFlight -= it.n
			releaseAll(it)
		}
	})
	e.s.clear()
	e.c.abandoned += abandoned
	// What Stop counted, and the writes its cancel ended meanwhile.
	return e.c.abandoned - before
}

// Stats returns a snapshot of the engine's counters and state. It takes
// the engine's lock only briefly and never waits for a write.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.opts.Clock.Now()
	st := e.c.snapshot()
	e.s.stats(&st, now)
	return st
}

// dispatch is the dispatcher goroutine: it hands the workers what the
// scheduler allows, and sleeps until something changes or the scheduler's
// next time comes (a token, a probe, the end of a key's interval).
func (e *Engine) dispatch() {
	defer close(e.disp)
	for {
		e.mu.Lock()
		var at time.Time
		for e.idle > 0 && !e.stopped {
			t, next := e.s.next(e.opts.Clock.Now())
			if t == nil {
				at = next
				break
			}
			e.idle--
			e.c.inFlight += t.it.n
			e.work <- t // never blocks: cap Workers, at most idle tasks queued
		}
		e.mu.Unlock()

		var timer <-chan time.Time
		var tm clock.Timer
		if !at.IsZero() {
			d := at.Sub(e.opts.Clock.Now())
			if d <= 0 {
				continue // the time came meanwhile (a fake clock may never fire a timer already due)
			}
			tm = e.opts.Clock.NewTimer(d)
			timer = tm.C()
		}
		select {
		case <-e.quit:
		case <-e.wake:
		case <-timer:
		}
		if tm != nil {
			tm.Stop()
		}
		select {
		case <-e.quit:
			return
		default:
		}
	}
}

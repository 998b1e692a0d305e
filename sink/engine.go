package sink

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/heraldk8s/herald/internal/nilcheck"
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
}

// barrier is one Flush waiting for the writes that were pending.
type barrier struct {
	remaining int
	done      chan struct{}
}

func (b *barrier) release() {
	b.remaining--
	if b.remaining == 0 {
		close(b.done)
	}
}

// NewEngine returns an engine writing to s. It starts nothing: call Start.
// It returns an error for a nil sink (a nil interface or a nil pointer) or a
// negative option.
func NewEngine(s EventSink, opts Options) (*Engine, error) {
	if isNil(s) {
		return nil, errorf("nil EventSink")
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	now := o.Clock.Now()
	e := &Engine{
		sink:   s,
		opts:   o,
		wake:   make(chan struct{}, 1),
		work:   make(chan *task, o.Workers),
		quit:   make(chan struct{}),
		disp:   make(chan struct{}),
		s:      newSched(o, rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())), now),
		drops:  ratelog.New(numReasons),
		logger: klog.Background(),
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
		e.countDrop(DropNilEvent, nil, 1, errors.New("sink: Add called with a nil event"))
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
		e.countDrop(DropPendingFull, ev, 1, nil)
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

// Barrier returns a channel that is closed once every event added before the
// call has been written, dropped or abandoned. Prefer Flush or Wait, whose
// waits can be forgotten.
func (e *Engine) Barrier() <-chan struct{} {
	return e.barrier().done
}

// Wait is Barrier with a way out: done is closed once every event added
// before the call has been written, dropped or abandoned, and forget, for a
// caller that stops waiting, removes the wait from the pending writes so
// that nothing of it stays behind. forget may be called more than once,
// and after done is closed.
func (e *Engine) Wait() (done <-chan struct{}, forget func()) {
	b := e.barrier()
	return b.done, func() { e.forget(b) }
}

func (e *Engine) barrier() *barrier {
	b := &barrier{done: make(chan struct{})}
	e.mu.Lock()
	e.s.visit(func(it *item, t *task) {
		if t == nil || !t.abandoned {
			it.waiters = append(it.waiters, b)
			b.remaining++
		}
	})
	if b.remaining == 0 {
		close(b.done)
	}
	// A Flush does not wait out the keys' intervals (Options.KeyInterval):
	// what it waits for is written now.
	released := b.remaining > 0 && e.s.releaseDelayed()
	e.mu.Unlock()
	if released {
		e.poke()
	}
	return b
}

// Flush waits until every event added before the call has been written,
// dropped or abandoned, or until ctx ends: it then returns ctx's error and
// forgets its wait (nothing of it stays behind).
func (e *Engine) Flush(ctx context.Context) error {
	done, forget := e.Wait()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		forget()
		select {
		case <-done:
			return nil // finished meanwhile
		default:
			return ctx.Err()
		}
	}
}

// forget removes b from every pending write.
func (e *Engine) forget(b *barrier) {
	e.mu.Lock()
	defer e.mu.Unlock()
	select {
	case <-b.done:
		return
	default:
	}
	e.s.visit(func(it *item, _ *task) { it.waiters = deleteBarrier(it.waiters, b) })
}

func deleteBarrier(ws []*barrier, b *barrier) []*barrier {
	out := ws[:0]
	for _, w := range ws {
		if w != b {
			out = append(out, w)
		}
	}
	clear(ws[len(out):])
	return out
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
// is counted as abandoned now; its worker goroutine stays until the sink
// call returns, and its result, if it comes, is not counted again (it is
// logged at V(2)). Stop is idempotent; Add after Stop counts the event as
// abandoned.
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

func releaseAll(it *item) {
	for _, b := range it.waiters {
		b.release()
	}
	it.waiters = nil
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

func (e *Engine) worker() {
	defer e.wg.Done()
	for t := range e.work {
		e.run(t)
	}
}

// run writes one task and records its outcome.
func (e *Engine) run(t *task) {
	ctx := e.ctx
	var out *v1.Event
	err := ctx.Err()
	if err == nil {
		err = checkRequest(t.it)
	}
	if err == nil {
		out, err = e.write(ctx, t.it)
	}
	var (
		r      result
		reason DropReason
	)
	switch {
	case err == nil:
		r.out = outWritten
	case isCancel(ctx, err):
		r.out = outAbandoned
	default:
		cl := Classify(err, !t.it.create)
		if cl.Class == Drop {
			r.out, reason = outDropped, cl.Reason
		} else { // Retry (CreateInstead was handled by write)
			r = result{out: outFailed, fault: faultOf(err, cl), retryAfter: cl.RetryAfter}
		}
	}
	res := r.out

	if res == outWritten && e.opts.OnWritten != nil {
		// Before the waiters are released: a Flush that returns has fed
		// the correlator.
		e.callOnWritten(t.en.key, t.it.ev, out)
	}

	e.mu.Lock()
	if t.abandoned {
		// Stop counted it already.
		e.mu.Unlock()
		if res != outAbandoned {
			e.logger.V(2).Info("Event write returned after the engine stopped; it was counted as abandoned",
				"event", klog.KObj(t.it.ev), "err", err)
		}
		return
	}
	now := e.opts.Clock.Now()
	e.c.inFlight -= t.it.n
	v := e.s.finish(t, r, now)
	requeued, exhausted := v == vRetry, v == vExhausted
	var total int64
	switch {
	case requeued:
		e.c.retried++
	case exhausted:
		reason = DropRetriesExhausted
		total = e.c.drop(reason, t.it.n)
	case res == outWritten:
		if t.it.create {
			e.c.created++
		} else {
			e.c.patched++
		}
		e.c.coalesced += t.it.n - 1
	case res == outDropped:
		total = e.c.drop(reason, t.it.n)
	case res == outAbandoned:
		e.c.abandoned += t.it.n
	}
	if !requeued {
		// Counted before the waiters are released, so that a Flush that
		// returns sees the outcome in Stats.
		releaseAll(t.it)
	}
	e.idle++
	e.mu.Unlock()
	e.poke()

	switch {
	case requeued:
		e.logger.V(4).Info("Event write failed, will retry", "event", klog.KObj(t.it.ev), "object", objectRef(t.it.ev),
			"reason", t.it.ev.Reason, "probe", t.probe, "err", err)
	case exhausted, res == outDropped:
		e.logDrop(reason, t.it.ev, t.it.n, total, err)
	}
}

// callOnWritten runs the user's callback; a panic in it is logged, not
// fatal (the write itself succeeded and is counted).
func (e *Engine) callOnWritten(key string, sent, out *v1.Event) {
	defer func() {
		if r := recover(); r != nil {
			e.logger.Error(fmt.Errorf("panic: %v", r), "OnWritten callback panicked", "event", klog.KObj(out))
		}
	}()
	e.opts.OnWritten(key, sent, out)
}

// errSinkPanicked wraps the value of a panic in a sink call.
var errSinkPanicked = errors.New("sink: EventSink panicked")

// write sends it to the sink: Create, or Patch falling back to Create when
// the event is gone. On a fallback it.create becomes true. A panic in the
// sink becomes an error.
func (e *Engine) write(ctx context.Context, it *item) (out *v1.Event, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("%w: %v", errSinkPanicked, r)
		}
	}()
	rctx, cancel := context.WithTimeout(ctx, e.opts.RequestTimeout)
	defer cancel()
	if !it.create {
		out, err = patch(rctx, e.sink, it.ev, it.patch)
		if err == nil || Classify(err, true).Class != CreateInstead {
			return checkResponse(out, err)
		}
		it.create = true
	}
	ev := *it.ev // the sink may keep what it is given; never hand it our copy's RV
	ev.ResourceVersion = ""
	out, err = create(rctx, e.sink, &ev)
	switch {
	case !apierrors.IsAlreadyExists(err):
	case len(it.patch) > 0:
		// A create that carries later states (its answer was lost, then
		// repeats were merged into the retry): the event is there, so the
		// patch brings it to the newest state.
		it.create = false
		out, err = patch(rctx, e.sink, it.ev, it.patch)
	case it.sent:
		// An earlier try stored it and its answer was lost: the event the
		// server has is this one (event names are unique), so it is
		// written.
		out, err = &ev, nil
	}
	return checkResponse(out, err)
}

// checkResponse turns a success without a stored event (nil, or without a
// name) into ErrBadResponse.
func checkResponse(out *v1.Event, err error) (*v1.Event, error) {
	if err == nil && (out == nil || out.Name == "") {
		return nil, ErrBadResponse
	}
	return out, err
}

// errBadRequest marks a request the client could not even build: it would
// fail the same way every time.
type errBadRequest struct{ msg string }

func (e *errBadRequest) Error() string { return "sink: cannot build the request: " + e.msg }

// checkRequest refuses, before any request, what client-go could not put
// in a request path (a namespace or a name that is not a valid path
// segment, no name for a patch), so that such events are dropped at once as
// rejected instead of retried. What is merely invalid for the API server is
// left to it (a 4xx, dropped too).
func checkRequest(it *item) error {
	ev := it.ev
	if ev.Namespace != "" {
		if errs := validation.IsDNS1123Label(ev.Namespace); len(errs) > 0 {
			return &errBadRequest{fmt.Sprintf("invalid namespace %q: %v", ev.Namespace, errs)}
		}
	}
	if ev.Name == "" {
		if !it.create {
			return &errBadRequest{"a patch needs the event's name"}
		}
		return nil
	}
	if errs := pathSegmentProblems(ev.Name); len(errs) > 0 {
		return &errBadRequest{fmt.Sprintf("invalid event name %q: %v", ev.Name, errs)}
	}
	return nil
}

// pathSegmentProblems returns why name cannot be a segment of a request
// path (the rule of apimachinery's path segment names, which client-go
// applies when it builds a request), or nothing.
func pathSegmentProblems(name string) []string {
	if name == "." || name == ".." {
		return []string{fmt.Sprintf("may not be '%s'", name)}
	}
	var errs []string
	for _, c := range []string{"/", "%"} {
		if strings.Contains(name, c) {
			errs = append(errs, fmt.Sprintf("may not contain '%s'", c))
		}
	}
	return errs
}

// countDrop counts n events dropped for reason outside a write, and logs.
func (e *Engine) countDrop(reason DropReason, ev *v1.Event, n int64, err error) {
	e.mu.Lock()
	total := e.c.drop(reason, n)
	e.mu.Unlock()
	e.logDrop(reason, ev, n, total, err)
}

// logDrop logs n events dropped for reason (total so far). AlreadyExists
// and namespace-terminating drops are expected in normal operation and go
// to V(5), as in client-go; the others are logged at error level once per
// reason and ratelog.Interval, else at V(4).
func (e *Engine) logDrop(reason DropReason, ev *v1.Event, n, total int64, err error) {
	e.mu.Lock()
	logger := e.logger
	e.mu.Unlock()
	kv := []any{"dropReason", string(reason), "events", n, "droppedForReason", total}
	if ev != nil {
		kv = append(kv, "event", klog.KObj(ev), "object", objectRef(ev), "eventReason", ev.Reason)
	}
	switch {
	case reason == DropAlreadyExists || reason == DropNamespaceTerminating:
		logger.V(5).Info("Server rejected event (will not retry!)", append(kv, "err", err)...)
	case e.drops.Allow(reasonIndex(reason), e.opts.Clock.Now()):
		logger.Error(err, "Dropped event, will not retry", kv...)
	default:
		logger.V(4).Info("Dropped event, will not retry", append(kv, "err", err)...)
	}
}

func objectRef(ev *v1.Event) klog.ObjectRef {
	return klog.KRef(ev.InvolvedObject.Namespace, ev.InvolvedObject.Name)
}

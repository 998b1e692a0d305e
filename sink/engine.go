package sink

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"golang.org/x/time/rate"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/internal/ratelog"
)

// Engine delivers events to an EventSink: per-key state, a keyed workqueue,
// several workers, per-key retries with backoff. Create it with [NewEngine],
// start it with [Engine.Start] and stop it with [Engine.Stop]; the goroutines
// it starts run until Stop. All methods are safe for concurrent use.
type Engine struct {
	sink    EventSink
	opts    Options
	queue   workqueue.TypedRateLimitingInterface[string]
	backoff *jitterBackoff
	limiter *rate.Limiter // nil: unlimited

	mu      sync.Mutex
	pending map[string]*entry
	started bool
	stopped bool
	logger  klog.Logger
	drops   *ratelog.Limiter // one loud drop line per reason and interval

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	c      counters
}

// entry is the state of one correlation key.
type entry struct {
	next      *item     // newest state waiting to be written
	busy      *item     // state a worker is writing
	notBefore time.Time // a retry is scheduled: do not write before this
}

// item is one write: the newest event of a key and what it stands for.
type item struct {
	ev      *v1.Event
	patch   []byte
	create  bool       // the API server does not have this event yet
	n       int64      // events this write stands for (itself plus coalesced ones)
	waiters []*barrier // Barrier calls waiting for this write to finish
}

// barrier is one Barrier call waiting for the writes that were pending.
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
// It returns an error for a nil sink or a negative option.
func NewEngine(s EventSink, opts Options) (*Engine, error) {
	if s == nil {
		return nil, errorf("nil EventSink")
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	bo := &jitterBackoff{base: o.BaseDelay, max: o.MaxDelay, failures: map[string]int{}}
	e := &Engine{
		sink:    s,
		opts:    o,
		backoff: bo,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig[string](bo,
			workqueue.TypedRateLimitingQueueConfig[string]{Clock: o.Clock}),
		pending: map[string]*entry{},
		drops:   ratelog.New(numReasons),
		logger:  klog.Background(),
	}
	if o.QPS > 0 {
		e.limiter = rate.NewLimiter(rate.Limit(o.QPS), o.Burst)
	}
	return e, nil
}

// Start starts the workers. They log through klog.FromContext(ctx) and stop
// when ctx ends or Stop is called; only Stop waits for them and accounts for
// what is left. Calling Start more than once does nothing.
func (e *Engine) Start(ctx context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started || e.stopped {
		return
	}
	e.started = true
	e.logger = klog.FromContext(ctx)
	e.ctx, e.cancel = context.WithCancel(ctx)
	e.wg.Add(e.opts.Workers)
	for range e.opts.Workers {
		go e.worker()
	}
}

// Add hands the engine the newest state of key: the event to write and, for
// an event the API server already has, the patch to send (nil means Create).
// It never blocks. If key is already waiting, the waiting write is replaced
// by this one, which carries the newer count. It returns false when the
// event was dropped (too many keys waiting) or the engine is stopped; both
// are counted.
func (e *Engine) Add(key string, ev *v1.Event, patch []byte) bool {
	it := &item{ev: ev, patch: patch, create: len(patch) == 0, n: 1}
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		e.c.abandoned.Add(1)
		return false
	}
	en := e.pending[key]
	if en == nil {
		if len(e.pending) >= e.opts.MaxPending {
			e.mu.Unlock()
			e.logDrop(DropPendingFull, ev, 1, e.c.dropped[reasonIndex(DropPendingFull)].Add(1), nil)
			return false
		}
		en = &entry{}
		e.pending[key] = en
	}
	if old := en.next; old != nil {
		it.n += old.n
		it.create = it.create || old.create
		it.waiters = old.waiters
	}
	en.next = it
	e.c.pending.Add(1)
	retrying := !en.notBefore.IsZero()
	e.mu.Unlock()
	if !retrying {
		e.queue.Add(key)
	}
	return true
}

// Barrier returns a channel that is closed once every event added before the
// call has been written, dropped or abandoned.
func (e *Engine) Barrier() <-chan struct{} {
	b := &barrier{done: make(chan struct{})}
	e.mu.Lock()
	for _, en := range e.pending {
		it := en.next
		if it == nil {
			it = en.busy
		}
		if it != nil {
			it.waiters = append(it.waiters, b)
			b.remaining++
		}
	}
	if b.remaining == 0 {
		close(b.done)
	}
	e.mu.Unlock()
	return b.done
}

// Flush waits until every event added before the call has been written,
// dropped or abandoned, or until ctx ends (it then returns ctx's error).
func (e *Engine) Flush(ctx context.Context) error {
	select {
	case <-e.Barrier():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop cancels requests in flight, stops the workers, waits for them, and
// counts every event not yet written as abandoned. It returns how many events
// this call abandoned. To deliver first, call Flush before Stop. Stop is
// idempotent; Add after Stop counts the event as abandoned.
func (e *Engine) Stop(ctx context.Context) int64 {
	before := e.c.abandoned.Load()
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return 0
	}
	e.stopped = true
	if e.cancel != nil {
		e.cancel()
	}
	e.mu.Unlock()

	e.queue.ShutDown()
	e.wg.Wait()

	e.mu.Lock()
	for key, en := range e.pending {
		if it := en.next; it != nil {
			e.c.pending.Add(-it.n)
			e.c.abandoned.Add(it.n)
			for _, b := range it.waiters {
				b.release()
			}
		}
		delete(e.pending, key)
	}
	e.mu.Unlock()
	return e.c.abandoned.Load() - before
}

// Stats returns a snapshot of the engine's counters.
func (e *Engine) Stats() Stats { return e.c.snapshot() }

func (e *Engine) worker() {
	defer e.wg.Done()
	for {
		key, quit := e.queue.Get()
		if quit {
			return
		}
		e.process(key)
		e.queue.Done(key)
	}
}

// process writes the waiting state of key, once.
func (e *Engine) process(key string) {
	e.mu.Lock()
	en := e.pending[key]
	if en == nil || en.next == nil || en.busy != nil {
		e.mu.Unlock()
		return
	}
	if !en.notBefore.IsZero() {
		if e.opts.Clock.Now().Before(en.notBefore) {
			// Queued early by an Add; the scheduled retry will come.
			e.mu.Unlock()
			return
		}
		en.notBefore = time.Time{}
	}
	it := en.next
	en.next, en.busy = nil, it
	e.c.pending.Add(-it.n)
	e.c.inFlight.Add(it.n)
	e.mu.Unlock()

	ctx := e.ctx
	if err := e.wait(ctx); err != nil {
		e.finish(key, en, it, func() { e.c.abandoned.Add(it.n) })
		return
	}
	out, err := e.write(ctx, it)
	switch {
	case err == nil:
		e.backoff.Forget(key)
		if e.opts.OnWritten != nil {
			e.opts.OnWritten(key, out)
		}
		e.finish(key, en, it, func() {
			if it.create {
				e.c.created.Add(1)
			} else {
				e.c.patched.Add(1)
			}
			e.c.coalesced.Add(it.n - 1)
		})
	case isCancel(ctx, err):
		e.finish(key, en, it, func() { e.c.abandoned.Add(it.n) })
	default:
		cl := Classify(err, !it.create)
		reason := cl.Reason
		if cl.Class != Drop && e.backoff.NumRequeues(key)+1 < e.opts.MaxTries {
			e.retry(key, en, it, cl, err)
			return
		}
		if cl.Class != Drop {
			reason = DropRetriesExhausted
		}
		e.backoff.Forget(key)
		// Counted before the waiters are released, so a Flush that returns
		// sees the drop in Stats; logged after.
		var total int64
		e.finish(key, en, it, func() { total = e.c.dropped[reasonIndex(reason)].Add(it.n) })
		e.logDrop(reason, it.ev, it.n, total, err)
	}
}

// write sends it to the sink: Create, or Patch falling back to Create when
// the event is gone. On a fallback it.create becomes true.
func (e *Engine) write(ctx context.Context, it *item) (*v1.Event, error) {
	rctx, cancel := context.WithTimeout(ctx, e.opts.RequestTimeout)
	defer cancel()
	var out *v1.Event
	var err error
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
	return checkResponse(out, err)
}

func checkResponse(out *v1.Event, err error) (*v1.Event, error) {
	if err == nil && out == nil {
		return nil, ErrBadResponse
	}
	return out, err
}

// finish ends the write of it: account (under the lock), release waiters,
// and forget key unless a newer state is waiting.
func (e *Engine) finish(key string, en *entry, it *item, account func()) {
	e.mu.Lock()
	e.c.inFlight.Add(-it.n)
	if account != nil {
		account()
	}
	for _, b := range it.waiters {
		b.release()
	}
	en.busy = nil
	if en.next == nil && e.pending[key] == en {
		delete(e.pending, key)
	}
	e.mu.Unlock()
}

// retry puts it back as the waiting state of key (merged with anything newer)
// and schedules the key after its backoff or the server's Retry-After.
func (e *Engine) retry(key string, en *entry, it *item, cl Classification, err error) {
	delay := e.backoff.When(key)
	if cl.RetryAfter > delay {
		delay = cl.RetryAfter
	}
	e.logger.V(4).Info("Event write failed, will retry", "event", klog.KObj(it.ev), "object", objectRef(it.ev),
		"reason", it.ev.Reason, "attempt", e.backoff.NumRequeues(key), "delay", delay, "err", err)

	e.mu.Lock()
	e.c.inFlight.Add(-it.n)
	e.c.pending.Add(it.n)
	if newer := en.next; newer != nil {
		newer.n += it.n
		newer.create = newer.create || it.create
		newer.waiters = append(newer.waiters, it.waiters...)
	} else {
		en.next = it
	}
	en.busy = nil
	en.notBefore = e.opts.Clock.Now().Add(delay)
	e.mu.Unlock()
	e.queue.AddAfter(key, delay)
	// Counted last: once Retried moves, the retry is scheduled (tests step
	// a fake clock on it).
	e.c.retried.Add(1)
}

// wait takes a token from the write bucket, waiting on the engine's clock.
func (e *Engine) wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if e.limiter == nil {
		return nil
	}
	now := e.opts.Clock.Now()
	r := e.limiter.ReserveN(now, 1)
	d := r.DelayFrom(now)
	if d <= 0 {
		return nil
	}
	t := e.opts.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		r.CancelAt(e.opts.Clock.Now())
		return ctx.Err()
	}
}

// logDrop logs n events dropped for reason (total so far): at error level
// once per reason and ratelog.Interval, else at V(4).
func (e *Engine) logDrop(reason DropReason, ev *v1.Event, n, total int64, err error) {
	loud := e.drops.Allow(reasonIndex(reason), e.opts.Clock.Now())
	e.mu.Lock()
	logger := e.logger
	e.mu.Unlock()
	kv := []any{"dropReason", string(reason), "event", klog.KObj(ev), "object", objectRef(ev), "eventReason", ev.Reason, "events", n, "droppedForReason", total}
	if loud {
		logger.Error(err, "Dropped event, will not retry", kv...)
	} else {
		logger.V(4).Info("Dropped event, will not retry", append(kv, "err", err)...)
	}
}

func objectRef(ev *v1.Event) klog.ObjectRef {
	return klog.KRef(ev.InvolvedObject.Namespace, ev.InvolvedObject.Name)
}

// jitterBackoff is the workqueue rate limiter of the engine: per-key
// exponential backoff with jitter in [d/2, d].
type jitterBackoff struct {
	base, max time.Duration
	mu        sync.Mutex
	failures  map[string]int
}

var _ workqueue.TypedRateLimiter[string] = (*jitterBackoff)(nil)

func (b *jitterBackoff) When(key string) time.Duration {
	b.mu.Lock()
	n := b.failures[key]
	b.failures[key] = n + 1
	b.mu.Unlock()
	d := b.max
	if n < 32 {
		if x := b.base << n; x > 0 && x < b.max {
			d = x
		}
	}
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(d-half)+1))
}

func (b *jitterBackoff) NumRequeues(key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failures[key]
}

func (b *jitterBackoff) Forget(key string) {
	b.mu.Lock()
	delete(b.failures, key)
	b.mu.Unlock()
}

package watch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	apiwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/heraldk8s/herald/internal/watchext"
)

// The parts of the Broadcaster that herald's record package uses and that
// are not public API.
func init() {
	watchext.Set(watchext.Funcs[Broadcaster]{
		NewPreparing: func(queueLength, behavior int, prepare func(runtime.Object)) *Broadcaster {
			return newPreparingBroadcaster(queueLength, FullChannelBehavior(behavior), prepare)
		},
		Mark: (*Broadcaster).mark,
	})
}

// FullChannelBehavior says what the loop of a [Broadcaster] does with an event
// for a watcher whose channel is full. The values equal apimachinery's.
type FullChannelBehavior int

const (
	// WaitIfChannelFull makes the loop wait until the watcher has room or is
	// stopped (or a ShutdownWithContext gives up). No event is lost, but one slow watcher delays every watcher
	// after it and, once the incoming queue fills up, the producers: Action
	// then waits and ActionOrDrop drops. Any value other than
	// DropIfChannelFull behaves like WaitIfChannelFull.
	WaitIfChannelFull FullChannelBehavior = iota
	// DropIfChannelFull makes the loop skip the event for that watcher and
	// go on; the drop is counted in [Stats].WatcherDropped.
	DropIfChannelFull
)

// ErrShutdown is returned by every method of [Broadcaster] that would queue
// something once [Broadcaster.Shutdown] has been called. Its text is
// apimachinery's, so code matching the message keeps working.
var ErrShutdown = errors.New("broadcaster already stopped")

// incomingQueueLength is the incoming buffer of NewBroadcaster, as in
// apimachinery.
const incomingQueueLength = 25

// Broadcaster offers every event put on its incoming queue to every watcher
// registered at the time, in the order the events were queued; a watcher
// whose channel is full waits for it or misses it, as its
// [FullChannelBehavior] says.
//
// Its methods are those of apimachinery's watch.Broadcaster, with the same
// meaning (see the package doc for the differences), plus the herald
// additions [Broadcaster.ShutdownWithContext] and [Broadcaster.Stats]; the
// watchers it hands out are apimachinery watch.Interfaces.
//
// A Broadcaster runs one loop goroutine, started by the constructor, that
// moves events from the incoming queue to the watchers' channels, offering
// each event to the watchers in the order they registered. Call
// [Broadcaster.Shutdown] (or ShutdownWithContext) when done with it, or the
// goroutine leaks.
//
// All methods are safe for simultaneous use by multiple goroutines. The zero
// value is not usable: create a Broadcaster with [NewBroadcaster] or
// [NewLongQueueBroadcaster].
type Broadcaster struct {
	// mu orders sends on incoming against Shutdown closing it. Every send
	// holds the read lock; a send that has to wait for room also waits on
	// stopping. Shutdown closes stopping first, so that no holder of the read
	// lock stays blocked, then takes the write lock and closes incoming. The
	// write lock is therefore held, and waited for, only for a moment, and
	// ActionOrDrop never waits behind a sender that waits for the queue.
	mu       sync.RWMutex
	incoming chan item
	stopping chan struct{} // closed when Shutdown starts
	done     chan struct{} // closed when the loop has exited
	abandon  chan struct{} // closed when a ShutdownWithContext gives up: the loop no longer waits for watchers

	shutdownOnce sync.Once
	abandonOnce  sync.Once

	watchQueueLength int
	behavior         FullChannelBehavior
	prepare          func(runtime.Object) // run by the loop on each event before it is offered; may be nil

	// watchers is owned by the loop goroutine, in registration order.
	watchers []*watcher

	incomingDropped atomic.Uint64
	watcherDropped  atomic.Uint64
	distributed     atomic.Uint64

	// watching counts the watchers registered or queued for registration
	// and not yet forgotten by the loop. While it is zero nobody can be
	// offered an event, so Action and ActionOrDrop count the event as
	// distributed at once instead of queuing it and waking the loop.
	watching atomic.Int64
}

// item is one entry of the incoming queue: an event to distribute, or, when
// ctl is set, a registration or a mark.
type item struct {
	event apiwatch.Event
	ctl   *control // nil for an ordinary event, which keeps items small
}

// control is the extra part of an item that is not an ordinary event.
// Exactly one field is set.
type control struct {
	watcher *watcher        // register watcher
	markCtx context.Context // distribute event as a mark, its waits bounded by markCtx
}

// errCanceled is what enqueue returns when its cancel channel closes.
var errCanceled = errors.New("watch: enqueue canceled")

// afterSend, if set (by tests), runs in the loop each time it has offered
// an event to a watcher.
var afterSend atomic.Pointer[func()]

// NewBroadcaster returns a Broadcaster with an incoming queue of 25 entries
// and watcher channels of queueLength events, as apimachinery's
// NewBroadcaster. It starts the loop goroutine; call Shutdown to stop it.
// It panics if queueLength is negative.
func NewBroadcaster(queueLength int, behavior FullChannelBehavior) *Broadcaster {
	return newBroadcaster(incomingQueueLength, queueLength, behavior)
}

// NewLongQueueBroadcaster is NewBroadcaster with an incoming queue of
// queueLength entries instead of 25. It starts the loop goroutine; call
// Shutdown to stop it. It panics if queueLength is negative.
func NewLongQueueBroadcaster(queueLength int, behavior FullChannelBehavior) *Broadcaster {
	return newBroadcaster(queueLength, queueLength, behavior)
}

// newPreparingBroadcaster is NewLongQueueBroadcaster with a function the
// loop goroutine calls on each event (not on marks) before offering it to
// the watchers, when there are any: work that the producers need not wait
// for, such as naming the event. prepare must not block, and must not call
// the Broadcaster. herald's record package reaches it through
// internal/watchext.
func newPreparingBroadcaster(queueLength int, behavior FullChannelBehavior, prepare func(runtime.Object)) *Broadcaster {
	b := newBroadcasterNoLoop(queueLength, queueLength, behavior)
	b.prepare = prepare
	go b.loop()
	return b
}

func newBroadcaster(incomingLength, watchQueueLength int, behavior FullChannelBehavior) *Broadcaster {
	b := newBroadcasterNoLoop(incomingLength, watchQueueLength, behavior)
	go b.loop()
	return b
}

func newBroadcasterNoLoop(incomingLength, watchQueueLength int, behavior FullChannelBehavior) *Broadcaster {
	if watchQueueLength < 0 {
		panic(fmt.Sprintf("watch: negative queueLength %d", watchQueueLength))
	}
	b := &Broadcaster{
		incoming:         make(chan item, incomingLength),
		stopping:         make(chan struct{}),
		done:             make(chan struct{}),
		abandon:          make(chan struct{}),
		watchQueueLength: watchQueueLength,
		behavior:         behavior,
	}
	return b
}

// Watch registers a new watcher and returns it. The watcher receives exactly the events queued after the
// registration (none queued before), in order, on a channel of the
// broadcaster's queueLength.
//
// The registration goes through the incoming queue, which is what orders it
// against the events: Watch waits while the queue is full, like Action, and
// returns as soon as the registration is queued, without waiting for the loop
// to reach it. It returns ErrShutdown, and no watcher, once Shutdown has been
// called. A watcher registered while Shutdown runs is closed by it.
//
// The caller must call Stop on the watcher, or keep reading its channel
// until it is closed, or else (under WaitIfChannelFull) the loop waits for
// it forever.
func (b *Broadcaster) Watch() (apiwatch.Interface, error) {
	return b.watch(newWatcher(b.watchQueueLength))
}

// WatchWithPrefix is Watch, except that the watcher first receives the
// events of prefix, then exactly the events queued after its registration.
// The watcher's channel holds at least len(prefix)+1 events (as in
// apimachinery), so the prefix always fits. It waits and fails like Watch.
func (b *Broadcaster) WatchWithPrefix(prefix []apiwatch.Event) (apiwatch.Interface, error) {
	w := newWatcher(max(b.watchQueueLength, len(prefix)+1))
	for _, ev := range prefix {
		w.result <- ev // fits: nobody else sends before registration
	}
	return b.watch(w)
}

func (b *Broadcaster) watch(w *watcher) (apiwatch.Interface, error) {
	b.watching.Add(1) // before the registration is queued: no event queued after it may skip the queue
	if err := b.enqueue(item{ctl: &control{watcher: w}}, nil, false); err != nil {
		b.watching.Add(-1)
		return nil, err
	}
	return w, nil
}

// unwatched counts ev as distributed without queuing it when no watcher is
// registered or being registered, and reports whether it did.
func (b *Broadcaster) unwatched() bool {
	if b.watching.Load() != 0 {
		return false
	}
	b.distributed.Add(1)
	return true
}

// Action queues an event of type action carrying obj, to be delivered to
// every watcher registered at the time. It waits while the incoming queue is
// full (under WaitIfChannelFull, for as long as a slow watcher holds up the
// loop) and returns ErrShutdown, with the event not queued, once Shutdown has
// been called; a call that is waiting when Shutdown starts returns
// ErrShutdown then. An event Action queued (nil error) is always distributed,
// even when Shutdown races with it.
func (b *Broadcaster) Action(action apiwatch.EventType, obj runtime.Object) error {
	return b.enqueue(item{event: apiwatch.Event{Type: action, Object: obj}}, nil, true)
}

// ActionOrDrop is Action without the wait: it queues the event if the
// incoming queue has room and reports true, or drops it, counts the drop in
// [Stats].Dropped and reports false. It returns (false, ErrShutdown) once
// Shutdown has been called.
//
// ActionOrDrop never waits for the queue, the loop or a watcher, and does not
// allocate. Unlike apimachinery's, it never waits behind Watch, Stop,
// Action or Shutdown while they wait for the queue: it shares an internal
// read lock with them, whose write side only Shutdown takes, for a moment,
// after releasing every call that waits for the queue.
func (b *Broadcaster) ActionOrDrop(action apiwatch.EventType, obj runtime.Object) (bool, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	select {
	case <-b.stopping:
		return false, ErrShutdown
	default:
	}
	if b.unwatched() {
		return true, nil
	}
	select {
	case b.incoming <- item{event: apiwatch.Event{Type: action, Object: obj}}:
		return true, nil
	default:
		b.incomingDropped.Add(1)
		return false, nil
	}
}

// mark is a herald extension, not found in apimachinery, that herald's
// record package reaches through internal/watchext. It queues obj
// behind everything already queued, as an event of type watch.Added (a
// consumer tells a mark from an ordinary event by the Go type of obj, which
// should be one of its own), and returns once obj is queued. Like Action it
// waits while the incoming queue is full, but only until ctx ends, when it
// returns ctx.Err() with nothing queued. It returns ErrShutdown, with nothing
// queued, once Shutdown has been called.
//
// When the loop reaches the mark it delivers it to every watcher registered
// at that point, whatever the FullChannelBehavior: if a watcher's channel is
// full the mark waits for room, until the watcher is stopped, Shutdown is
// called or ctx ends, and in those cases skips that watcher (a skipped mark
// is not counted as a drop). So a consumer that receives the mark has been
// offered every event queued before it: it has received each of them or it
// was counted as dropped.
//
// Under DropIfChannelFull the loop never waits for a mark: a watcher whose
// channel is full gets the mark from a goroutine of its own as soon as it
// has room, and until that goroutine has delivered it every event for that
// watcher is counted as dropped (so none overtakes the mark). One stuck watcher thus delays
// nothing but itself. Under WaitIfChannelFull the loop waits for room, as
// it does for events; cancel ctx to bound how long a mark can hold it up.
//
// If obj implements watchext.MarkNotifier, the loop calls its MarkDistributed once
// it has offered the mark to every watcher, even when there are none: by
// then every event queued before the mark has been offered to every
// watcher and counted in [Stats].Distributed.
//
// mark does not wait for delivery. A caller that needs to know when a
// watcher's consumer got the mark must hear it from that consumer (for
// instance through a channel inside obj), and must also take the watcher's
// channel closing (Stop, Shutdown) as the end of the wait.
func (b *Broadcaster) mark(ctx context.Context, obj runtime.Object) error {
	it := item{event: apiwatch.Event{Type: apiwatch.Added, Object: obj}, ctl: &control{markCtx: ctx}}
	if err := b.enqueue(it, ctx.Done(), false); err != nil {
		if errors.Is(err, errCanceled) {
			return ctx.Err()
		}
		return err
	}
	return nil
}

// enqueue puts it on the incoming queue, waiting for room until Shutdown is
// called (ErrShutdown) or cancel, which may be nil, is closed (errCanceled).
// An event (event true) nobody watches is counted as distributed instead.
func (b *Broadcaster) enqueue(it item, cancel <-chan struct{}, event bool) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	select {
	case <-b.stopping:
		return ErrShutdown
	default:
	}
	if event && b.unwatched() {
		return nil
	}
	if cancel != nil {
		select {
		case <-cancel:
			return errCanceled
		default:
		}
	}
	select { // fast path: a plain non-blocking send is much cheaper than the select below
	case b.incoming <- it:
		return nil
	default:
	}
	select {
	case b.incoming <- it:
		return nil
	case <-b.stopping:
		return ErrShutdown
	case <-cancel:
		return errCanceled
	}
}

// Shutdown stops the broadcaster. From the moment it is called, Action,
// ActionOrDrop, Watch and WatchWithPrefix return ErrShutdown, and calls
// waiting for room in the queue give up with ErrShutdown. Everything already
// queued is then distributed to the watchers as usual (under
// WaitIfChannelFull that waits for slow watchers to read or stop), every
// watcher's channel is closed, and Shutdown returns once the loop goroutine
// has exited. It does not wait for watchers to read what is left in their
// channels. Under WaitIfChannelFull a watcher that is neither read nor
// stopped holds Shutdown up for ever; [Broadcaster.ShutdownWithContext]
// bounds the wait.
//
// Shutdown can be called any number of times, from any goroutine; every call
// returns once the loop has exited.
func (b *Broadcaster) Shutdown() {
	_ = b.ShutdownWithContext(context.Background())
}

// ShutdownWithContext is Shutdown with a deadline, a herald addition: it
// returns nil once the loop has distributed everything queued and exited, as
// Shutdown does. If ctx ends first, the loop stops waiting for watchers
// whose channel is full: the events left are put in the channels that have
// room and counted as dropped for the others ([Stats].WatcherDropped), every
// channel is closed, and ShutdownWithContext returns ctx.Err() once the
// loop has exited, which then takes no longer than handing out what is
// queued without waiting. A Shutdown running at the same time returns then
// too.
//
// Under DropIfChannelFull the loop never waits for a watcher, so ctx only
// bounds how long the distribution of a long queue may take.
func (b *Broadcaster) ShutdownWithContext(ctx context.Context) error {
	b.shutdownOnce.Do(func() {
		close(b.stopping)
		// Every sender holding the read lock now returns promptly: it either
		// has room or sees stopping.
		b.mu.Lock()
		close(b.incoming)
		b.mu.Unlock()
	})
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
	}
	select {
	case <-b.done: // done by the time ctx ended
		return nil
	default:
	}
	b.abandonOnce.Do(func() { close(b.abandon) })
	<-b.done
	return ctx.Err()
}

// Stats is a snapshot of a Broadcaster's queue and drop counters.
type Stats struct {
	// Queued is the number of entries waiting in the incoming queue:
	// events, marks and registrations of new watchers.
	Queued int
	// Dropped counts the events ActionOrDrop dropped because the incoming
	// queue was full.
	Dropped uint64
	// WatcherDropped counts the events skipped for a watcher whose channel
	// was full (under DropIfChannelFull, or once ShutdownWithContext gave up
	// waiting), summed over every watcher there has been, stopped ones
	// included.
	WatcherDropped uint64
	// Distributed counts the events the loop has taken from the incoming
	// queue and offered to every watcher registered at the time, however
	// many there were (none included); an event is counted once the loop
	// is done with it. An event queued while no watcher is registered or
	// being registered never enters the queue: it is counted at once.
	// Marks are not counted.
	Distributed uint64
}

// Stats returns the current counters. It never waits and is safe to call at
// any time, including after Shutdown.
func (b *Broadcaster) Stats() Stats {
	return Stats{
		Queued:         len(b.incoming),
		Dropped:        b.incomingDropped.Load(),
		WatcherDropped: b.watcherDropped.Load(),
		Distributed:    b.distributed.Load(),
	}
}

// loop runs until Shutdown closes incoming: it distributes what is queued,
// then closes every watcher.
func (b *Broadcaster) loop() {
	defer close(b.done)
	for it := range b.incoming {
		switch {
		case it.ctl == nil:
			b.distribute(it.event, nil)
		case it.ctl.watcher != nil:
			b.register(it.ctl.watcher)
		default:
			b.distribute(it.event, it.ctl.markCtx)
		}
	}
	for _, w := range b.watchers {
		w.closeResult()
	}
	b.watchers = nil
}

// register adds w to the watchers, unless it is stopped already, and forgets
// the watchers that have stopped since the last event, so that watchers
// started and stopped while no events flow do not pile up.
func (b *Broadcaster) register(w *watcher) {
	n := len(b.watchers)
	b.watchers = slices.DeleteFunc(b.watchers, (*watcher).isStopped)
	gone := n - len(b.watchers)
	if w.isStopped() {
		gone++
	} else {
		b.watchers = append(b.watchers, w)
	}
	b.watching.Add(-int64(gone))
}

// distribute offers ev to every watcher in registration order and forgets
// watchers that have stopped. A non-nil markCtx makes ev a mark, which is
// never counted as dropped: under DropIfChannelFull a mark that finds a
// watcher full is left to that watcher's mark sender and the loop goes on at
// once; under WaitIfChannelFull it waits, like events, until markCtx ends or
// Shutdown is called.
func (b *Broadcaster) distribute(ev apiwatch.Event, markCtx context.Context) {
	var wait bool
	var abortA, abortB <-chan struct{}
	switch {
	case markCtx != nil && b.behavior == DropIfChannelFull:
	case markCtx != nil:
		wait, abortA, abortB = true, markCtx.Done(), b.stopping
	case b.behavior != DropIfChannelFull:
		wait, abortA = true, b.abandon
	}
	if markCtx == nil && b.prepare != nil && len(b.watchers) > 0 {
		b.prepare(ev.Object)
	}
	live := b.watchers[:0]
	for _, w := range b.watchers {
		var r sendResult
		if markCtx != nil && !wait {
			r = w.sendMark(ev, markCtx)
		} else {
			r = w.send(ev, markCtx == nil, wait, abortA, abortB)
		}
		if f := afterSend.Load(); f != nil {
			(*f)()
		}
		switch r {
		case sendStopped:
			b.watching.Add(-1)
			continue // forget it; Stop closes its channel
		case sendFull:
			if markCtx == nil {
				b.watcherDropped.Add(1)
			}
		}
		live = append(live, w)
	}
	clear(b.watchers[len(live):])
	b.watchers = live
	if markCtx == nil {
		b.distributed.Add(1)
	}
	if n, ok := ev.Object.(watchext.MarkNotifier); ok && markCtx != nil {
		n.MarkDistributed()
	}
}

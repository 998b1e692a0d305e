package watch

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	apiwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/heraldk8s/herald/internal/watchext"
)

// watcher is one consumer's view of a [Broadcaster]: an apimachinery
// watch.Interface whose channel receives the broadcaster's events. Watch and
// WatchWithPrefix return a *watcher as a watch.Interface; herald's record
// package reaches Stopped, Dropped and Offered through internal/watchext.
//
// The contract is apimachinery's: the consumer reads ResultChan until it is
// closed and calls Stop when it wants to finish early. The channel is closed
// by Stop or by the broadcaster's Shutdown, whichever comes first.
//
// All methods are safe for simultaneous use by multiple goroutines. The zero
// value is not usable: watchers come only from a Broadcaster.
type watcher struct {
	result   chan apiwatch.Event
	stopped  chan struct{} // closed by Stop
	stopOnce sync.Once

	// mu makes the loop's sends on result and the closing of result mutually
	// exclusive, so result is never sent on once closed. Stop closes stopped
	// before it takes mu, which wakes a loop that waits, holding mu, for room
	// in result.
	mu     sync.Mutex
	closed bool
	// marks are the marks that found result full under DropIfChannelFull,
	// oldest first. The mark sender, a goroutine that runs only while
	// marks is not empty, delivers them as room appears, so that the loop
	// never waits for this watcher; meanwhile the loop counts every event
	// for this watcher as dropped, which keeps each mark behind every event
	// queued before it.
	marks []pendingMark
	// sender is closed when the running mark sender exits; nil when none
	// runs.
	sender chan struct{}
	// closing is closed when the channel starts closing: it ends the mark
	// sender's wait, and closeResult waits for the sender to exit before
	// closing result, so the sender's send never meets a closed channel.
	closing   chan struct{}
	closeOnce sync.Once

	dropped atomic.Uint64
	offered atomic.Uint64
}

// pendingMark is a mark waiting for room in a watcher's channel.
type pendingMark struct {
	ev  apiwatch.Event
	ctx context.Context
}

var _ watchext.Watcher = (*watcher)(nil)

func newWatcher(size int) *watcher {
	return &watcher{
		result:  make(chan apiwatch.Event, size),
		stopped: make(chan struct{}),
		closing: make(chan struct{}),
	}
}

// ResultChan returns the channel on which the watcher receives events. The
// channel is closed after Stop or Shutdown; every event delivered before that
// stays readable.
func (w *watcher) ResultChan() <-chan apiwatch.Event {
	return w.result
}

// Stop ends the watch: the broadcaster forgets the watcher and its channel is
// closed before Stop returns (events already in it stay readable). If the
// broadcaster's loop is waiting for room in this watcher's channel, it stops
// waiting and goes on with the other watchers. Stop returns at once, without
// waiting for the loop or the queue, and can be called any number of times,
// from any goroutine, before, during or after Shutdown.
func (w *watcher) Stop() {
	w.stopOnce.Do(func() {
		close(w.stopped)
		w.closeResult()
	})
}

// Stopped returns a channel that is closed when Stop is called (not when
// Shutdown closes the watcher's channel).
func (w *watcher) Stopped() <-chan struct{} {
	return w.stopped
}

// Dropped returns how many events this watcher missed because its channel was
// full when the loop offered them (DropIfChannelFull only; marks are never
// dropped).
func (w *watcher) Dropped() uint64 {
	return w.dropped.Load()
}

// Offered returns how many events the loop offered this watcher: those it
// put in the channel plus those counted in Dropped. Marks are not counted.
// Once the watcher is stopped or closed the count no longer changes, so
// Offered minus Dropped is then exactly the number of events the channel
// received.
func (w *watcher) Offered() uint64 {
	return w.offered.Load()
}

// isStopped reports whether Stop has been called.
func (w *watcher) isStopped() bool {
	select {
	case <-w.stopped:
		return true
	default:
		return false
	}
}

// closeResult closes result unless it is closed already. Every caller returns
// once result is closed. It waits for the mark sender, which its closing
// channel has told to give up, and so for nothing that can block.
func (w *watcher) closeResult() {
	w.closeOnce.Do(func() {
		w.mu.Lock()
		w.closed = true
		close(w.closing)
		sender := w.sender
		w.mu.Unlock()
		if sender != nil {
			<-sender
		}
		close(w.result)
	})
}

// sendResult is what send did with an event.
type sendResult uint8

const (
	sendDelivered sendResult = iota // the event is in the channel
	sendFull                        // the channel was full (and the wait, if any, was aborted)
	sendStopped                     // the watcher is stopped or closed
	sendDeferred                    // a mark was left to the mark sender
)

// putLocked puts ev in the channel if it has room and no mark waits for the
// mark sender (ev must not overtake it). w.mu is held.
func (w *watcher) putLocked(ev apiwatch.Event) bool {
	if len(w.marks) > 0 {
		return false
	}
	select {
	case w.result <- ev:
		return true
	default:
		return false
	}
}

// send puts ev in the watcher's channel if it has room. Otherwise, if wait is
// set, it waits for room until the watcher is stopped or abortA or abortB
// (either may be nil) is closed.
// While marks wait for the mark sender, ev finds the channel full and does
// not wait: it must not overtake them.
// An event that is not a mark (count) is counted in Offered, and in Dropped
// if the channel was full, before mu is released: once Stop (which takes mu
// to close the channel) has returned, the counts no longer change.
func (w *watcher) send(ev apiwatch.Event, count, wait bool, abortA, abortB <-chan struct{}) sendResult {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.offerLocked(ev, wait, abortA, abortB)
	if count && r != sendStopped {
		w.offered.Add(1)
		if r == sendFull {
			w.dropped.Add(1)
		}
	}
	return r
}

// offerLocked is send's offer of ev. w.mu is held.
func (w *watcher) offerLocked(ev apiwatch.Event, wait bool, abortA, abortB <-chan struct{}) sendResult {
	if w.closed {
		return sendStopped
	}
	if w.putLocked(ev) {
		return sendDelivered
	}
	if !wait || len(w.marks) > 0 {
		select {
		case <-w.stopped: // Stop is waiting for mu to close result
			return sendStopped
		default:
			return sendFull
		}
	}
	select {
	case w.result <- ev:
		return sendDelivered
	case <-w.stopped:
		return sendStopped
	case <-abortA:
		return sendFull
	case <-abortB:
		return sendFull
	}
}

// sendMark puts a mark in the channel if it has room and no older mark is
// waiting; otherwise it leaves the mark to the mark sender (starting it if
// needed) and returns sendDeferred at once. The sender delivers it when room
// appears, or gives it up when ctx ends or the watcher is stopped or closed.
func (w *watcher) sendMark(ev apiwatch.Event, ctx context.Context) sendResult {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return sendStopped
	}
	if w.putLocked(ev) {
		return sendDelivered
	}
	if w.isStopped() {
		return sendStopped
	}
	// Forget marks whose wait has ended, except the first, which the
	// sender may be sending.
	if len(w.marks) > 1 {
		rest := slices.DeleteFunc(w.marks[1:], func(m pendingMark) bool { return m.ctx.Err() != nil })
		clear(w.marks[1+len(rest):])
		w.marks = w.marks[:1+len(rest)]
	}
	w.marks = append(w.marks, pendingMark{ev: ev, ctx: ctx})
	if w.sender == nil {
		w.sender = make(chan struct{})
		go w.sendMarks(w.sender)
	}
	return sendDeferred
}

// sendMarks is the mark sender: it delivers w.marks in order, each as soon as
// the channel has room, and exits when none is left or the watcher is
// stopped or closing. It never holds mu while it waits.
func (w *watcher) sendMarks(done chan struct{}) {
	defer close(done)
	for {
		w.mu.Lock()
		if w.closed || len(w.marks) == 0 || w.isStopped() {
			clear(w.marks)
			w.marks = w.marks[:0]
			w.sender = nil
			w.mu.Unlock()
			return
		}
		m := w.marks[0]
		w.mu.Unlock()
		sent := false
		if m.ctx.Err() == nil {
			select {
			case w.result <- m.ev: // result is open: closeResult waits for us
				sent = true
			case <-m.ctx.Done():
			case <-w.stopped:
			case <-w.closing:
			}
		}
		w.mu.Lock()
		if sent || m.ctx.Err() != nil {
			w.marks[0] = pendingMark{}
			w.marks = w.marks[1:]
		}
		w.mu.Unlock()
	}
}

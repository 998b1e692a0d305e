package watch

import (
	"sync"
	"sync/atomic"

	apiwatch "k8s.io/apimachinery/pkg/watch"
)

// Watcher is one consumer's view of a [Broadcaster]: an apimachinery
// watch.Interface whose channel receives the broadcaster's events. Watch and
// WatchWithPrefix return a *Watcher as a watch.Interface; assert the type to
// reach Dropped.
//
// The contract is apimachinery's: the consumer reads ResultChan until it is
// closed and calls Stop when it wants to finish early. The channel is closed
// by Stop or by the broadcaster's Shutdown, whichever comes first.
//
// All methods are safe for simultaneous use by multiple goroutines. The zero
// value is not usable: watchers come only from a Broadcaster.
type Watcher struct {
	result   chan apiwatch.Event
	stopped  chan struct{} // closed by Stop
	stopOnce sync.Once

	// mu makes the loop's sends on result and the closing of result mutually
	// exclusive, so result is never sent on once closed. Stop closes stopped
	// before it takes mu, which wakes a loop that waits, holding mu, for room
	// in result.
	mu     sync.Mutex
	closed bool

	dropped atomic.Uint64
}

var _ apiwatch.Interface = (*Watcher)(nil)

func newWatcher(size int) *Watcher {
	return &Watcher{
		result:  make(chan apiwatch.Event, size),
		stopped: make(chan struct{}),
	}
}

// ResultChan returns the channel on which the watcher receives events. The
// channel is closed after Stop or Shutdown; every event delivered before that
// stays readable.
func (w *Watcher) ResultChan() <-chan apiwatch.Event {
	return w.result
}

// Stop ends the watch: the broadcaster forgets the watcher and its channel is
// closed before Stop returns (events already in it stay readable). If the
// broadcaster's loop is waiting for room in this watcher's channel, it stops
// waiting and goes on with the other watchers. Stop returns at once, without
// waiting for the loop or the queue, and can be called any number of times,
// from any goroutine, before, during or after Shutdown.
func (w *Watcher) Stop() {
	w.stopOnce.Do(func() {
		close(w.stopped)
		w.closeResult()
	})
}

// Dropped returns how many events this watcher missed because its channel was
// full when the loop offered them (DropIfChannelFull only; marks are never
// dropped).
func (w *Watcher) Dropped() uint64 {
	return w.dropped.Load()
}

// isStopped reports whether Stop has been called.
func (w *Watcher) isStopped() bool {
	select {
	case <-w.stopped:
		return true
	default:
		return false
	}
}

// closeResult closes result unless it is closed already.
func (w *Watcher) closeResult() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		close(w.result)
	}
}

// sendResult is what send did with an event.
type sendResult uint8

const (
	sendDelivered sendResult = iota // the event is in the channel
	sendFull                        // the channel was full (and the wait, if any, was aborted)
	sendStopped                     // the watcher is stopped or closed
)

// send puts ev in the watcher's channel if it has room. Otherwise, if wait is
// set, it waits for room until the watcher is stopped or abortA or abortB
// (either may be nil) is closed.
func (w *Watcher) send(ev apiwatch.Event, wait bool, abortA, abortB <-chan struct{}) sendResult {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return sendStopped
	}
	select {
	case w.result <- ev:
		return sendDelivered
	default:
	}
	if !wait {
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

// This file holds the recording sessions of a broadcaster: each
// StartRecordingToSink (or StartRecordingToSinkWithContext) starts one, and
// the events recorded while one stops and the next starts are held for the
// next. The broadcaster type is in broadcaster.go.

package events

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/internal/hook"
)

// session is one StartRecordingToSink: the sink's pipeline, from its start
// to the end of its context (or stopCh).
type session struct {
	ctx       context.Context
	stopCh    <-chan struct{}    // StartRecordingToSink's; nil for WithContext
	w         apiwatch.Interface // the sink's watch, once started
	stopAfter func() bool        // unregisters the stop on ctx's end
}

// ended reports whether the session's context has ended or its stopCh is
// closed (the goroutine that cancels the context for it may not have run
// yet).
func (s *session) ended() bool {
	if s.ctx.Err() != nil {
		return true
	}
	select {
	case <-s.stopCh: // a nil stopCh never closes
		return true
	default:
		return false
	}
}

// hold keeps the events recorded while recording restarts (a start waits
// for the old sink's watch to stop), and queues them once the new sink's
// watch is registered: the old sink takes every event queued before its
// stop, the new one every event queued after its start, so an event held
// in between reaches exactly one sink. The recorders pass through it at
// the cost of one atomic load when nothing is held.
type hold struct {
	on atomic.Bool // events are held (set and cleared under mu)
	mu sync.Mutex
	// events are the held events and their recorders' loggers, in the
	// order they were recorded; at most the queue length, later ones are
	// counted queue_full drops (queued, they could reach no sink).
	events []heldEvent
	// done is closed when the hold ends; nil when nothing is held.
	done chan struct{}
}

type heldEvent struct {
	logger klog.Logger
	ev     *v1.Event
}

// gatedCore is the broadcaster's hook.Core as its recorders see it: every
// event passes the hold.
type gatedCore struct {
	hook.Core
	b *broadcaster
}

func (c gatedCore) Enqueue(logger klog.Logger, ev *v1.Event) { c.b.enqueue(logger, ev) }

// enqueue queues ev, or holds it while recording restarts. It never
// blocks for longer than the release of a restart takes to queue what it
// held (queuing never waits).
func (b *broadcaster) enqueue(logger klog.Logger, ev *v1.Event) {
	if b.hold.on.Load() {
		b.hold.mu.Lock()
		if b.hold.on.Load() {
			if len(b.hold.events) < b.core.QueueLength() {
				b.hold.events = append(b.hold.events, heldEvent{logger, ev})
				b.hold.mu.Unlock()
				return
			}
			// Queued now it would reach the old sink only if the loop
			// passed it before that sink stops, else no sink at all:
			// a counted drop instead, as a full queue's.
			b.hold.mu.Unlock()
			b.core.DropQueueFull(logger, ev)
			return
		}
		b.hold.mu.Unlock()
	}
	b.core.Enqueue(logger, ev)
}

// holdLocked starts holding the recorders' events. b.mu is held.
func (b *broadcaster) holdLocked() {
	b.hold.mu.Lock()
	defer b.hold.mu.Unlock()
	if b.hold.done == nil {
		b.hold.done = make(chan struct{})
		b.hold.on.Store(true)
	}
}

// releaseLocked queues the held events in the order they were recorded and
// ends the hold; recorders wait for it meanwhile, so none of their later
// events overtakes a held one. b.mu is held.
func (b *broadcaster) releaseLocked() {
	b.hold.mu.Lock()
	defer b.hold.mu.Unlock()
	if b.hold.done == nil {
		return
	}
	for i, h := range b.hold.events {
		b.core.Enqueue(h.logger, h.ev)
		b.hold.events[i] = heldEvent{}
	}
	b.hold.events = b.hold.events[:0]
	b.hold.on.Store(false)
	close(b.hold.done)
	b.hold.done = nil
}

// StartRecordingToSink is client-go's deprecated form of
// StartRecordingToSinkWithContext: recording stops when stopCh closes (or at
// Shutdown; a nil stopCh never closes). Called again once stopCh is closed,
// it starts recording again, as client-go does.
func (b *broadcaster) StartRecordingToSink(stopCh <-chan struct{}) {
	if stopCh == nil {
		// Nothing to wait for: recording stops at Shutdown (or when the
		// broadcaster's own context ends), and no goroutine is left behind.
		if err := b.start(context.Background(), nil); err != nil {
			b.logger.Error(err, "Failed to start recording to sink")
		}
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := b.start(ctx, stopCh); err != nil {
		cancel()
		b.logger.Error(err, "Failed to start recording to sink")
		return
	}
	go func() {
		select {
		case <-stopCh:
		case <-b.core.ShutDown(): // however it was shut down (Shutdown, record.WithContext)
		}
		cancel()
	}()
}

// StartRecordingToSinkWithContext starts writing recorded events to the
// broadcaster's sink until ctx ends or Shutdown: when ctx ends, what was
// recorded before is still written (for the shutdown grace period), then
// the sink's goroutines stop. It returns an error after Shutdown, without a
// sink, or while the broadcaster already records (client-go would start a
// second pipeline that writes every event twice).
//
// Recording may start again once the context of the previous start has
// ended, at once, even while the old sink still takes what was recorded
// before: the new sink starts as soon as the old one has taken it (within
// milliseconds; at most the shutdown grace period), and the events
// recorded meanwhile are held and handed to the new sink, so that each
// event recorded after the call is written once, by one of them (up to the
// broadcaster's queue length held; past it, an event is dropped as
// queue_full, as a full queue's would be). The call never waits for that.
// If the broadcaster shuts down meanwhile, the held events go to the old
// sink, which writes them as it retires. The series go on across the
// restart, as client-go's: they are the broadcaster's, not the sink's, and
// a count the old sink still writes never overwrites a higher one the new
// sink wrote.
func (b *broadcaster) StartRecordingToSinkWithContext(ctx context.Context) error {
	return b.start(ctx, nil)
}

var errRecording = errors.New("events: the broadcaster already records to its sink")

// start starts recording until ctx ends (or stopCh closes, which cancels
// ctx soon after). If the previous recording has ended but its sink has not
// stopped yet, the start is left to stopRecording, and the recorders'
// events are held until then.
func (b *broadcaster) start(ctx context.Context, stopCh <-chan struct{}) error {
	if b.sink == nil {
		return errors.New("events: the broadcaster has no sink (NewBroadcaster was given nil)")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed, b.core.Stopping():
		// closed: the shutdown has begun, and a start now could hold
		// events no sink ever takes.
		return errStopped
	case ctx.Err() != nil:
		return ctx.Err()
	}
	s := &session{ctx: ctx, stopCh: stopCh}
	switch {
	case b.rec == nil:
		b.beginLocked(s)
	case !b.rec.ended(), b.next != nil && !b.next.ended():
		return errRecording
	default:
		// The old sink is stopping (or about to: its context has ended);
		// stopRecording starts this one once it has stopped.
		b.next = s
		b.holdLocked()
	}
	return nil
}

// beginLocked starts the sink's pipeline for s. b.mu is held.
func (b *broadcaster) beginLocked(s *session) {
	s.w = b.rb.StartRecordingToSink(b.sink)
	b.rec = s
	s.stopAfter = context.AfterFunc(s.ctx, func() { b.stopRecording(s) })
}

// stopRecording stops the sink's watch of s, so that it takes every event
// recorded before (record's sink watch does), writes them and stops; then
// the next recording, if one waits, starts (not before: the two sinks
// would both take what is recorded meanwhile and write it twice), and the
// events held meanwhile are queued for it.
//
// The watch stops under b.mu, so that its mark follows the held events a
// release queued for s (a session may end as soon as it begins). A waiting
// session that ended before it could begin still begins: the events
// recorded after its start were held for it, and it writes them as it
// retires (its context has ended, so it stops at once); with no session to
// take them they would reach no sink.
func (b *broadcaster) stopRecording(s *session) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s.w.Stop()
	if b.rec != s {
		return
	}
	b.rec = nil
	n := b.next
	b.next = nil
	if n != nil && !b.core.Stopping() {
		b.beginLocked(n)
	}
	b.releaseLocked()
}

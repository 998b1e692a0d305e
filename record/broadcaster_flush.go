// This file holds Flush and the flush marks it sends through the
// broadcaster behind every event recorded before the call.

package record

import (
	"context"
	"errors"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/heraldk8s/herald/watch"
)

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
	fromHandler, fromSink := false, false
	for _, ew := range eb.watchers {
		if me != 0 && ew.goid.Load() == me {
			fromHandler, fromSink = ew.sink == nil, ew.sink != nil
		}
	}
	for _, ew := range eb.watchers {
		if fromSink || (fromHandler && ew.sink == nil) {
			// Called from a handler, which cannot reach the mark before
			// it returns: wait for the sinks only, so that handlers
			// flushing at the same time never wait for each other. Called
			// from a sink's correlator function, wait for no watcher: the
			// sinks share those functions, and two sinks flushing from
			// them would wait for each other.
			continue
		}
		watchers = append(watchers, ew)
		mark.slots[ew] = &flushSlot{reached: make(chan struct{})}
	}
	eb.mu.Unlock()
	if err := watchFuncs.Mark(eb.b, ctx, mark); err != nil {
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

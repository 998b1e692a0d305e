// This file holds shutdown: Shutdown and ShutdownWithContext.
//
// The broadcaster's lifecycle, in one place:
//
//   - start: NewBroadcaster (broadcaster.go) starts the distribution loop;
//     StartEventWatcher, StartLogging, StartStructuredLogging
//     (broadcaster_watchers.go) and StartRecordingToSink
//     (broadcaster_sink.go) each add a watcher served by its own goroutine
//     (serve, broadcaster.go), a sink with its delivery engine.
//   - record: a recorder (recorder.go) counts each event and hands it to the
//     loop, which offers it to every watcher registered at that moment.
//   - flush: Flush (broadcaster_flush.go) sends a mark behind the events
//     recorded so far and waits until every watcher, and every sink's
//     engine, has passed it.
//   - shutdown: ShutdownWithContext (below) refuses new events and
//     watchers, flushes, stops the loop (which closes every watcher's
//     channel), waits for each watcher's goroutine while its context lasts,
//     then abandons (and counts) what is left.
//
// The lifecycle state is held by broadcaster's fields: stopping (recorders
// and Start* refuse), closed (no watcher is registered any more),
// shutdownStarted and shutdownDone (one shutdown runs, the others wait for
// it), and ctx, cancelled when shutdown ends. Counters are summed by Stats
// (broadcaster_stats.go).

package record

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

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
	if f := eb.cfg.beforeShutdown; f != nil {
		f()
	}
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

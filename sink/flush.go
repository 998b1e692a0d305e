// Flush and its barriers: a wait for the writes pending when it began.

package sink

import "context"

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

// Wait returns done, closed once every event added before the call has
// been written, dropped or abandoned, and forget, for a caller that stops
// waiting: it removes the wait from the pending writes so that nothing of
// it stays behind. forget may be called more than once, and after done is
// closed. Flush is Wait bounded by a context.
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
	// A Flush does not wait out the keys' intervals (Options.keyInterval):
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

func releaseAll(it *item) {
	for _, b := range it.waiters {
		b.release()
	}
	it.waiters = nil
}

package sink

import "time"

// WaitersForTest counts the Flush waits held by e's pending writes.
func WaitersForTest(e *Engine) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, en := range e.s.entries {
		if en.busy != nil {
			n += len(en.busy.it.waiters)
		}
		for _, it := range en.queue {
			n += len(it.waiters)
		}
	}
	return n
}

// EntriesForTest counts the keys e remembers: with writes waiting or under
// way, or written within their key interval.
func EntriesForTest(e *Engine) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.s.entries)
}

// WithKeyInterval returns o with its key interval (set by the events
// package through internal/hook) set to d.
func WithKeyInterval(o Options, d time.Duration) Options {
	o.keyInterval = d
	return o
}

// BarrierForTest is Wait without a way out, for tests that always wait.
func BarrierForTest(e *Engine) <-chan struct{} { return e.barrier().done }

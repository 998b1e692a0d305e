// Package ratelog bounds how often a log line of one kind is written at its
// normal level: the recorder and the delivery engine use it so that a flood
// of drops gives one clear line per reason and interval, not one per event.
package ratelog

import (
	"sync/atomic"
	"time"
)

// Interval is the shortest time between two loud lines of one slot.
const Interval = 10 * time.Second

// Limiter remembers, per slot, when a loud line was last allowed. It is
// lock-free and safe for concurrent use; its zero value is not usable (use
// New).
type Limiter struct{ last []atomic.Int64 } // unix nanos, 0: never

// New returns a limiter with slots 0..n-1.
func New(n int) *Limiter { return &Limiter{last: make([]atomic.Int64, n)} }

// Allow reports whether a line for slot may be loud at now: the first time,
// and then at most once per Interval. An out-of-range slot is never loud.
func (l *Limiter) Allow(slot int, now time.Time) bool {
	if slot < 0 || slot >= len(l.last) {
		return false
	}
	last := &l.last[slot]
	prev := last.Load()
	if prev != 0 && now.UnixNano()-prev < int64(Interval) {
		return false
	}
	return last.CompareAndSwap(prev, now.UnixNano())
}

// Package eventlog is the list behind herald's structured test recorders
// (record/recordtest, events/eventstest): events appended in order, read
// as copies, safe for concurrent use.
package eventlog

import "sync"

// Log holds events of type E in the order they were added. The zero value
// is an empty log.
type Log[E any] struct {
	mu     sync.Mutex
	events []E
}

// Add appends e.
func (l *Log[E]) Add(e E) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

// All returns a copy of the events, in order.
func (l *Log[E]) All() []E {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]E(nil), l.events...)
}

// Filter returns the events keep accepts, in order.
func (l *Log[E]) Filter(keep func(E) bool) []E {
	var out []E
	for _, e := range l.All() {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// Reset forgets every event.
func (l *Log[E]) Reset() {
	l.mu.Lock()
	l.events = nil
	l.mu.Unlock()
}

// Package fakeoverflow keeps the overflow counts of the FakeRecorders of
// packages record and events that were built as struct literals, with no
// counter of their own: by their Events channel, so that copies of one
// recorder share a count and different recorders do not.
package fakeoverflow

import (
	"sync"
	"sync/atomic"
)

var counts sync.Map // chan string -> *atomic.Int64

// Counter returns own if it is not nil, else the count of ch, made when
// create is set (at the first overflow) and nil otherwise (nothing
// overflowed yet).
func Counter(own *atomic.Int64, ch chan string, create bool) *atomic.Int64 {
	if own != nil {
		return own
	}
	if v, ok := counts.Load(ch); ok {
		return v.(*atomic.Int64)
	}
	if !create {
		return nil
	}
	v, _ := counts.LoadOrStore(ch, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// Package fakeoverflow keeps the overflow counts of the FakeRecorders of
// packages record and events that were built as struct literals, with no
// counter of their own: by their Events channel, so that copies of one
// recorder share a count and different recorders do not.
//
// A count lives as long as its channel: the table holds the channel only
// through a weak pointer, and a cleanup attached to the channel removes its
// entry once the channel has been collected, so a test binary that builds
// thousands of recorders does not keep a count (or a channel) for each.
package fakeoverflow

import (
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"weak"
)

// counts maps the weak pointer to a channel's runtime object to the
// channel's count. Two weak pointers are equal exactly when made from the
// same object, even after it is collected, so a new channel that reuses the
// address of a collected one never finds the old count.
var counts sync.Map // weak.Pointer[byte] -> *atomic.Int64

// nilCount is the count of recorders without a channel.
var nilCount atomic.Int64

// key returns the weak pointer to ch's runtime object (a channel value is a
// pointer to it), and that object, to attach a cleanup to.
func key(ch chan string) (weak.Pointer[byte], *byte) {
	p := (*byte)(reflect.ValueOf(ch).UnsafePointer())
	return weak.Make(p), p
}

// Counter returns own if it is not nil, else the count of ch, made when
// create is set (at the first overflow) and nil otherwise (nothing
// overflowed yet).
func Counter(own *atomic.Int64, ch chan string, create bool) *atomic.Int64 {
	if own != nil {
		return own
	}
	if ch == nil {
		// No channel to key on (the callers count such recorders
		// elsewhere): one shared count, made on demand.
		if create {
			return &nilCount
		}
		return nil
	}
	k, p := key(ch)
	if v, ok := counts.Load(k); ok {
		return v.(*atomic.Int64)
	}
	if !create {
		return nil
	}
	v, loaded := counts.LoadOrStore(k, new(atomic.Int64))
	if !loaded {
		// The cleanup holds the weak key only, so the entry does not keep
		// the channel alive.
		runtime.AddCleanup(p, func(k weak.Pointer[byte]) { counts.Delete(k) }, k)
	}
	runtime.KeepAlive(ch)
	return v.(*atomic.Int64)
}

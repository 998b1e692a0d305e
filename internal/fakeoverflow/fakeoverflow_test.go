package fakeoverflow

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// entries returns how many counts the table holds.
func entries() int {
	n := 0
	counts.Range(func(any, any) bool { n++; return true })
	return n
}

func TestCounterSharedByChannel(t *testing.T) {
	a, b := make(chan string), make(chan string, 1)
	if Counter(nil, a, false) != nil {
		t.Fatal("a count before the first overflow")
	}
	ca := Counter(nil, a, true)
	ca.Add(2)
	if got := Counter(nil, a, false); got != ca || got.Load() != 2 {
		t.Fatalf("the channel's count is not shared: %p %p", got, ca)
	}
	if cb := Counter(nil, b, true); cb == ca || cb.Load() != 0 {
		t.Fatal("two channels share a count")
	}
	own := new(atomic.Int64)
	if Counter(own, a, true) != own {
		t.Fatal("a recorder's own counter is not used")
	}
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
}

// overflowMany makes n channels, each with a count, and drops them.
func overflowMany(n int) {
	for range n {
		ch := make(chan string)
		Counter(nil, ch, true).Add(1)
	}
}

// The count of a channel goes with the channel: the table does not keep an
// entry (or the channel) for every recorder ever built.
func TestCountReleasedWithItsChannel(t *testing.T) {
	kept := make(chan string)
	c := Counter(nil, kept, true)
	c.Add(7)
	before := entries()
	overflowMany(1000)
	if n := entries(); n < before+1000 {
		t.Fatalf("%d entries after making 1000, want at least %d", n, before+1000)
	}
	deadline := time.Now().Add(30 * time.Second)
	for entries() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d entries left of the 1000 dropped channels", entries()-before)
		}
		runtime.GC() // collects the channels; their cleanups run on their own goroutine
		runtime.Gosched()
	}
	// The live channel keeps its count.
	if got := Counter(nil, kept, false); got != c || got.Load() != 7 {
		t.Fatal("the count of a live channel was released")
	}
	runtime.KeepAlive(kept)
}

func TestNilChannel(t *testing.T) {
	if Counter(nil, nil, false) != nil {
		t.Fatal("a count for a nil channel before an overflow")
	}
	if c := Counter(nil, nil, true); c == nil || c != Counter(nil, nil, true) {
		t.Fatal("no shared count for recorders without a channel")
	}
}

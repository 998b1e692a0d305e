package fakeoverflow_test

import (
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/heraldk8s/herald/internal/fakeoverflow"
	"github.com/heraldk8s/herald/internal/testing/check"
)

func TestCounterSharedByChannel(t *testing.T) {
	a, b := make(chan string), make(chan string, 1)
	if fakeoverflow.Counter(nil, a, false) != nil {
		t.Fatal("a count before the first overflow")
	}
	ca := fakeoverflow.Counter(nil, a, true)
	ca.Add(2)
	if got := fakeoverflow.Counter(nil, a, false); got != ca || got.Load() != 2 {
		t.Fatalf("the channel's count is not shared: %p %p", got, ca)
	}
	if cb := fakeoverflow.Counter(nil, b, true); cb == ca || cb.Load() != 0 {
		t.Fatal("two channels share a count")
	}
	own := new(atomic.Int64)
	if fakeoverflow.Counter(own, a, true) != own {
		t.Fatal("a recorder's own counter is not used")
	}
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
}

// overflowMany makes n channels, each with a count, and drops them.
func overflowMany(n int) {
	for range n {
		ch := make(chan string)
		fakeoverflow.Counter(nil, ch, true).Add(1)
	}
}

// The count of a channel goes with the channel: the table does not keep an
// entry (or the channel) for every recorder ever built.
func TestCountReleasedWithItsChannel(t *testing.T) {
	kept := make(chan string)
	c := fakeoverflow.Counter(nil, kept, true)
	c.Add(7)
	before := fakeoverflow.Entries()
	overflowMany(1000)
	if n := fakeoverflow.Entries(); n < before+1000 {
		t.Fatalf("%d entries after making 1000, want at least %d", n, before+1000)
	}
	check.Eventually(t, "the counts of the dropped channels to be released", func() error {
		runtime.GC() // collects the channels; their cleanups run on their own goroutine
		n := fakeoverflow.Entries() - before
		return check.Errorf(n <= 0, "%d entries left of the 1000 dropped channels", n)
	})
	// The live channel keeps its count.
	if got := fakeoverflow.Counter(nil, kept, false); got != c || got.Load() != 7 {
		t.Fatal("the count of a live channel was released")
	}
	runtime.KeepAlive(kept)
}

func TestNilChannel(t *testing.T) {
	if fakeoverflow.Counter(nil, nil, false) != nil {
		t.Fatal("a count for a nil channel before an overflow")
	}
	if c := fakeoverflow.Counter(nil, nil, true); c == nil || c != fakeoverflow.Counter(nil, nil, true) {
		t.Fatal("no shared count for recorders without a channel")
	}
}

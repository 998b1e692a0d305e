package watch_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	apiwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/heraldk8s/herald/watch"
)

// passMark queues a MarkNotifier mark and waits until the loop has passed
// it: everything queued before it (events, registrations) has been handled.
func passMark(t testing.TB, b *watch.Broadcaster, id int) {
	t.Helper()
	m := &notifyMark{mark: mark{id}, passed: make(chan struct{})}
	if err := watchFuncs.Mark(b, background(), m); err != nil {
		t.Fatalf("Mark: %v", err)
	}
	select {
	case <-m.passed:
	case <-time.After(guard):
		t.Fatal("MarkDistributed not called")
	}
}

// holdLoop makes the loop wait, after it has offered its next event to a
// watcher, until the returned release is called; later offers pass. The
// returned held channel is closed once the loop waits there.
func holdLoop(t testing.TB) (held <-chan struct{}, release func()) {
	t.Helper()
	h, r := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	watch.SetAfterSend(func() {
		if first.CompareAndSwap(false, true) {
			close(h)
			<-r
		}
	})
	t.Cleanup(func() { watch.SetAfterSend(nil) })
	return h, func() { close(r) }
}

// A mark that WaitIfChannelFull gives up on (its context ended while the
// watcher was full) is skipped, not dropped: the package doc says a
// skipped mark is not counted as a drop, in Stats().WatcherDropped as in
// the watcher's Dropped.
func TestSkippedMarkIsNotAWatcherDropUnderWait(t *testing.T) {
	b := watch.NewBroadcaster(1, watch.WaitIfChannelFull)
	slow := mustWatch(t, b)
	reader := roomy(t, b, 10)
	act(t, b, 0)
	if got := recv(t, reader); got != "0" {
		t.Fatalf("reader got %s, want 0", got)
	}
	// slow is full: the loop waits there with the mark until ctx ends.
	ctx, cancel := context.WithCancel(background())
	if err := watchFuncs.Mark(b, ctx, &mark{1}); err != nil {
		t.Fatalf("Mark: %v", err)
	}
	cancel()
	if got := recv(t, reader); got != "m1" {
		t.Fatalf("reader got %s, want m1", got)
	}
	if s := b.Stats(); s.WatcherDropped != 0 {
		t.Errorf("Stats().WatcherDropped = %d after a skipped mark, want 0", s.WatcherDropped)
	}
	if got := slow.Dropped(); got != 0 {
		t.Errorf("slow.Dropped() = %d, want 0", got)
	}
	b.Shutdown()
	drain(t, slow)
	drain(t, reader)
}

// A watcher's Offered stops counting at Stop: the event the loop finds it
// stopped with is not offered to it (the loop forgets it instead).
func TestOfferedNotCountedOnceStopped(t *testing.T) {
	for _, behavior := range []watch.FullChannelBehavior{watch.DropIfChannelFull, watch.WaitIfChannelFull} {
		b := watch.NewBroadcaster(4, behavior)
		w := mustWatch(t, b)
		reader := roomy(t, b, 10) // registered after w: tells when the loop is past it
		act(t, b, 0)
		if got := recv(t, w); got != "0" {
			t.Fatalf("w got %s, want 0", got)
		}
		w.Stop()
		act(t, b, 1)
		recv(t, reader) // 0
		if got := recv(t, reader); got != "1" {
			t.Fatalf("reader got %s, want 1", got)
		}
		if got := w.Offered(); got != 1 {
			t.Errorf("behavior %v: Offered() = %d after an event queued behind Stop, want 1", behavior, got)
		}
		if got := b.Stats().WatcherDropped; got != 0 {
			t.Errorf("behavior %v: WatcherDropped = %d, want 0", behavior, got)
		}
		b.Shutdown()
		drain(t, reader)
	}
}

// A watcher stopped before the loop registers it is forgotten with it: once
// the loop has passed its registration and forgotten the other watchers,
// nobody watches, and events skip the queue again (counted as distributed
// at once, prepare never called).
func TestWatcherStoppedBeforeRegistrationIsForgotten(t *testing.T) {
	var prepared atomic.Int64
	b := watchFuncs.NewPreparing(10, int(watch.WaitIfChannelFull), func(runtime.Object) { prepared.Add(1) })
	defer b.Shutdown()
	held, release := holdLoop(t)
	first := mustWatch(t, b)
	act(t, b, 0) // the loop holds after offering it to first
	<-held
	late := mustWatch(t, b) // its registration waits behind the held loop
	late.Stop()
	first.Stop()
	release()
	passMark(t, b, 1) // past late's registration; forgets first
	if got := watch.Watching(b); got != 0 {
		t.Fatalf("%d watchers counted as watching after both were stopped and the loop passed them, want 0", got)
	}
	if got := prepared.Load(); got != 1 {
		t.Fatalf("prepare ran %d times, want 1", got)
	}
	before := b.Stats().Distributed
	for i := range 5 {
		if ok, err := b.ActionOrDrop(apiwatch.Added, &num{10 + i}); !ok || err != nil {
			t.Fatalf("ActionOrDrop: %v %v", ok, err)
		}
		// Nobody watches: each event is counted at once, never queued.
		if s := b.Stats(); s.Distributed != before+uint64(i)+1 || s.Queued != 0 {
			t.Fatalf("after event %d: stats %+v, want Distributed %d and Queued 0: a stopped watcher is still counted as watching", i, s, before+uint64(i)+1)
		}
	}
	passMark(t, b, 2)
	if got := prepared.Load(); got != 1 {
		t.Errorf("prepare ran %d times, want 1: it ran for events nobody watched", got)
	}
}

// prepare runs only on events offered to at least one watcher: an event
// queued while a watcher was registered, and reaching the loop after the
// loop has forgotten that (stopped) watcher, is offered to nobody and not
// prepared.
func TestPrepareSkipsEventsOfferedToNobody(t *testing.T) {
	var prepared atomic.Int64
	b := watchFuncs.NewPreparing(10, int(watch.WaitIfChannelFull), func(runtime.Object) { prepared.Add(1) })
	defer b.Shutdown()
	held, release := holdLoop(t)
	w := mustWatch(t, b)
	act(t, b, 0) // prepared; the loop holds after offering it to w
	<-held
	w.Stop()
	act(t, b, 1) // queued while w counts as watching: the loop finds w stopped (prepared) and forgets it
	act(t, b, 2) // offered to nobody
	release()
	passMark(t, b, 1)
	if s := b.Stats(); s.Distributed != 3 {
		t.Fatalf("Distributed = %d, want 3", s.Distributed)
	}
	if got := prepared.Load(); got != 2 {
		t.Errorf("prepare ran %d times, want 2 (events 0 and 1; 2 reached no watcher)", got)
	}
}

package watch_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	apiwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/heraldk8s/herald/internal/watchext"
	"github.com/heraldk8s/herald/watch"
)

// roomy registers a watcher whose channel has room for n events whatever the
// broadcaster's queueLength: it asks for a prefix of n placeholders and reads
// them off again.
func roomy(t testing.TB, b *watch.Broadcaster, n int) apiwatch.Interface {
	t.Helper()
	prefix := make([]apiwatch.Event, n)
	for i := range prefix {
		prefix[i] = apiwatch.Event{Type: apiwatch.Added, Object: &num{-100}}
	}
	w, err := b.WatchWithPrefix(prefix)
	if err != nil {
		t.Fatalf("WatchWithPrefix: %v", err)
	}
	for range n {
		<-w.ResultChan()
	}
	return w
}

func TestMarkWaitsForFullWatcherUnderDrop(t *testing.T) {
	b := watch.NewBroadcaster(2, watch.DropIfChannelFull)
	w1, w2 := mustWatch(t, b), mustWatch(t, b)
	reader := roomy(t, b, 10) // registered last: tells how far the loop got
	for i := range 5 {
		act(t, b, i)
	}
	if got, want := []string{recv(t, reader), recv(t, reader), recv(t, reader), recv(t, reader), recv(t, reader)}, span(0, 4); !slices.Equal(got, want) {
		t.Fatalf("reader got %v, want %v", got, want)
	}
	// The loop has offered 0..4 to w1 and w2: each holds 0, 1 and dropped
	// 2, 3, 4. The mark must wait for room instead of being dropped.
	if err := watchFuncs.Mark(b, background(), &mark{1}); err != nil {
		t.Fatalf("Mark: %v", err)
	}
	want := []string{"0", "1", "m1"}
	if got := []string{recv(t, w1), recv(t, w1), recv(t, w1)}; !slices.Equal(got, want) {
		t.Errorf("w1 got %v, want %v", got, want)
	}
	if got := []string{recv(t, w2), recv(t, w2), recv(t, w2)}; !slices.Equal(got, want) {
		t.Errorf("w2 got %v, want %v", got, want)
	}
	if got := recv(t, reader); got != "m1" {
		t.Errorf("reader got %s, want m1", got)
	}
	for i, w := range []watchext.Watcher{w1, w2} {
		if got := w.Dropped(); got != 3 {
			t.Errorf("w%d.Dropped() = %d, want 3", i+1, got)
		}
	}
	if got := b.Stats().WatcherDropped; got != 6 {
		t.Errorf("Stats().WatcherDropped = %d, want 6", got)
	}
	b.Shutdown()
	for i, w := range []apiwatch.Interface{w1, w2, reader} {
		if got := drain(t, w); len(got) != 0 {
			t.Errorf("watcher %d got %v after the mark, want nothing", i, got)
		}
	}
}

func TestMarkOrderedBehindQueuedEvents(t *testing.T) {
	// Whatever the loop drops, a watcher receives the mark after every
	// event queued before it that it receives at all, and the events it
	// missed are counted.
	const events = 200
	b := watch.NewBroadcaster(3, watch.DropIfChannelFull)
	ws := []watchext.Watcher{mustWatch(t, b), mustWatch(t, b)}
	got := []func() []string{untilMark(t, ws[0]), untilMark(t, ws[1])}
	for i := range events {
		if _, err := b.ActionOrDrop(apiwatch.Added, &num{i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := watchFuncs.Mark(b, background(), &mark{1}); err != nil {
		t.Fatalf("Mark: %v", err)
	}
	defer b.Shutdown()
	queued := uint64(events) - b.Stats().Dropped
	for i, w := range ws {
		g := got[i]()
		if len(g) == 0 || g[len(g)-1] != "m1" {
			t.Errorf("watcher %d: mark is not last: %v", i, g)
			continue
		}
		if n := uint64(len(g)-1) + w.Dropped(); n != queued {
			t.Errorf("watcher %d: %d received + %d dropped, want %d queued", i, len(g)-1, w.Dropped(), queued)
		}
	}
}

// untilMark reads w in a goroutine up to and including the first mark; the
// returned function waits for that and returns what was read.
func untilMark(t testing.TB, w apiwatch.Interface) func() []string {
	t.Helper()
	done := make(chan []string, 1)
	go func() {
		var got []string
		for ev := range w.ResultChan() {
			got = append(got, label(t, ev))
			if _, ok := ev.Object.(*mark); ok {
				break
			}
		}
		done <- got
	}()
	return func() []string {
		t.Helper()
		select {
		case got := <-done:
			return got
		case <-time.After(guard):
			t.Fatalf("no mark within %v", guard)
			return nil
		}
	}
}

func TestMarkWaitEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(b *watch.Broadcaster, slow watchext.Watcher, cancel func()) // ends the mark's wait for slow
	}{
		{"context canceled", func(_ *watch.Broadcaster, _ watchext.Watcher, cancel func()) { cancel() }},
		{"watcher stopped", func(_ *watch.Broadcaster, slow watchext.Watcher, _ func()) { slow.Stop() }},
		{"shutdown", func(b *watch.Broadcaster, _ watchext.Watcher, _ func()) { go b.Shutdown() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := watch.NewBroadcaster(1, watch.DropIfChannelFull)
			slow := mustWatch(t, b)
			reader := roomy(t, b, 10)
			act(t, b, 0)
			if got := recv(t, reader); got != "0" {
				t.Fatalf("reader got %s, want 0", got)
			}
			// slow is full; the loop waits there with the mark.
			ctx, cancel := context.WithCancel(background())
			defer cancel()
			if err := watchFuncs.Mark(b, ctx, &mark{1}); err != nil {
				t.Fatalf("Mark: %v", err)
			}
			tc.end(b, slow, cancel)
			// The loop went on past slow without the mark.
			if got := recv(t, reader); got != "m1" {
				t.Fatalf("reader got %s, want m1", got)
			}
			b.Shutdown()
			if got, want := drain(t, slow), labels(0); !slices.Equal(got, want) {
				t.Errorf("slow got %v, want %v", got, want)
			}
			if got := slow.Dropped(); got != 0 {
				t.Errorf("slow.Dropped() = %d, want 0: a skipped mark is not a drop", got)
			}
			drain(t, reader)
		})
	}
}

func TestMarkContextCanceled(t *testing.T) {
	t.Run("before the call", func(t *testing.T) {
		b := watch.NewBroadcaster(4, watch.DropIfChannelFull)
		w := mustWatch(t, b)
		ctx, cancel := context.WithCancel(background())
		cancel()
		if err := watchFuncs.Mark(b, ctx, &mark{1}); !errors.Is(err, context.Canceled) {
			t.Errorf("Mark = %v, want context.Canceled", err)
		}
		act(t, b, 0)
		b.Shutdown()
		if got, want := drain(t, w), labels(0); !slices.Equal(got, want) {
			t.Errorf("got %v, want %v: a canceled mark must not be queued", got, want)
		}
	})
	t.Run("while waiting for the queue", func(t *testing.T) {
		b, w := stuck(t) // the incoming queue never has room
		ctx, cancel := context.WithCancel(background())
		var err error
		wait := async(t, func() { err = watchFuncs.Mark(b, ctx, &mark{1}) })
		cancel()
		wait()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Mark = %v, want context.Canceled", err)
		}
		w.Stop()
		b.Shutdown()
	})
	t.Run("shutdown while waiting for the queue", func(t *testing.T) {
		b, w := stuck(t)
		var err error
		wait := async(t, func() { err = watchFuncs.Mark(b, background(), &mark{1}) })
		shutdown := async(t, b.Shutdown)
		wait() // Shutdown releases Mark even though the loop is still stuck
		if !errors.Is(err, watch.ErrShutdown) {
			t.Errorf("Mark = %v, want ErrShutdown", err)
		}
		w.Stop()
		shutdown()
	})
}

// TestMarkNeverHoldsUpTheLoop: under DropIfChannelFull a mark that finds a
// watcher full does not make the loop wait for it. The other watchers get
// the mark and every later event at once; the full watcher gets the mark as
// soon as it has room, and misses (counted) the events queued while the
// mark waited, so nothing overtakes the mark.
func TestMarkNeverHoldsUpTheLoop(t *testing.T) {
	b := watch.NewBroadcaster(2, watch.DropIfChannelFull)
	defer b.Shutdown()
	stuckW := mustWatch(t, b)
	healthy := roomy(t, b, 30)
	act(t, b, 0)
	act(t, b, 1) // stuckW is now full
	if err := watchFuncs.Mark(b, background(), &mark{1}); err != nil {
		t.Fatalf("Mark: %v", err)
	}
	for i := 2; i < 22; i++ {
		act(t, b, i)
	}
	want := append(append(labels(0, 1), "m1"), span(2, 21)...)
	var got []string
	for range want {
		got = append(got, recv(t, healthy))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("healthy got %v, want %v", got, want)
	}
	if got := stuckW.Dropped(); got != 20 {
		t.Errorf("stuck watcher Dropped() = %d, want 20", got)
	}
	if got := stuckW.Offered(); got != 22 {
		t.Errorf("stuck watcher Offered() = %d, want 22", got)
	}
	// The stuck watcher reads again: the mark follows the events it has.
	if got := []string{recv(t, stuckW), recv(t, stuckW), recv(t, stuckW)}; !slices.Equal(got, []string{"0", "1", "m1"}) {
		t.Fatalf("stuck watcher got %v, want [0 1 m1]", got)
	}
	// Events reach it again once the mark's goroutine has finished with
	// the mark (until then they are counted as dropped). The loop offers
	// each event to stuckW before healthy, which registered later.
	for i := 22; ; i++ {
		act(t, b, i)
		if got := recv(t, healthy); got != itoa(i) {
			t.Fatalf("healthy got %s, want %d", got, i)
		}
		select {
		case ev := <-stuckW.ResultChan():
			if got := label(t, ev); got != itoa(i) {
				t.Fatalf("stuck watcher got %s after the mark, want %d", got, i)
			}
			if off, dr := stuckW.Offered(), stuckW.Dropped(); off != uint64(i+1) || dr != uint64(i+1-3) {
				t.Errorf("Offered %d, Dropped %d after %d events, 3 received", off, dr, i+1)
			}
			return
		default:
		}
		if i > 10000 {
			t.Fatal("the stuck watcher gets no events after its mark")
		}
	}
}

// TestPendingMarkEndsWithWatcher: a mark waiting for room in a stopped or
// closed watcher, or whose context ends, goes away with its goroutine
// (TestMain checks for leaks).
func TestPendingMarkEndsWithWatcher(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(b *watch.Broadcaster, w watchext.Watcher, cancel func())
	}{
		{"stop", func(_ *watch.Broadcaster, w watchext.Watcher, _ func()) { w.Stop() }},
		{"shutdown", func(b *watch.Broadcaster, _ watchext.Watcher, _ func()) { b.Shutdown() }},
		{"context", func(_ *watch.Broadcaster, _ watchext.Watcher, cancel func()) { cancel() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := watch.NewBroadcaster(1, watch.DropIfChannelFull)
			w := mustWatch(t, b)
			reader := roomy(t, b, 10)
			act(t, b, 0)
			ctx, cancel := context.WithCancel(background())
			defer cancel()
			for i := range 3 {
				if err := watchFuncs.Mark(b, ctx, &mark{i}); err != nil {
					t.Fatalf("Mark: %v", err)
				}
			}
			for _, want := range []string{"0", "m0", "m1", "m2"} {
				if got := recv(t, reader); got != want {
					t.Fatalf("reader got %s, want %s", got, want)
				}
			}
			tc.end(b, w, cancel)
			b.Shutdown()
			if got := drain(t, w); !slices.Equal(got, labels(0)) {
				t.Errorf("watcher got %v, want [0]: its marks never found room", got)
			}
			drain(t, reader)
		})
	}
}

// notifyMark is a mark that reports when the loop has passed it.
type notifyMark struct {
	mark
	passed chan struct{}
}

func (m *notifyMark) MarkDistributed() { close(m.passed) }

// TestMarkNotifierWithoutWatchers: a MarkNotifier mark reports when the
// loop has passed it, even with no watcher at all, and by then every event
// queued before it is counted as distributed.
func TestMarkNotifierWithoutWatchers(t *testing.T) {
	b := watch.NewBroadcaster(1, watch.DropIfChannelFull)
	defer b.Shutdown()
	for i := range 10 {
		act(t, b, i)
	}
	m := &notifyMark{mark: mark{1}, passed: make(chan struct{})}
	if err := watchFuncs.Mark(b, background(), m); err != nil {
		t.Fatalf("Mark: %v", err)
	}
	select {
	case <-m.passed:
	case <-time.After(guard):
		t.Fatal("MarkDistributed not called")
	}
	if got := b.Stats().Distributed; got != 10 {
		t.Errorf("Distributed = %d, want 10", got)
	}
}

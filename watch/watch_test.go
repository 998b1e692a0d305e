package watch_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/internal/watchext"
	"github.com/heraldk8s/herald/watch"
)

func TestWatchSeesExactlyEventsQueuedAfterRegistration(t *testing.T) {
	// The loop is held up by w0, so events 0..4 are still queued when w1
	// registers: w1 must see none of them, and every later event.
	b := watch.NewBroadcaster(0, watch.WaitIfChannelFull)
	w0 := mustWatch(t, b)
	for i := range 5 {
		act(t, b, i)
	}
	w1 := mustWatch(t, b)
	act(t, b, 5)
	act(t, b, 6)

	got0, got1 := collect(t, w0), collect(t, w1)
	b.Shutdown()
	if got, want := got0(), span(0, 6); !slices.Equal(got, want) {
		t.Errorf("w0 got %v, want %v", got, want)
	}
	if got, want := got1(), span(5, 6); !slices.Equal(got, want) {
		t.Errorf("w1 got %v, want %v", got, want)
	}
}

func TestWatchRegistrationRacingProducer(t *testing.T) {
	// Watchers register while a producer runs. Each must see a gap-free run
	// of events that starts after the last event whose Action returned
	// before Watch was called, and no later than the first event whose
	// Action started after Watch returned.
	const events, watchers = 3000, 20
	b := watch.NewBroadcaster(8, watch.WaitIfChannelFull)
	var started, returned atomic.Int64
	started.Store(-1)
	returned.Store(-1)
	produced := async(t, func() {
		for i := range events {
			started.Store(int64(i))
			if err := b.Action(apiwatch.Added, &num{i}); err != nil {
				t.Errorf("Action(%d): %v", i, err)
				return
			}
			returned.Store(int64(i))
		}
	})

	type result struct {
		lo, hi int
		got    func() []string
	}
	var results []result
	for range watchers {
		lo := int(returned.Load())
		w := mustWatch(t, b)
		hi := int(started.Load())
		results = append(results, result{lo, hi, collect(t, w)})
	}
	produced()
	b.Shutdown()

	for i, r := range results {
		got := r.got()
		if len(got) == 0 {
			// Its first event would be events, past the last: allowed
			// only if the last event's Action had started when Watch
			// returned (a producer that outruns the registration).
			if r.hi != events-1 {
				t.Errorf("watcher %d got nothing; hi=%d, want %d", i, r.hi, events-1)
			}
			continue
		}
		first := atoiT(t, got[0])
		if first <= r.lo || first > r.hi+1 {
			t.Errorf("watcher %d: first event %d, want in (%d, %d]", i, first, r.lo, r.hi+1)
		}
		if want := span(first, events-1); !slices.Equal(got, want) {
			t.Errorf("watcher %d: got %d events from %d, want a gap-free run to %d", i, len(got), first, events-1)
		}
	}
}

func atoiT(t testing.TB, s string) int {
	t.Helper()
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("not a number: %q", s)
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func TestWatchWithPrefix(t *testing.T) {
	// w0 holds up the loop, so event 0 may still be queued at registration.
	b := watch.NewBroadcaster(0, watch.WaitIfChannelFull)
	w0 := mustWatch(t, b)
	act(t, b, 0)
	prefix := []apiwatch.Event{
		{Type: apiwatch.Added, Object: &num{100}},
		{Type: apiwatch.Added, Object: &num{101}},
		{Type: apiwatch.Added, Object: &num{102}},
	}
	wi, err := b.WatchWithPrefix(prefix)
	if err != nil {
		t.Fatalf("WatchWithPrefix: %v", err)
	}
	// queueLength is 0, but the prefix and one more event must fit.
	if got, want := cap(wi.ResultChan()), len(prefix)+1; got != want {
		t.Errorf("channel capacity %d, want %d", got, want)
	}
	gotW0, gotP := collect(t, w0), collect(t, wi)
	act(t, b, 1)
	b.Shutdown()
	if got, want := gotW0(), labels(0, 1); !slices.Equal(got, want) {
		t.Errorf("w0 got %v, want %v", got, want)
	}
	if got, want := gotP(), labels(100, 101, 102, 1); !slices.Equal(got, want) {
		t.Errorf("prefixed watcher got %v, want %v", got, want)
	}
}

func TestFanOut(t *testing.T) {
	for _, tc := range []struct {
		name     string
		behavior watch.FullChannelBehavior
	}{
		{"wait", watch.WaitIfChannelFull},
		{"drop", watch.DropIfChannelFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const events = 50
			b := watch.NewBroadcaster(events, tc.behavior)
			var ws []watchext.Watcher
			for range 3 {
				ws = append(ws, mustWatch(t, b))
			}
			for i := range events {
				act(t, b, i)
			}
			b.Shutdown()
			for i, w := range ws {
				if got, want := drain(t, w), span(0, events-1); !slices.Equal(got, want) {
					t.Errorf("watcher %d got %v, want %v", i, got, want)
				}
			}
		})
	}
}

func TestDropIfChannelFullCountsPerWatcher(t *testing.T) {
	b := watch.NewBroadcaster(2, watch.DropIfChannelFull)
	slow := mustWatch(t, b)
	reader := mustWatch(t, b)
	for i := range 5 {
		act(t, b, i)
		// reader registered after slow, so once reader has event i the loop
		// has offered it to slow.
		if got := recv(t, reader); got != itoa(i) {
			t.Fatalf("reader got %s, want %d", got, i)
		}
	}
	if got := slow.Dropped(); got != 3 {
		t.Errorf("slow.Dropped() = %d, want 3", got)
	}
	if got := reader.Dropped(); got != 0 {
		t.Errorf("reader.Dropped() = %d, want 0", got)
	}
	if got := b.Stats(); got != (watch.Stats{WatcherDropped: 3, Distributed: 5}) {
		t.Errorf("Stats() = %+v, want WatcherDropped 3 and Distributed 5 only", got)
	}
	if got := slow.Offered(); got != 5 {
		t.Errorf("slow.Offered() = %d, want 5", got)
	}
	b.Shutdown()
	if got, want := drain(t, slow), labels(0, 1); !slices.Equal(got, want) {
		t.Errorf("slow got %v, want %v", got, want)
	}
	if got := b.Stats().WatcherDropped; got != 3 {
		t.Errorf("WatcherDropped after Shutdown = %d, want 3", got)
	}
}

func TestActionOrDropCountsIncomingDrops(t *testing.T) {
	b, w := stuck(t)
	for i := range 10 {
		ok, err := b.ActionOrDrop(apiwatch.Added, &num{i})
		if ok || err != nil {
			t.Fatalf("ActionOrDrop(%d) = %v, %v; want false, nil (queue full)", i, ok, err)
		}
	}
	if got, want := b.Stats(), (watch.Stats{Dropped: 10}); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
	if got := w.Dropped(); got != 0 {
		t.Errorf("w.Dropped() = %d, want 0", got)
	}
	w.Stop()
	b.Shutdown()
}

func TestActionOrDropNeverWaitsBehindWaitingCalls(t *testing.T) {
	// apimachinery's Watch holds the lock ActionOrDrop needs while it waits
	// for room in the queue; ours must not make ActionOrDrop wait.
	b, w := stuck(t) // the queue never has room
	var errs [3]error
	waiting := []func(){
		async(t, func() { _, errs[0] = b.Watch() }),
		async(t, func() { errs[1] = b.Action(apiwatch.Added, &num{0}) }),
		async(t, func() { errs[2] = watchFuncs.Mark(b, background(), &mark{0}) }),
	}
	async(t, func() {
		for i := range 100 {
			if ok, err := b.ActionOrDrop(apiwatch.Added, &num{i}); ok || err != nil {
				t.Errorf("ActionOrDrop = %v, %v; want false, nil", ok, err)
			}
		}
	})()
	if got := b.Stats().Dropped; got != 100 {
		t.Errorf("Stats().Dropped = %d, want 100", got)
	}
	// Shutdown releases the waiting calls although the loop is still stuck.
	shutdown := async(t, b.Shutdown)
	for i, wait := range waiting {
		wait()
		if !errors.Is(errs[i], watch.ErrShutdown) {
			t.Errorf("waiting call %d returned %v, want ErrShutdown", i, errs[i])
		}
	}
	w.Stop()
	shutdown()
}

func TestWaitIfChannelFullBlocksLoopUntilRead(t *testing.T) {
	b, w := stuck(t)
	// The loop waits for w: nothing leaves the (unbuffered) incoming queue.
	if ok, err := b.ActionOrDrop(apiwatch.Added, &num{0}); ok || err != nil {
		t.Fatalf("ActionOrDrop = %v, %v while the loop waits; want false, nil", ok, err)
	}
	if got := recv(t, w); got != "-1" {
		t.Fatalf("got %s, want -1", got)
	}
	// Now the loop takes events again.
	act(t, b, 1)
	if got := recv(t, w); got != "1" {
		t.Fatalf("got %s, want 1", got)
	}
	if got := w.Dropped(); got != 0 {
		t.Errorf("Dropped() = %d, want 0", got)
	}
	w.Stop()
	b.Shutdown()
}

func TestStopUnblocksWaitingLoop(t *testing.T) {
	// As in stuck, but with a second watcher, registered after w, that is
	// read: the loop offers -1 to w first and waits there.
	b := watch.NewLongQueueBroadcaster(0, watch.WaitIfChannelFull)
	w := mustWatch(t, b)
	other := mustWatch(t, b)
	gotOther := collect(t, other)
	act(t, b, -1)
	w.Stop()
	act(t, b, 0) // blocks forever unless Stop released the loop
	b.Shutdown()
	if got, want := gotOther(), labels(-1, 0); !slices.Equal(got, want) {
		t.Errorf("other got %v, want %v", got, want)
	}
	if got := drain(t, w); len(got) != 0 {
		t.Errorf("stopped watcher got %v, want nothing", got)
	}
}

func TestStop(t *testing.T) {
	t.Run("twice", func(t *testing.T) {
		b := watch.NewBroadcaster(4, watch.DropIfChannelFull)
		w := mustWatch(t, b)
		act(t, b, 0)
		w.Stop()
		w.Stop()
		drain(t, w) // closed; may or may not hold event 0
		act(t, b, 1)
		b.Shutdown()
		w.Stop()
	})
	t.Run("after shutdown", func(t *testing.T) {
		b := watch.NewBroadcaster(4, watch.DropIfChannelFull)
		w := mustWatch(t, b)
		act(t, b, 0)
		b.Shutdown()
		w.Stop()
		w.Stop()
		if got, want := drain(t, w), labels(0); !slices.Equal(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
	t.Run("concurrent with shutdown", func(t *testing.T) {
		b := watch.NewBroadcaster(4, watch.WaitIfChannelFull)
		var ws []watchext.Watcher
		for range 8 {
			ws = append(ws, mustWatch(t, b))
		}
		var wg sync.WaitGroup
		for _, w := range ws {
			for range 2 {
				wg.Go(w.Stop)
			}
		}
		wg.Go(b.Shutdown)
		wg.Go(b.Shutdown)
		wg.Wait()
		for _, w := range ws {
			drain(t, w)
		}
	})
	t.Run("during shutdown waiting for it", func(t *testing.T) {
		b, w := stuck(t) // Shutdown has to wait to hand -1 to w
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			b.Shutdown()
		}()
		waitShutdownStarted(t, b)
		select {
		case <-returned:
			t.Fatal("Shutdown returned while the loop waits for w")
		default:
		}
		w.Stop() // releases the loop; Shutdown can finish
		select {
		case <-returned:
		case <-time.After(guard):
			t.Fatalf("Shutdown did not return within %v of Stop", guard)
		}
		if got := drain(t, w); len(got) != 0 {
			t.Errorf("stopped watcher got %v, want nothing", got)
		}
	})
}

// waitShutdownStarted returns once Shutdown has begun on b. It probes with a
// Mark whose context is canceled already, which queues nothing: it returns
// ErrShutdown once Shutdown has begun and context.Canceled before.
func waitShutdownStarted(t testing.TB, b *watch.Broadcaster) {
	t.Helper()
	ctx, cancel := context.WithCancel(background())
	cancel()
	check.Eventually(t, "Shutdown to begin", func() error {
		if err := watchFuncs.Mark(b, ctx, &mark{-1}); !errors.Is(err, watch.ErrShutdown) {
			return fmt.Errorf("Mark answered %v, not %v", err, watch.ErrShutdown)
		}
		return nil
	})
}

func TestShutdownDistributesQueuedEventsThenCloses(t *testing.T) {
	t.Run("wait with queue", func(t *testing.T) {
		// The loop is held by w on event 0 while 1..9 sit in the queue.
		b := watch.NewBroadcaster(0, watch.WaitIfChannelFull)
		w := mustWatch(t, b)
		for i := range 10 {
			act(t, b, i)
		}
		if q := b.Stats().Queued; q < 9 {
			t.Errorf("Stats().Queued = %d, want at least 9", q)
		}
		shutdown := async(t, b.Shutdown)
		waitShutdownStarted(t, b)
		if got, want := drain(t, w), span(0, 9); !slices.Equal(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
		shutdown()
		if q := b.Stats().Queued; q != 0 {
			t.Errorf("Stats().Queued = %d after Shutdown, want 0", q)
		}
	})
	t.Run("drop", func(t *testing.T) {
		b := watch.NewBroadcaster(100, watch.DropIfChannelFull)
		w := mustWatch(t, b)
		for i := range 20 {
			act(t, b, i)
		}
		b.Shutdown() // does not wait for w to read
		if got, want := drain(t, w), span(0, 19); !slices.Equal(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
}

func TestShutdownIdempotent(t *testing.T) {
	b := watch.NewBroadcaster(1, watch.DropIfChannelFull)
	w := mustWatch(t, b)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(b.Shutdown)
	}
	wg.Wait()
	b.Shutdown()
	drain(t, w)
}

// TestShutdownWithContextBoundsTheWait: under WaitIfChannelFull a watcher
// that is neither read nor stopped holds Shutdown up; once the context of
// ShutdownWithContext ends, the loop hands out what is queued without
// waiting (the events the watcher cannot take are counted as dropped),
// closes its channel and exits; ShutdownWithContext returns the context's
// error and a Shutdown waiting beside it returns too.
func TestShutdownWithContextBoundsTheWait(t *testing.T) {
	// The loop is held by w on event 0 while 1..9 sit in the queue.
	b := watch.NewBroadcaster(0, watch.WaitIfChannelFull)
	w := mustWatch(t, b)
	for i := range 10 {
		act(t, b, i)
	}
	ctx, cancel := context.WithCancel(background())
	shutdown := async(t, b.Shutdown)
	var err error
	withCtx := async(t, func() { err = b.ShutdownWithContext(ctx) })
	cancel()
	withCtx()
	shutdown()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("ShutdownWithContext = %v, want context.Canceled", err)
	}
	if got := drain(t, w); len(got) != 0 {
		t.Errorf("w got %v, want nothing: it never read", got)
	}
	if got := w.Dropped(); got != 10 {
		t.Errorf("w.Dropped() = %d, want 10", got)
	}
	if s := b.Stats(); s.WatcherDropped != 10 || s.Distributed != 10 || s.Queued != 0 {
		t.Errorf("Stats() = %+v, want 10 dropped for the watcher, 10 distributed, none queued", s)
	}
	if err := b.ShutdownWithContext(background()); err != nil {
		t.Errorf("ShutdownWithContext after the loop exited = %v, want nil", err)
	}
	if err := b.Action(apiwatch.Added, &num{10}); !errors.Is(err, watch.ErrShutdown) {
		t.Errorf("Action after ShutdownWithContext = %v, want ErrShutdown", err)
	}
}

// TestShutdownWithContextDeliversEverything: when the loop is done before
// the context ends, ShutdownWithContext is Shutdown: every queued event
// reaches the watcher that reads, and it returns nil, even when the context
// has ended by the time it looks.
func TestShutdownWithContextDeliversEverything(t *testing.T) {
	b := watch.NewBroadcaster(0, watch.WaitIfChannelFull)
	w := mustWatch(t, b)
	got := collect(t, w)
	for i := range 10 {
		act(t, b, i)
	}
	if err := b.ShutdownWithContext(background()); err != nil {
		t.Errorf("ShutdownWithContext = %v, want nil", err)
	}
	if got, want := got(), span(0, 9); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	ctx, cancel := context.WithCancel(background())
	cancel()
	if err := b.ShutdownWithContext(ctx); err != nil {
		t.Errorf("ShutdownWithContext(canceled) after the loop exited = %v, want nil", err)
	}
	if s := b.Stats(); s.WatcherDropped != 0 || s.Distributed != 10 {
		t.Errorf("Stats() = %+v, want 10 distributed and no drop", s)
	}
}

func TestErrShutdown(t *testing.T) {
	b := watch.NewBroadcaster(1, watch.DropIfChannelFull)
	b.Shutdown()
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"Action", func() error { return b.Action(apiwatch.Added, &num{0}) }},
		{"ActionOrDrop", func() error {
			ok, err := b.ActionOrDrop(apiwatch.Added, &num{0})
			if ok {
				t.Errorf("ActionOrDrop reported the event queued")
			}
			return err
		}},
		{"Watch", func() error {
			w, err := b.Watch()
			if w != nil {
				t.Errorf("Watch returned a watcher %#v", w)
			}
			return err
		}},
		{"WatchWithPrefix", func() error {
			w, err := b.WatchWithPrefix([]apiwatch.Event{{Type: apiwatch.Added, Object: &num{0}}})
			if w != nil {
				t.Errorf("WatchWithPrefix returned a watcher %#v", w)
			}
			return err
		}},
		{"Mark", func() error { return watchFuncs.Mark(b, background(), &mark{0}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, watch.ErrShutdown) {
				t.Errorf("got %v, want ErrShutdown", err)
			}
		})
	}
	if got := b.Stats(); got != (watch.Stats{}) {
		t.Errorf("Stats() = %+v, want zero: calls after Shutdown are not drops", got)
	}
}

func TestProducersRacingShutdown(t *testing.T) {
	for _, tc := range []struct {
		name     string
		behavior watch.FullChannelBehavior
	}{
		{"wait", watch.WaitIfChannelFull},
		{"drop", watch.DropIfChannelFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const producers = 64
			b := watch.NewBroadcaster(4, tc.behavior)
			w := mustWatch(t, b)
			var delivered atomic.Int64
			flowing := make(chan struct{})
			read := async(t, func() {
				for ev := range w.ResultChan() {
					if _, ok := ev.Object.(*num); ok {
						if delivered.Add(1) == 100 {
							close(flowing)
						}
					}
				}
			})
			stopped := mustWatch(t, b) // stopped while the race is on

			var queued, dropped atomic.Int64
			var wg sync.WaitGroup
			for p := range producers {
				wg.Go(func() {
					for i := 0; ; i++ {
						var err error
						switch p % 4 {
						case 0, 1:
							var ok bool
							ok, err = b.ActionOrDrop(apiwatch.Added, &num{i})
							switch {
							case ok:
								queued.Add(1)
							case err == nil:
								dropped.Add(1)
							}
						case 2:
							if err = b.Action(apiwatch.Added, &num{i}); err == nil {
								queued.Add(1)
							}
						case 3:
							if i%2 == 0 {
								err = watchFuncs.Mark(b, background(), &mark{i})
							} else {
								var wi apiwatch.Interface
								if wi, err = b.Watch(); err == nil {
									wi.Stop()
								}
							}
						}
						if err != nil {
							if !errors.Is(err, watch.ErrShutdown) {
								t.Errorf("producer %d: %v, want ErrShutdown", p, err)
							}
							return
						}
					}
				})
			}
			wg.Go(stopped.Stop)
			// Shut down while events flow.
			select {
			case <-flowing:
			case <-time.After(guard):
				t.Fatalf("no events delivered within %v", guard)
			}
			b.Shutdown()
			if err := b.Action(apiwatch.Added, &num{-1}); !errors.Is(err, watch.ErrShutdown) {
				t.Errorf("Action after Shutdown: %v, want ErrShutdown", err)
			}
			wg.Wait()
			read()
			drain(t, stopped)

			// Every event a producer was told is queued reached w or was
			// counted as dropped there; every drop at the queue was counted.
			if got, want := delivered.Load()+int64(w.Dropped()), queued.Load(); got != want {
				t.Errorf("delivered %d + dropped at watcher %d = %d, want %d queued",
					delivered.Load(), w.Dropped(), got, want)
			}
			st := b.Stats()
			if got, want := st.Dropped, uint64(dropped.Load()); got != want {
				t.Errorf("Stats().Dropped = %d, want %d", got, want)
			}
			if st.WatcherDropped < w.Dropped() {
				t.Errorf("Stats().WatcherDropped = %d < w.Dropped() = %d", st.WatcherDropped, w.Dropped())
			}
			if tc.behavior == watch.WaitIfChannelFull && st.WatcherDropped != 0 {
				t.Errorf("Stats().WatcherDropped = %d under WaitIfChannelFull", st.WatcherDropped)
			}
			t.Logf("queued %d, dropped at queue %d, dropped at watcher %d", queued.Load(), dropped.Load(), w.Dropped())
		})
	}
}

func TestWatcherIsAnApimachineryWatch(t *testing.T) {
	b := watch.NewBroadcaster(10, watch.WaitIfChannelFull)
	wi, err := b.Watch()
	if err != nil {
		t.Fatal(err)
	}
	// watch.Filter takes any watch.Interface and runs its own goroutine
	// reading ours until our channel closes.
	even := apiwatch.Filter(wi, func(ev apiwatch.Event) (apiwatch.Event, bool) {
		return ev, ev.Object.(*num).N%2 == 0
	})
	got := collect(t, even)
	for i := range 6 {
		act(t, b, i)
	}
	b.Shutdown()
	if got, want := got(), labels(0, 2, 4); !slices.Equal(got, want) {
		t.Errorf("filtered watch got %v, want %v", got, want)
	}

	// A consumer written against watch.Interface: read until closed, Stop.
	b = watch.NewBroadcaster(10, watch.DropIfChannelFull)
	wi, err = b.Watch()
	if err != nil {
		t.Fatal(err)
	}
	act(t, b, 7)
	if got := consumeOne(wi); got != 7 {
		t.Errorf("consumer got %d, want 7", got)
	}
	b.Shutdown()
}

// consumeOne is code that knows only apimachinery's watch.Interface.
func consumeOne(w apiwatch.Interface) int {
	defer w.Stop()
	ev := <-w.ResultChan()
	return ev.Object.(*num).N
}

// A watcher's Offered and Dropped are final once Stop has returned, as their
// doc says: the loop counts an event before it lets go of the watcher, not
// after (the loop held here, between offering an event and going on, used to
// count it after Stop had returned: a sink retired then kept one event
// fewer than it was offered).
func TestCountsFinalOnceStopped(t *testing.T) {
	for _, behavior := range []watch.FullChannelBehavior{watch.DropIfChannelFull, watch.WaitIfChannelFull} {
		offered, release := make(chan struct{}, 1), make(chan struct{})
		watch.SetAfterSend(func() {
			offered <- struct{}{}
			<-release
		})
		b := watch.NewLongQueueBroadcaster(1, behavior)
		w, err := b.Watch()
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Action(apiwatch.Added, &num{1}); err != nil {
			t.Fatal(err)
		}
		<-offered // in the channel, the loop not yet past it
		w.Stop()
		ww := w.(watchext.Watcher)
		atStop := ww.Offered()
		close(release)
		b.Shutdown()
		watch.SetAfterSend(nil)
		if atStop != 1 || ww.Offered() != 1 || ww.Dropped() != 0 {
			t.Errorf("behavior %v: Offered %d when Stop returned, %d after Shutdown, Dropped %d; want 1, 1, 0", behavior, atStop, ww.Offered(), ww.Dropped())
		}
	}
}

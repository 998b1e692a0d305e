package record_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// within runs f in a goroutine and fails the test unless it returns within
// d: for calls that must not block.
// stuckHandler starts a watcher whose handler never returns until the test
// ends; entered is closed when it gets its first event.
func stuckHandler(t *testing.T, e *env) (w apiwatch.Interface, entered <-chan struct{}) {
	t.Helper()
	release, in := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	w = e.eb.StartEventWatcher(func(*v1.Event) {
		if once.CompareAndSwap(false, true) {
			close(in)
		}
		<-release
	})
	t.Cleanup(func() { close(release) }) // before the broadcaster's Shutdown (cleanups run last-in first-out)
	return w, in
}

func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// TestKindCacheKeepsNoScheme: the recorder's kind cache is bounded and does
// not keep alive a scheme nobody else uses (here 200 schemes, each used for
// one event by a recorder that is then dropped).
func TestKindCacheKeepsNoScheme(t *testing.T) {
	e := newEnv(t)
	var collected atomic.Int64
	const schemes = 200
	for i := range schemes {
		s := apiruntime.NewScheme()
		s.AddKnownTypes(schema.GroupVersion{Group: fmt.Sprint("g", i), Version: "v1"}, &v1.Pod{})
		runtime.AddCleanup(s, func(struct{}) { collected.Add(1) }, struct{}{})
		e.eb.NewRecorder(s, v1.EventSource{Component: "c"}).Event(pod("ns", fmt.Sprint("p", i)), v1.EventTypeNormal, "R", "m")
	}
	e.flush()
	if s := e.eb.Stats(); s.Created != schemes {
		t.Fatalf("stats %+v", s)
	}
	check.Eventually(t, "the schemes to be collected", func() error {
		runtime.GC()
		n := collected.Load()
		return check.Errorf(n == schemes, "%d of %d schemes collected", n, schemes)
	})
}

// TestStoppedEventWatcherIsForgotten: a stopped watcher holds nothing in the
// broadcaster until Shutdown: not its entry, nor (for a sink) its pipeline.
func TestStoppedEventWatcherIsForgotten(t *testing.T) {
	eb := record.NewBroadcaster(record.WithQueueLength(1000))
	defer eb.Shutdown()
	for range 50 {
		eb.StartEventWatcher(func(*v1.Event) {}).Stop()
		eb.StartRecordingToSink(sinktest.New()).Stop()
	}
	if err := eb.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Flush waits for stopped sinks, not for stopped handlers' goroutines:
	// give the last of those a moment to end.
	check.Eventually(t, "the stopped watchers and sinks to be forgotten", func() error {
		w, s := record.Kept(eb)
		return check.Errorf(w == 0 && s == 0, "%d watchers and %d sinks kept after Stop", w, s)
	})
}

// TestStuckHandlerHurtsOnlyItself: a StartEventWatcher handler that never
// returns, with a Flush waiting on it, fills only its own channel. The sink
// gets every event, nothing is dropped as queue-full, and Stats,
// StartLogging and ShutdownWithContext return at once or at their
// deadline.
func TestStuckHandlerHurtsOnlyItself(t *testing.T) {
	e := newEnv(t, record.WithQueueLength(100))
	stuck, entered := stuckHandler(t, e)
	e.rec.Event(pod("ns", "first"), v1.EventTypeNormal, "R", "m")
	<-entered
	// recordPaced records n events at a pace the loop keeps up with, as a
	// controller's would: the point is the stuck watcher, not the
	// incoming queue.
	recordPaced := func(from, n int) {
		for i := range n {
			e.rec.Event(pod("ns", fmt.Sprint("p", from+i)), v1.EventTypeNormal, "R", "m")
			if i%50 == 49 {
				check.Eventually(t, "the queue to drain", func() error {
					q := e.eb.Stats().Queued
					return check.Errorf(q == 0, "%d events queued", q)
				})
			}
		}
	}
	recordPaced(0, 150) // the stuck watcher's channel (100) is now full
	check.Eventually(t, "the sink to get the first events", func() error {
		n := len(e.sink.Events())
		return check.Errorf(n == 151, "the sink has %d events, want 151", n)
	})
	flushed := make(chan error, 1)
	go func() { flushed <- e.eb.Flush(context.Background()) }()
	recordPaced(150, 300)
	check.Eventually(t, "the sink to get every event", func() error {
		n := len(e.sink.Events())
		return check.Errorf(n == 451, "the sink has %d events, want 451", n)
	})
	within(t, time.Second, "Stats", func() { e.eb.Stats() })
	within(t, time.Second, "StartLogging", func() { e.eb.StartLogging(func(string, ...any) {}) })
	s := e.eb.Stats()
	if s.Dropped.QueueFull != 0 || s.Dropped.WatcherFull != 0 {
		t.Errorf("healthy sink lost events: %+v", s.Dropped)
	}
	if n := stuck.(interface{ Dropped() uint64 }).Dropped(); n == 0 {
		t.Errorf("the stuck watcher's drops are not counted")
	}
	within(t, 5*time.Second, "ShutdownWithContext(100ms)", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_ = e.eb.ShutdownWithContext(ctx)
	})
	select {
	case err := <-flushed:
		if err == nil {
			t.Errorf("Flush returned nil with a handler stuck")
		}
	case <-time.After(5 * time.Second):
		t.Errorf("Flush still waits after Shutdown")
	}
	check.Identity(t, e.eb.Stats())
}

// TestFlushSkipsStoppedStuckHandler: Flush does not wait for a handler
// whose watch was stopped, even if the handler has not returned.
func TestFlushSkipsStoppedStuckHandler(t *testing.T) {
	e := newEnv(t)
	w, entered := stuckHandler(t, e)
	e.rec.Event(pod("ns", "p"), v1.EventTypeNormal, "R", "m")
	<-entered
	w.Stop()
	within(t, 10*time.Second, "Flush", func() { e.flush() })
}

// TestFlushFromAKeyFunction: Flush called from a sink's correlator
// function (run by that sink's goroutine; every sink of the broadcaster
// runs it) waits for no sink, which could wait for each other, and returns
// once what was recorded before it is broadcast. Two sinks flushing from
// it at once return both.
func TestFlushFromAKeyFunction(t *testing.T) {
	var eb record.EventBroadcaster
	errs := make(chan error, 2)
	keyFunc := func(ev *v1.Event) (string, string) {
		if ev.Reason == "Flush" {
			errs <- eb.Flush(context.Background())
		}
		return record.EventAggregatorByReasonFunc(ev)
	}
	eb = record.NewBroadcaster(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited}),
		record.WithCorrelatorOptions(record.CorrelatorOptions{KeyFunc: keyFunc}))
	defer eb.Shutdown()
	a, b := sinktest.New(), sinktest.New()
	eb.StartRecordingToSink(a)
	eb.StartRecordingToSink(b)
	rec := eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: "c"})
	rec.Event(pod("ns", "p"), v1.EventTypeNormal, "Flush", "m")
	for range 2 {
		select {
		case err := <-errs:
			if err != nil {
				t.Errorf("Flush from a sink's key function: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Flush from a sink's key function waits for a sink")
		}
	}
	if err := eb.Flush(context.Background()); err != nil || len(a.Events()) != 1 || len(b.Events()) != 1 {
		t.Fatalf("Flush after: %v, stored %d and %d, want 1 each", err, len(a.Events()), len(b.Events()))
	}
}

// TestFlushAndShutdownFromHandler: Flush and ShutdownWithContext called from
// inside a handler do not wait for the handler's own watcher, even with a
// context that never ends.
func TestFlushAndShutdownFromHandler(t *testing.T) {
	e := newEnv(t)
	errs := make(chan error, 2)
	e.eb.StartEventWatcher(func(ev *v1.Event) {
		switch ev.Reason {
		case "Flush":
			errs <- e.eb.Flush(context.Background())
		case "Shutdown":
			errs <- e.eb.ShutdownWithContext(context.Background())
		}
	})
	for _, reason := range []string{"Flush", "Shutdown"} {
		e.rec.Event(pod("ns", "p"), v1.EventTypeNormal, reason, "m")
		select {
		case err := <-errs:
			if err != nil {
				t.Errorf("%s from a handler: %v", reason, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s from a handler waits for its own watcher", reason)
		}
	}
	if n := len(e.sink.Events()); n != 2 {
		t.Errorf("%d events written, want 2", n)
	}
}

// TestHandlersFlushingAtOnce: two handlers that call Flush at the same
// time do not wait for each other.
func TestHandlersFlushingAtOnce(t *testing.T) {
	e := newEnv(t)
	var arrived sync.WaitGroup
	arrived.Add(2)
	errs := make(chan error, 2)
	for range 2 {
		e.eb.StartEventWatcher(func(*v1.Event) {
			arrived.Done()
			arrived.Wait() // both handlers are running
			errs <- e.eb.Flush(context.Background())
		})
	}
	e.rec.Event(pod("ns", "p"), v1.EventTypeNormal, "R", "m")
	for range 2 {
		select {
		case err := <-errs:
			if err != nil {
				t.Errorf("Flush from a handler: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("handlers flushing at once wait for each other")
		}
	}
}

// TestSecondShutdownHonoursItsDeadline: while one ShutdownWithContext waits
// (here for a stuck handler, with no deadline), another returns at its own
// deadline.
func TestSecondShutdownHonoursItsDeadline(t *testing.T) {
	e := newEnv(t)
	release, entered := make(chan struct{}), make(chan struct{})
	e.eb.StartEventWatcher(func(*v1.Event) {
		close(entered)
		<-release
	})
	e.rec.Event(pod("ns", "p"), v1.EventTypeNormal, "R", "m")
	<-entered
	first := make(chan error, 1)
	go func() { first <- e.eb.ShutdownWithContext(context.Background()) }()
	check.Eventually(t, "the first shutdown to begin", func() error {
		e.rec.Event(pod("ns", "p"), v1.EventTypeNormal, "R", "m")
		s := e.eb.Stats()
		return check.Errorf(s.Dropped.AfterShutdown > 0, "no event dropped after shutdown yet; stats %+v", s)
	})
	within(t, 5*time.Second, "a second ShutdownWithContext(50ms)", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if err := e.eb.ShutdownWithContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("second shutdown = %v, want DeadlineExceeded", err)
		}
	})
	close(release)
	if err := <-first; err != nil {
		t.Errorf("first shutdown: %v", err)
	}
}

// TestShutdownFromHandlerDuringShutdown: a handler that calls
// ShutdownWithContext while a shutdown waits for that handler gets an error
// at once instead of waiting for a shutdown that waits for it.
func TestShutdownFromHandlerDuringShutdown(t *testing.T) {
	e := newEnv(t)
	entered, proceed := make(chan struct{}), make(chan struct{})
	inner := make(chan error, 1)
	e.eb.StartEventWatcher(func(*v1.Event) {
		close(entered)
		<-proceed
		inner <- e.eb.ShutdownWithContext(context.Background())
	})
	e.rec.Event(pod("ns", "p"), v1.EventTypeNormal, "R", "m")
	<-entered
	first := make(chan error, 1)
	go func() { first <- e.eb.ShutdownWithContext(context.Background()) }()
	check.Eventually(t, "the first shutdown to begin", func() error {
		e.rec.Event(pod("ns", "p"), v1.EventTypeNormal, "R", "m")
		s := e.eb.Stats()
		return check.Errorf(s.Dropped.AfterShutdown > 0, "no event dropped after shutdown yet; stats %+v", s)
	})
	close(proceed)
	select {
	case err := <-inner:
		if err == nil {
			t.Errorf("shutdown from a handler during shutdown returned nil")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("shutdown from a handler waits for the shutdown that waits for it")
	}
	if err := <-first; err != nil {
		t.Errorf("first shutdown: %v", err)
	}
}

// TestNoStillRunningLogForIdleHandler: when Shutdown's context has ended
// (here a hanging sink used it up) but the handlers have returned, nothing
// claims a handler is still running.
func TestNoStillRunningLogForIdleHandler(t *testing.T) {
	for i := range 8 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			e := newEnv(t)
			e.eb.StartEventWatcher(func(*v1.Event) {})
			e.sink.SetFault(func(ctx context.Context, _ sinktest.Op, _ *v1.Event) error {
				<-ctx.Done()
				return ctx.Err()
			})
			e.rec.Event(pod("ns", "p"), v1.EventTypeNormal, "R", "m")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			if err := e.eb.ShutdownWithContext(ctx); err == nil {
				t.Fatalf("no event abandoned: %+v", e.eb.Stats())
			}
			if strings.Contains(e.logs(), "still running") {
				t.Errorf("logged a running handler when none was running:\n%s", e.logs())
			}
		})
	}
}

// TestStoppedSinkReleasesEverything: Stop on the watch StartRecordingToSink
// returns flushes that sink's events and stops its goroutines; its counters
// stay in Stats. Start/stop cycles leave nothing running.
func TestStoppedSinkReleasesEverything(t *testing.T) {
	e := newEnv(t)
	e.flush()
	base := goleak.IgnoreCurrent()
	sinks := make([]*sinktest.Sink, 20)
	for i := range sinks {
		sinks[i] = sinktest.New()
		w := e.eb.StartRecordingToSink(sinks[i])
		e.rec.Event(pod("ns", fmt.Sprint("p", i)), v1.EventTypeNormal, "R", "m")
		e.flush() // the event has reached every sink
		w.Stop()
	}
	e.flush() // waits for the stopped sinks to finish
	for i, s := range sinks {
		if n := len(s.Events()); n != 1 {
			t.Errorf("sink %d got %d events, want 1", i, n)
		}
	}
	if err := goleak.Find(base); err != nil {
		t.Errorf("stopped sinks left goroutines: %v", err)
	}
	s := e.eb.Stats()
	if s.Created != 20+20 || s.Unaccounted() != 0 {
		t.Errorf("stats %+v, unaccounted %d", s, s.Unaccounted())
	}
}

// TestFlushWaitsForStoppedSink: Flush after a sink's watch was stopped
// waits until that sink's pending events are written (or its grace period
// ends and they are counted as abandoned).
func TestFlushWaitsForStoppedSink(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	slow := sinktest.New()
	slow.SetFault(func(ctx context.Context, _ sinktest.Op, _ *v1.Event) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	w := e.eb.StartRecordingToSink(slow)
	for i := range 3 {
		e.rec.Event(pod("ns", fmt.Sprint("p", i)), v1.EventTypeNormal, "R", "m")
	}
	// Stop once the loop has offered the events to both sinks.
	check.Eventually(t, "the events to reach both sinks", func() error {
		s := e.eb.Stats()
		return check.Errorf(s.Offered == 6, "offered %d, want 6; stats %+v", s.Offered, s)
	})
	w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := e.eb.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush = %v with the stopped sink's events unwritten; stats %+v", err, e.eb.Stats())
	}
	close(release)
	e.flush()
	if n := len(slow.Events()); n != 3 {
		t.Errorf("stopped sink wrote %d of 3 events", n)
	}
	if s := e.eb.Stats(); s.Pending != 0 || s.Created != 6 || s.Unaccounted() != 0 {
		t.Errorf("stats %+v, unaccounted %d", s, s.Unaccounted())
	}
}

// TestStartAfterShutdownStartsNothing: Start* after Shutdown return an empty
// watch and leave no goroutine behind.
func TestStartAfterShutdownStartsNothing(t *testing.T) {
	e := newEnv(t)
	e.eb.Shutdown()
	base := goleak.IgnoreCurrent()
	for range 10 {
		e.eb.StartRecordingToSink(sinktest.New()).Stop()
		e.eb.StartEventWatcher(func(*v1.Event) {}).Stop()
	}
	if err := goleak.Find(base); err != nil {
		t.Errorf("Start* after Shutdown left goroutines: %v", err)
	}
}

// TestBadOptionsMeanDefaults: zero means the default; a negative or absurd
// value means the default too, with one error log naming the option (the
// broadcaster's own, or the sink.Options field, logged by the sink's
// engine), and never a panic or a refused sink.
func TestBadOptionsMeanDefaults(t *testing.T) {
	const broadcaster, engine = "Invalid broadcaster option", "Invalid sink option"
	for _, tc := range []struct {
		option, log string
		opt         record.BroadcasterOption
	}{
		{"WithQueueLength", broadcaster, record.WithQueueLength(1 << 62)},
		{"WithQueueLength", broadcaster, record.WithQueueLength(-1)},
		{"WithMessageLimit", broadcaster, record.WithMessageLimit(-1)},
		{"WithShutdownGracePeriod", broadcaster, record.WithShutdownGracePeriod(-time.Second)},
		{"Workers", engine, record.WithSinkOptions(sink.Options{Workers: -1})},
		{"Workers", engine, record.WithSinkOptions(sink.Options{Workers: 1 << 40})},
		{"MaxPending", engine, record.WithSinkOptions(sink.Options{MaxPending: -1})},
		{"MaxTries", engine, record.WithSinkOptions(sink.Options{MaxTries: -3})},
		{"RequestTimeout", engine, record.WithSinkOptions(sink.Options{RequestTimeout: -time.Second})},
		{"BaseDelay", engine, record.WithSinkOptions(sink.Options{BaseDelay: -time.Second})},
		{"MaxDelay", engine, record.WithSinkOptions(sink.Options{MaxDelay: -time.Second})},
		{"Burst", engine, record.WithSinkOptions(sink.Options{QPS: 10, Burst: -1})},
		{"QPS", engine, record.WithSinkOptions(sink.Options{QPS: math.NaN(), Burst: 10})},
		{"QPS", engine, record.WithSinkOptions(sink.Options{QPS: -1})},
	} {
		t.Run(tc.option, func(t *testing.T) {
			e := newEnv(t, tc.opt)
			e.rec.Event(pod("ns", "p"), v1.EventTypeNormal, "R", "m")
			e.flush()
			if n := len(e.sink.Events()); n != 1 {
				t.Errorf("%d events written, want 1", n)
			}
			logs := e.logs()
			if n := strings.Count(logs, tc.log); n != 1 || !strings.Contains(logs, `option="`+tc.option+`"`) {
				t.Errorf("want one error %q naming %s, logs:\n%s", tc.log, tc.option, logs)
			}
		})
	}
	t.Run("zero", func(t *testing.T) {
		e := newEnv(t, record.WithQueueLength(0), record.WithMessageLimit(0), record.WithShutdownGracePeriod(0),
			record.WithSinkOptions(sink.Options{Workers: 0, MaxPending: 0, MaxTries: 0}))
		e.rec.Event(pod("ns", "p"), v1.EventTypeNormal, "R", "m")
		e.flush()
		if logs := e.logs(); strings.Contains(logs, broadcaster) || strings.Contains(logs, engine) {
			t.Errorf("zero values logged as invalid:\n%s", logs)
		}
	})
}

// TestSinkOptionsAddUp: WithSinkOptions given more than once (and
// WithSleepDuration) each set the fields they give, the later winning; the
// clock given there is the recorders' clock too.
func TestSinkOptionsAddUp(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 26, 1, 2, 3, 0, time.UTC))
	var written atomic.Int64
	s := sinktest.New()
	eb := record.NewBroadcaster(
		record.WithSinkOptions(sink.Options{Clock: clk, QPS: sink.Unlimited, Workers: 2}),
		record.WithSleepDuration(0),
		record.WithSinkOptions(sink.Options{Workers: 3, OnWritten: func(string, *v1.Event, *v1.Event) { written.Add(1) }}),
	)
	defer eb.Shutdown()
	eb.StartRecordingToSink(s)
	eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: "c"}).Event(pod("ns", "p"), v1.EventTypeNormal, "R", "m")
	if err := eb.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	evs := s.Events()
	if len(evs) != 1 || !evs[0].FirstTimestamp.Time.Equal(clk.Now()) || written.Load() != 1 {
		t.Fatalf("events %v (want one stamped %v by the fake clock of the first WithSinkOptions), OnWritten of the second called %d times, want 1",
			evs, clk.Now(), written.Load())
	}
	if st := eb.Stats(); st.WriteRate != math.Inf(1) {
		t.Errorf("write rate %v, want +Inf: the first WithSinkOptions' QPS Unlimited is kept by the second", st.WriteRate)
	}
}

// TestIdentityInEveryConfiguration: Stats places every recorded event in
// one bucket with no sink, with sinks started late or stopped early, with
// several sinks and with a refused (nil) sink.
func TestIdentityInEveryConfiguration(t *testing.T) {
	newBare := func(t *testing.T) (record.EventBroadcaster, record.EventRecorder) {
		eb := record.NewBroadcaster(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited}))
		t.Cleanup(eb.Shutdown)
		return eb, eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: "c"})
	}
	record5 := func(rec record.EventRecorder, from int) {
		for i := range 5 {
			rec.Event(pod("ns", fmt.Sprint("p", from+i)), v1.EventTypeNormal, "R", "m")
		}
	}
	flush := func(t *testing.T, eb record.EventBroadcaster) record.Stats {
		t.Helper()
		if err := eb.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		s := eb.Stats()
		check.Identity(t, s)
		return s
	}
	broadcast := func(t *testing.T, eb record.EventBroadcaster, n int64) {
		t.Helper()
		check.Eventually(t, "the events to be broadcast", func() error {
			s := eb.Stats()
			return check.Errorf(s.Broadcast == n, "broadcast %d, want %d; stats %+v", s.Broadcast, n, s)
		})
	}
	t.Run("no sink", func(t *testing.T) {
		eb, rec := newBare(t)
		record5(rec, 0)
		broadcast(t, eb, 5)
		if s := flush(t, eb); s.Offered != 0 {
			t.Errorf("stats %+v", s)
		}
	})
	t.Run("nil sink", func(t *testing.T) {
		eb, rec := newBare(t)
		eb.StartRecordingToSink(nil)
		record5(rec, 0)
		broadcast(t, eb, 5)
		flush(t, eb)
	})
	t.Run("late and early", func(t *testing.T) {
		eb, rec := newBare(t)
		record5(rec, 0) // no sink yet
		broadcast(t, eb, 5)
		a := sinktest.New()
		w := eb.StartRecordingToSink(a)
		record5(rec, 5)
		flush(t, eb)
		w.Stop()
		record5(rec, 10) // no sink any more
		s := flush(t, eb)
		if s.Broadcast != 15 || s.Offered != 5 || s.Created != 5 || len(a.Events()) != 5 {
			t.Errorf("stats %+v", s)
		}
	})
	t.Run("two sinks", func(t *testing.T) {
		eb, rec := newBare(t)
		eb.StartRecordingToSink(sinktest.New())
		eb.StartRecordingToSink(sinktest.New())
		record5(rec, 0)
		if s := flush(t, eb); s.Offered != 10 || s.Created != 10 {
			t.Errorf("stats %+v", s)
		}
	})
}

// TestNilHandlerIsRefusedOnce: StartEventWatcher and StartLogging refuse a
// nil function with one error line and an empty watch, as
// StartRecordingToSink refuses a nil sink; started, it would panic and log
// once per event.
func TestNilHandlerIsRefusedOnce(t *testing.T) {
	e := newEnv(t)
	for _, w := range []apiwatch.Interface{e.eb.StartEventWatcher(nil), e.eb.StartLogging(nil)} {
		select {
		case _, open := <-w.ResultChan():
			if open {
				t.Error("the watch of a nil function sent an event")
			}
		default:
			t.Error("the watch of a nil function is not an empty one (its channel is open)")
		}
		w.Stop()
	}
	for i := range 20 {
		e.rec.Eventf(pod("ns", "p"), v1.EventTypeNormal, "R", "m%d", i)
	}
	e.flush()
	logs := e.logs()
	if n := strings.Count(logs, "nil handler"); n != 1 {
		t.Errorf("%d lines refuse the nil handler, want 1:\n%s", n, logs)
	}
	if n := strings.Count(logs, "nil function"); n != 1 {
		t.Errorf("%d lines refuse the nil logging function, want 1:\n%s", n, logs)
	}
	if strings.Contains(logs, "panicked") {
		t.Errorf("a nil function was called:\n%s", logs)
	}
}

// TestCorrelatorPanicIsCountedDrop: a user's KeyFunc that panics costs the
// event (counted as correlator_panicked and logged), not the process.
func TestCorrelatorPanicIsCountedDrop(t *testing.T) {
	e := newEnv(t, record.WithCorrelatorOptions(record.CorrelatorOptions{
		KeyFunc: func(ev *v1.Event) (string, string) {
			if ev.Reason == "Boom" {
				panic("user bug")
			}
			return ev.Reason, ev.Message
		},
	}))
	e.rec.Event(pod("ns", "p"), v1.EventTypeNormal, "Boom", "m")
	e.rec.Event(pod("ns", "p"), v1.EventTypeNormal, "Fine", "m")
	e.flush()
	s := e.eb.Stats()
	if s.Dropped.CorrelatorPanicked != 1 || s.Created != 1 || s.Unaccounted() != 0 {
		t.Errorf("stats %+v", s)
	}
	if s.Dropped.ByReason()["correlator_panicked"] != 1 {
		t.Errorf("ByReason %v", s.Dropped.ByReason())
	}
	if !strings.Contains(e.logs(), `dropReason="correlator_panicked"`) {
		t.Errorf("drop not logged:\n%s", e.logs())
	}
}

// heapAlloc returns the live heap after a collection.
func heapAlloc() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestStartStopCyclesKeepNoMemory: watchers and sinks started and stopped
// leave nothing behind. Each watcher's channel alone is 240 KB with the
// default queue length, so 300 kept watchers would be 70 MB.
func TestStartStopCyclesKeepNoMemory(t *testing.T) {
	eb := record.NewBroadcaster()
	defer eb.Shutdown()
	before := heapAlloc()
	for range 300 {
		eb.StartEventWatcher(func(*v1.Event) {}).Stop()
	}
	for range 100 {
		eb.StartRecordingToSink(sinktest.New()).Stop()
	}
	if err := eb.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if grew := heapAlloc() - before; grew > 8<<20 {
		t.Errorf("heap grew by %d MB after 400 start/stop cycles", grew>>20)
	}
}

// TestSinkWatchStopKeepsWhatWasRecorded: Stop on the watch
// StartRecordingToSink returned, right after a burst, still writes every
// event recorded before it, including those that were still in the
// broadcaster's incoming queue (a stopped watcher is offered nothing more).
func TestSinkWatchStopKeepsWhatWasRecorded(t *testing.T) {
	s := sinktest.New()
	eb := record.NewBroadcaster(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited}))
	w := eb.StartRecordingToSink(s)
	rec := eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: "c"})
	const n = 5000
	for i := range n {
		rec.Eventf(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("p", i)}}, v1.EventTypeNormal, "R", "m")
	}
	w.Stop()
	w.Stop() // twice: no effect
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := eb.ShutdownWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	st := eb.Stats()
	if got := len(s.Events()); got != n || st.Created != n || st.Offered != n || st.Abandoned != 0 {
		t.Fatalf("stored %d of %d; stats %+v", got, n, st)
	}
}

// TestShutdownCountsWhatAStuckKeyFunctionHolds: when Shutdown gives up on a
// sink whose goroutine is stuck in a user's key function, the event it
// holds and those still queued for it are counted as abandoned at once:
// when Shutdown returns no gauge is left and the identity holds. When the
// key function returns at last, nothing is counted twice, nothing is left
// running, and no count goes down: the stuck event stays abandoned, as
// Shutdown reported it, even when the spam filter skips it then (a count
// that went down would read as a reset of its Prometheus counter).
func TestShutdownCountsWhatAStuckKeyFunctionHolds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		filtered bool // the stuck event turns out filtered (counted by the correlator's own Stats)
	}{{"written", false}, {"filtered", true}} {
		t.Run(tc.name, func(t *testing.T) {
			base := goleak.IgnoreCurrent()
			entered, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			opts := record.CorrelatorOptions{KeyFunc: func(ev *v1.Event) (string, string) {
				if ev.Reason == "Stuck" {
					once.Do(func() { close(entered) })
					<-release
				}
				return record.EventAggregatorByReasonFunc(ev)
			}}
			if tc.filtered {
				// A spam filter that filters every event: the stuck
				// event is filtered when its key function returns.
				opts.BurstSize = -1
			}
			eb := record.NewBroadcaster(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited, Clock: clocktesting.NewFakeClock(time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC))}), record.WithCorrelatorOptions(opts))
			eb.StartRecordingToSink(sinktest.New())
			rec := eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: "c"})
			rec.Event(pod("ns", "p"), v1.EventTypeNormal, "Stuck", "m")
			for i := range 5 {
				rec.Event(pod("ns", fmt.Sprint("q", i)), v1.EventTypeNormal, "Behind", "m")
			}
			<-entered
			check.Eventually(t, "the events behind to be queued for the sink", func() error {
				s := eb.Stats()
				return check.Errorf(s.Queued == 5, "queued %d, want 5; stats %+v", s.Queued, s)
			})

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			err := eb.ShutdownWithContext(ctx)
			s := eb.Stats()
			if s.Queued != 0 || s.Pending != 0 || s.InFlight != 0 || s.Unaccounted() != 0 || s.Abandoned != 6 {
				t.Errorf("after Shutdown: stats %+v, unaccounted %d; want 6 abandoned and no gauge", s, s.Unaccounted())
			}
			if err == nil || !strings.Contains(err.Error(), "abandoned 6 events") {
				t.Errorf("ShutdownWithContext = %v, want 6 events abandoned", err)
			}

			close(release)
			check.Eventually(t, "the stuck goroutine to end", func() error { return goleak.Find(base) })
			s = eb.Stats()
			if s.Abandoned != 6 || s.Filtered != 0 || s.Unaccounted() != 0 {
				t.Errorf("after the key function returned: stats %+v, unaccounted %d; want 6 abandoned, as Shutdown said, and none filtered", s, s.Unaccounted())
			}
		})
	}
}

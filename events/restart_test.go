package events_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// creates counts the creates a fake clientset answered, by event name.
type creates struct {
	mu    sync.Mutex
	names map[string]int
}

func countCreates(cs *fake.Clientset) *creates {
	c := &creates{names: map[string]int{}}
	cs.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.CreateAction).GetObject()
		name := obj.(interface{ GetName() string }).GetName()
		c.mu.Lock()
		c.names[name]++
		c.mu.Unlock()
		return false, nil, nil // the tracker stores it
	})
	return c
}

// twice returns the names created more than once.
func (c *creates) twice() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for n, k := range c.names {
		if k > 1 {
			out = append(out, n)
		}
	}
	return out
}

func newRestartBroadcaster(t *testing.T) (events.EventBroadcaster, *memSink) {
	t.Helper()
	s := newMemSink()
	b := events.NewBroadcaster(s, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited}), record.WithLogger(klogDiscard())))
	t.Cleanup(b.Shutdown)
	return b, s
}

// checkOnce fails if an event was created twice (memSink answers a second
// create of a name AlreadyExists) or if the sink does not hold want events.
func checkOnce(t *testing.T, b events.EventBroadcaster, s *memSink, want int) {
	t.Helper()
	s.mu.Lock()
	creates, stored := s.creates, len(s.events)
	s.mu.Unlock()
	if creates != stored {
		t.Errorf("%d creates for %d events: some were written twice", creates, stored)
	}
	if want >= 0 && stored != want {
		t.Errorf("stored %d of %d events; stats %+v", stored, want, b.Stats())
	}
}

// client-go's deprecated restart: StartRecordingToSink(stopCh), close it,
// StartRecordingToSink(newStopCh) at once. The new start is not refused
// while the old sink stops: every event recorded after it is written, once
// (the case: 30 events recorded after the restart, 30 lost).
func TestStartRecordingToSinkAfterStopRestarts(t *testing.T) {
	t.Run("fake clientset", func(t *testing.T) {
		// The fake clientset takes tens of milliseconds a create under
		// -race: few events, and a grace period the old sink's writes
		// cannot outlast.
		cs := fake.NewClientset()
		c := countCreates(cs)
		b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()},
			events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited}), record.WithShutdownGracePeriod(5*time.Minute), record.WithLogger(klogDiscard())))
		t.Cleanup(b.Shutdown)
		want := restartRounds(b, 1, 5, 30)
		flush(t, b)
		if got := len(listEvents(t, cs)); got != want {
			t.Fatalf("stored %d of %d events; stats %+v", got, want, b.Stats())
		}
		if d := c.twice(); len(d) > 0 {
			t.Fatalf("created twice: %v", d)
		}
		checkRestartStats(t, b, want)
	})
	t.Run("memory sink", func(t *testing.T) {
		b, s := newRestartBroadcaster(t)
		want := restartRounds(b, 20, 30, 30)
		flush(t, b)
		checkOnce(t, b, s, want)
		checkRestartStats(t, b, want)
	})
}

// restartRounds records perRound events, closes the stopCh and restarts
// recording at once, rounds times, then records last events, and returns
// how many it recorded. Recording ends at Shutdown.
func restartRounds(b events.EventBroadcaster, rounds, perRound, last int) (recorded int) {
	r := b.NewRecorder(scheme.Scheme, "example.com/ctl")
	stop := make(chan struct{})
	b.StartRecordingToSink(stop)
	for round := range rounds {
		for i := range perRound {
			r.Eventf(pod("ns", fmt.Sprintf("r%d-p%d", round, i)), nil, v1.EventTypeNormal, "R", "A", "n")
			recorded++
		}
		close(stop)
		stop = make(chan struct{})
		b.StartRecordingToSink(stop)
	}
	for i := range last {
		r.Eventf(pod("ns", fmt.Sprint("last", i)), nil, v1.EventTypeNormal, "R", "A", "n")
		recorded++
	}
	return recorded
}

func checkRestartStats(t *testing.T, b events.EventBroadcaster, want int) {
	t.Helper()
	st := b.Stats()
	check.Settled(t, st)
	if st.Created != int64(want) || st.Dropped.Total() != 0 || st.Abandoned != 0 {
		t.Fatalf("stats %+v, want %d created", st, want)
	}
}

// The same with StartRecordingToSinkWithContext and a cancelled context.
func TestStartRecordingToSinkWithContextAfterCancelRestarts(t *testing.T) {
	b, s := newRestartBroadcaster(t)
	r := b.NewRecorder(scheme.Scheme, "example.com/ctl")
	ctx, cancel := context.WithCancel(context.Background())
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	r.Eventf(pod("ns", "before"), nil, v1.EventTypeNormal, "R", "A", "n")
	cancel()
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	if err := b.StartRecordingToSinkWithContext(ctx2); err != nil {
		t.Fatalf("restart refused: %v", err)
	}
	// A third start while the second is pending (or running) is refused:
	// two sinks would write every event twice.
	if err := b.StartRecordingToSinkWithContext(context.Background()); err == nil {
		t.Fatal("a second start while recording was accepted")
	}
	for i := range 30 {
		r.Eventf(pod("ns", fmt.Sprint("p", i)), nil, v1.EventTypeNormal, "R", "A", "n")
	}
	flush(t, b)
	checkOnce(t, b, s, 31)
	check.Settled(t, b.Stats())
}

// A series goes on across a restart of recording, as client-go's does (its
// cache of series is the broadcaster's): an occurrence seconds after the
// first, recorded once recording was started again, patches the first
// event to a series of 2 instead of creating an event of its own. The
// broadcaster's Stats count each occurrence once.
func TestSeriesGoesOnAcrossARestart(t *testing.T) {
	b, s := newRestartBroadcaster(t)
	r := b.NewRecorder(scheme.Scheme, "example.com/ctl")
	ctx, cancel := context.WithCancel(context.Background())
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	r.Eventf(pod("ns", "p"), nil, v1.EventTypeWarning, "BackOff", "Restart", "crashed")
	flush(t, b)
	cancel()
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatalf("restart refused: %v", err)
	}
	r.Eventf(pod("ns", "p"), nil, v1.EventTypeWarning, "BackOff", "Restart", "crashed")
	flush(t, b)
	evs := s.all()
	if len(evs) != 1 || count(evs[0]) != 2 {
		for _, e := range evs {
			t.Logf("stored %s, count %d", e.Name, count(e))
		}
		t.Fatalf("two occurrences of one series across a restart stored as %d events, want one series of 2", len(evs))
	}
	if st := b.Stats(); st.Created != 1 || st.Patched != 1 || st.CacheEvictions != 0 {
		t.Errorf("stats %+v, want 1 created, 1 patched, no eviction", st)
	}
	check.Settled(t, b.Stats())
}

// Restarts while another goroutine records all the time: no event is
// written twice (those recorded between a stop and the next start may reach
// no sink), and every event recorded by the restarting goroutine itself
// after each start is written.
func TestRestartUnderLoadWritesOnce(t *testing.T) {
	b, s := newRestartBroadcaster(t)
	r := b.NewRecorder(scheme.Scheme, "example.com/ctl")
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			r.Eventf(pod("bg", fmt.Sprint("p", i)), nil, v1.EventTypeNormal, "R", "A", "n")
		}
	}()
	own := 0
	ctx, cancel := context.WithCancel(context.Background())
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	for round := range 50 {
		cancel()
		ctx, cancel = context.WithCancel(context.Background())
		if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
			t.Fatalf("round %d: restart refused: %v", round, err)
		}
		r.Eventf(pod("own", fmt.Sprint("p", round)), nil, v1.EventTypeNormal, "R", "A", "n")
		own++
	}
	close(done)
	wg.Wait()
	flush(t, b)
	cancel()
	stored := 0
	for _, e := range s.all() {
		if e.Namespace == "own" {
			stored++
		}
	}
	if stored != own {
		t.Fatalf("stored %d of the %d events recorded after a start; stats %+v", stored, own, b.Stats())
	}
	checkOnce(t, b, s, -1)
	st := b.Stats()
	if u := st.Unaccounted(); u != 0 {
		t.Fatalf("Unaccounted = %d; stats %+v", u, st)
	}
	if st.Offered > st.Broadcast || st.Created != st.Offered || st.Dropped.Total() != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A handler of the broadcaster may stop and restart recording: nothing
// waits for the handler, and the restart takes effect.
func TestRestartFromHandler(t *testing.T) {
	b, s := newRestartBroadcaster(t)
	r := b.NewRecorder(scheme.Scheme, "example.com/ctl")
	stop := make(chan struct{})
	b.StartRecordingToSink(stop)
	restarted := make(chan struct{})
	var once sync.Once
	stopW, err := b.StartEventWatcher(func(obj runtime.Object) {
		once.Do(func() {
			close(stop)
			b.StartRecordingToSink(nil) // until Shutdown
			// Flush from the handler waits for the restart, which does not
			// wait for this handler.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := b.Flush(ctx); err != nil {
				t.Errorf("Flush from the handler: %v", err)
			}
			close(restarted)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stopW()
	r.Eventf(pod("ns", "first"), nil, v1.EventTypeNormal, "R", "A", "n")
	<-restarted
	for i := range 30 {
		r.Eventf(pod("ns", fmt.Sprint("p", i)), nil, v1.EventTypeNormal, "R", "A", "n")
	}
	flush(t, b)
	checkOnce(t, b, s, 31)
}

// Shutdown while a restart waits for the old sink: every event is
// accounted for, and no goroutine is left (goleak in TestMain).
func TestShutdownDuringRestart(t *testing.T) {
	for range 20 {
		b := events.NewBroadcaster(newMemSink(), events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited}), record.WithLogger(klogDiscard())))
		r := b.NewRecorder(scheme.Scheme, "example.com/ctl")
		stop := make(chan struct{})
		b.StartRecordingToSink(stop)
		r.Eventf(pod("ns", "a"), nil, v1.EventTypeNormal, "R", "A", "n")
		close(stop)
		b.StartRecordingToSink(make(chan struct{})) // never closed: Shutdown stops it
		r.Eventf(pod("ns", "b"), nil, v1.EventTypeNormal, "R", "A", "n")
		b.Shutdown()
		st := b.Stats()
		if u := st.Unaccounted(); u != 0 || st.Recorded != 2 || st.Queued != 0 || st.Pending != 0 || st.InFlight != 0 {
			t.Fatalf("stats %+v", st)
		}
	}
}

// waitRecorded polls until at least n events were recorded.
func waitRecorded(t *testing.T, b events.EventBroadcaster, n int64) {
	t.Helper()
	check.Eventually(t, fmt.Sprintf("%d events recorded", n), func() error {
		got := b.Stats().Recorded
		return check.Errorf(got >= n, "recorded %d", got)
	})
}

// Recording that stops with its context and starts again while events keep
// coming never has two sinks: no event is written twice.
func TestRestartWhileRecordingWritesOnce(t *testing.T) {
	for round := range 20 {
		s := newMemSink()
		b := events.NewBroadcaster(s, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited}), record.WithLogger(klogDiscard())))
		ctx, cancel := context.WithCancel(context.Background())
		if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
			t.Fatal(err)
		}
		r := b.NewRecorder(scheme.Scheme, "example.com/ctl")
		var stop atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; !stop.Load(); i++ {
				// Events keep coming, but no faster than the sink takes
				// them: this test is about the restart, not about an
				// overload (which drops, counted, as queue or pending
				// full).
				for i%100 == 0 && !stop.Load() {
					if st := b.Stats(); st.Queued+st.Pending+st.InFlight < 1000 {
						break
					}
					time.Sleep(100 * time.Microsecond)
				}
				r.Eventf(pod("ns", fmt.Sprint("p", i)), nil, v1.EventTypeNormal, "R", "A", "n")
			}
		}()
		waitRecorded(t, b, 200)
		cancel()
		// The old sink is still taking what was recorded before.
		check.Eventually(t, "a new start after the context ended", func() error {
			return b.StartRecordingToSinkWithContext(context.Background())
		})
		waitRecorded(t, b, b.Stats().Recorded+200)
		stop.Store(true)
		<-done
		flush(t, b)
		st := b.Stats()
		b.Shutdown()
		// Events recorded between the stop and the new start reach no sink
		// (Broadcast counts them, Offered does not); every offered event is
		// created once.
		if st.Dropped.Total() != 0 || st.Offered > st.Broadcast || st.Created != st.Offered || int64(len(s.all())) != st.Created {
			t.Fatalf("round %d: broadcast %d, offered %d, created %d, stored %d, dropped %+v", round, st.Broadcast, st.Offered, st.Created, len(s.all()), st.Dropped)
		}
	}
}

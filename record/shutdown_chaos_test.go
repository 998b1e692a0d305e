package record_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/internal/testing/replay"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// chaosGoroutines is how many goroutines each round of the shutdown chaos
// test runs at once.
const chaosGoroutines = 64

// TestStatsAfterShutdownUnderChaos: 64 goroutines record events, flush and
// shut down with short deadlines, read Stats, and start and stop extra
// sinks, event watchers and loggers, on a broadcaster writing to a fast and
// a slow sink. Whenever a Shutdown has returned complete, every gauge
// (Queued, Pending, InFlight) is zero, whatever else is going on; once the
// goroutines are done, the final Shutdown returns with the gauges zero and
// every recorded event in exactly one bucket, and nothing of the
// broadcaster is left running.
func TestStatsAfterShutdownUnderChaos(t *testing.T) {
	rounds := 4
	if testing.Short() {
		rounds = 2
	}
	for seed := range uint64(rounds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { chaosRound(t, seed) })
	}
}

// chaosSinks are the round's sinks. slow blocks every write until a
// goroutine lets one through (gate) or the write's context ends. The key
// function of the sinks' correlators blocks on events of reason Slow until a
// goroutine lets one through (keyGate) or the round ends (release), and
// panics on events of reason Panic.
type chaosSinks struct {
	gate, keyGate, release chan struct{}
}

func (c *chaosSinks) keyFunc(ev *v1.Event) (string, string) {
	switch ev.Reason {
	case "Slow":
		select {
		case <-c.keyGate:
		case <-c.release:
		}
	case "Panic":
		panic("chaos: key function panicked")
	}
	return record.EventAggregatorByReasonFunc(ev)
}

func (c *chaosSinks) slow() *sinktest.Sink {
	s := sinktest.New()
	s.SetFault(func(ctx context.Context, _ sinktest.Op, _ *v1.Event) error {
		select {
		case <-c.gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	return s
}

// letThrough lets up to n writes of the slow sinks through, and, if keys,
// n calls of the key function, without waiting.
func (c *chaosSinks) letThrough(n int, keys bool) {
	for range n {
		select {
		case c.gate <- struct{}{}:
		default:
		}
		if !keys {
			continue
		}
		select {
		case c.keyGate <- struct{}{}:
		default:
		}
	}
}

// gauges reports the gauges of s that are not zero.
func gauges(s record.Stats) string {
	var b strings.Builder
	if s.Queued != 0 {
		fmt.Fprintf(&b, " Queued=%d", s.Queued)
	}
	if s.Pending != 0 {
		fmt.Fprintf(&b, " Pending=%d", s.Pending)
	}
	if s.InFlight != 0 {
		fmt.Fprintf(&b, " InFlight=%d", s.InFlight)
	}
	return b.String()
}

// shutdownComplete reports whether a ShutdownWithContext that returned err
// returned because the shutdown is over (nil, or the count of abandoned
// events), not because its own context ended while another call's
// shutdown still ran.
func shutdownComplete(err error) bool {
	return err == nil || !strings.Contains(err.Error(), "in progress")
}

func chaosRound(t *testing.T, seed uint64) {
	replay.OnFailure(t, "seed %d", seed)
	base := goleak.IgnoreCurrent()
	cs := &chaosSinks{gate: make(chan struct{}, 8), keyGate: make(chan struct{}), release: make(chan struct{})}
	released := false
	releaseKeys := func() {
		if !released {
			released = true
			close(cs.release)
		}
	}
	defer releaseKeys()
	eb := record.NewBroadcaster(
		record.WithLogger(logr.Discard()),
		record.WithSinkOptions(sink.Options{Clock: clocktesting.NewFakeClock(t0), QPS: sink.Unlimited}),
		record.WithQueueLength(1000),
		record.WithCorrelatorOptions(record.CorrelatorOptions{KeyFunc: cs.keyFunc}),
		// Shutdown, a stopped sink's flush and its watch's Stop wait 2 ms
		// at most.
		record.WithShutdownGracePeriod(2*time.Millisecond),
	)
	eb.StartRecordingToSink(sinktest.New())
	eb.StartRecordingToSink(cs.slow())
	rec := eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: "chaos"})

	var (
		wg       sync.WaitGroup
		failures atomic.Int64
		mu       sync.Mutex
		failed   []string
	)
	fail := func(format string, args ...any) {
		if failures.Add(1) <= 5 {
			mu.Lock()
			failed = append(failed, fmt.Sprintf(format, args...))
			mu.Unlock()
		}
	}
	// checkDone checks the gauges once a shutdown has completed; events
	// recorded meanwhile are dropped after_shutdown and change no gauge.
	checkDone := func(who string) {
		if g := gauges(eb.Stats()); g != "" {
			fail("seed %d: after %s returned:%s", seed, who, g)
		}
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	shortCtx := func(r *rand.Rand) (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), time.Duration(r.IntN(2000))*time.Microsecond)
	}

	var total, progress atomic.Int64
	ending := func() bool { return progress.Load() >= total.Load()*9/10 }
	var started sync.WaitGroup // every goroutine has added its ops to total
	started.Add(chaosGoroutines)
	for g := range chaosGoroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			var watches []apiwatch.Interface
			defer func() {
				for _, w := range watches {
					w.Stop()
				}
			}()
			var last record.Stats
			ops := 20 + r.IntN(20)
			total.Add(int64(ops))
			started.Done()
			started.Wait()
			for op := range ops {
				obj := pod("ns", fmt.Sprint("p", r.IntN(16)))
				reason := fmt.Sprint("R", r.IntN(4))
				switch n := r.IntN(100); {
				case n < 25:
					for range 1 + r.IntN(4) { // a burst
						rec.Eventf(pod("ns", fmt.Sprint("p", r.IntN(16))), v1.EventTypeNormal, reason, "message %d", r.IntN(3))
					}
				case n < 35:
					rec.Event(obj, v1.EventTypeWarning, reason, "m")
				case n < 45:
					rec.AnnotatedEventf(obj, map[string]string{"k": "v"}, v1.EventTypeNormal, reason, "annotated %d", op)
				case n < 46:
					rec.Event(nil, v1.EventTypeNormal, reason, "no object") // dropped invalid
				case n < 47:
					rec.Event(obj, v1.EventTypeNormal, "Panic", "the key function panics on it")
				case n < 48 || (n >= 95 && ending()):
					// More of them among the last ops: some reach the
					// sinks just before a shutdown.
					rec.Event(obj, v1.EventTypeNormal, "Slow", "the key function waits on it")
				case n < 50:
					ctx, cancel := shortCtx(r)
					_ = eb.Flush(ctx)
					cancel()
				case n < 56:
					s := eb.Stats()
					if s.Queued < 0 || s.Pending < 0 || s.InFlight < 0 {
						fail("seed %d: negative gauge: %+v", seed, s)
					}
					// Counters never go back.
					if s.Recorded < last.Recorded || s.Broadcast < last.Broadcast || s.Offered < last.Offered ||
						s.Created < last.Created || s.Patched < last.Patched || s.Coalesced < last.Coalesced ||
						s.Abandoned < last.Abandoned || s.Filtered < last.Filtered || s.Dropped.Total() < last.Dropped.Total() {
						fail("seed %d: a counter went back: %+v then %+v", seed, last, s)
					}
					last = s
				case n < 70:
					// Once shutdowns may come, a key function that waits
					// goes on waiting until the round ends: a user's
					// function stuck through Shutdown.
					cs.letThrough(1+r.IntN(4), !ending())
				case n < 74 && g%4 == 0 && len(watches) == 0:
					switch r.IntN(3) {
					case 0:
						watches = append(watches, eb.StartRecordingToSink(sinktest.New()))
					case 1:
						watches = append(watches, eb.StartRecordingToSink(cs.slow()))
					default:
						watches = append(watches, eb.StartEventWatcher(func(*v1.Event) {}))
					}
				case n < 76:
					watches = append(watches, eb.StartLogging(func(string, ...interface{}) {}))
				case n < 82:
					if len(watches) > 0 {
						i := r.IntN(len(watches))
						watches[i].Stop()
						watches = append(watches[:i], watches[i+1:]...)
					}
				case n < 90 && ending():
					// Shutdowns come among the last tenth of the ops, so
					// that most of the chaos runs against a live
					// broadcaster.
					if r.IntN(2) == 0 {
						ctx, cancel := shortCtx(r)
						err := eb.ShutdownWithContext(ctx)
						cancel()
						if shutdownComplete(err) {
							checkDone("ShutdownWithContext")
						}
					} else {
						// Shutdown returns after the grace period even
						// while another call's shutdown still runs: ask
						// whether it is over.
						eb.Shutdown()
						if shutdownComplete(eb.ShutdownWithContext(cancelled)) {
							checkDone("Shutdown")
						}
					}
				default:
					rec.Eventf(obj, v1.EventTypeNormal, "Other", "other %d", r.IntN(50))
				}
				progress.Add(1)
			}
		}()
	}
	wg.Wait()

	// Shut down with a short deadline, unless a goroutine did already,
	// then wait for the shutdown to be over.
	eb.Shutdown()
	if err := eb.ShutdownWithContext(context.Background()); !shutdownComplete(err) {
		t.Fatalf("ShutdownWithContext without a deadline returned %v", err)
	}
	s := eb.Stats()
	if g := gauges(s); g != "" {
		fail("seed %d: after the final Shutdown returned:%s; stats %+v", seed, g, s)
	}
	if u := s.Unaccounted(); u != 0 {
		fail("seed %d: %d events in no bucket after the final Shutdown; stats %+v", seed, u, s)
	}
	if s.Recorded == 0 || s.Offered == 0 {
		fail("seed %d: the round recorded nothing: %+v", seed, s)
	}
	// The key functions still waiting return: what they return is
	// counted once (it was counted as abandoned).
	releaseKeys()
	if err := goleak.Find(base); err != nil {
		t.Errorf("seed %d: goroutines left after Shutdown: %v", seed, err)
	}
	s = eb.Stats()
	if g := gauges(s); g != "" || s.Unaccounted() != 0 {
		fail("seed %d: after the key functions returned:%s, %d events in no bucket; stats %+v", seed, g, s.Unaccounted(), s)
	}
	for _, f := range failed {
		t.Error(f)
	}
	if n := failures.Load(); n > int64(len(failed)) {
		t.Errorf("... and %d more failures", n-int64(len(failed)))
	}
	if t.Failed() {
		return
	}
	t.Logf("seed %d: %+v", seed, s)
}

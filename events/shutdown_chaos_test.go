package events_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/internal/testing/replay"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// gatedSink is a memSink whose every call waits until a goroutine lets one
// through (gate) or the call's context ends.
type gatedSink struct {
	*memSink
	gate chan struct{}
}

func (s *gatedSink) wait(ctx context.Context) error {
	select {
	case <-s.gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *gatedSink) Create(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	return s.memSink.Create(ctx, ev)
}

func (s *gatedSink) Patch(ctx context.Context, ev *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	return s.memSink.Patch(ctx, ev, data)
}

// letThrough lets up to n calls through, without waiting.
func (s *gatedSink) letThrough(n int) {
	for range n {
		select {
		case s.gate <- struct{}{}:
		default:
			return
		}
	}
}

// chaosGauges reports the gauges of s that are not zero.
func chaosGauges(s events.Stats) string {
	var b strings.Builder
	for _, g := range []struct {
		name string
		v    int64
	}{{"Queued", s.Queued}, {"Pending", s.Pending}, {"InFlight", s.InFlight}} {
		if g.v != 0 {
			fmt.Fprintf(&b, " %s=%d", g.name, g.v)
		}
	}
	return b.String()
}

// TestStatsAfterShutdownUnderChaos is record's test of the same name for
// events.k8s.io/v1: 64 goroutines record, flush and shut down with short
// deadlines, read Stats, stop and restart recording to the (slow) sink, and
// start and stop event watchers and loggers. Whenever a Shutdown has
// returned complete every gauge is zero; after the final one, every
// recorded event is in exactly one bucket and nothing is left running.
func TestStatsAfterShutdownUnderChaos(t *testing.T) {
	rounds := 4
	if testing.Short() {
		rounds = 2
	}
	for seed := range uint64(rounds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { eventsChaosRound(t, seed) })
	}
}

func eventsChaosRound(t *testing.T, seed uint64) {
	replay.OnFailure(t, "seed %d", seed)
	const goroutines = 64
	base := goleak.IgnoreCurrent()
	gs := &gatedSink{memSink: newMemSink(), gate: make(chan struct{}, 8)}
	b := events.NewBroadcaster(gs,
		events.WithBroadcasterOptions(record.WithLogger(klogDiscard()),
			record.WithSinkOptions(sink.Options{Clock: clocktesting.NewFakeClock(time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)), QPS: sink.Unlimited}),
			record.WithQueueLength(1000),
			record.WithShutdownGracePeriod(2*time.Millisecond)),
	)
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec := b.NewRecorder(scheme.Scheme, "example.com/chaos")
	arec := rec.(events.AnnotatedEventRecorder)

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
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	complete := func(err error) bool { return err == nil || !strings.Contains(err.Error(), "in progress") }
	checkDone := func(who string) {
		if g := chaosGauges(b.Stats()); g != "" {
			fail("seed %d: after %s returned:%s", seed, who, g)
		}
	}
	shortCtx := func(r *rand.Rand) (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), time.Duration(r.IntN(2000))*time.Microsecond)
	}
	var total, progress atomic.Int64
	ending := func() bool { return progress.Load() >= total.Load()*9/10 }
	var started sync.WaitGroup
	started.Add(goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			var stops []func()
			defer func() {
				for _, stop := range stops {
					stop()
				}
			}()
			ops := 20 + r.IntN(20)
			total.Add(int64(ops))
			started.Done()
			started.Wait()
			for op := range ops {
				obj := pod("ns", fmt.Sprint("p", r.IntN(16)))
				reason := fmt.Sprint("R", r.IntN(4))
				switch n := r.IntN(100); {
				case n < 30:
					for range 1 + r.IntN(4) { // a burst, repeating series
						rec.Eventf(pod("ns", fmt.Sprint("p", r.IntN(16))), nil, v1.EventTypeNormal, reason, "Act", "note %d", r.IntN(3))
					}
				case n < 40:
					arec.AnnotatedEventf(obj, nil, map[string]string{"k": "v"}, v1.EventTypeWarning, reason, "Act", "annotated %d", op)
				case n < 42:
					rec.Eventf(nil, nil, v1.EventTypeNormal, reason, "Act", "no object") // dropped invalid
				case n < 47:
					ctx, cancel := shortCtx(r)
					_ = b.Flush(ctx)
					cancel()
				case n < 53:
					s := b.Stats()
					if s.Queued < 0 || s.Pending < 0 || s.InFlight < 0 {
						fail("seed %d: negative gauge: %+v", seed, s)
					}
				case n < 60:
					gs.letThrough(1 + r.IntN(4))
				case n < 64 && g%4 == 0 && len(stops) == 0:
					switch r.IntN(4) {
					case 0:
						// Restart recording with a context of its own
						// (refused while the sink records).
						ctx, cancel := context.WithCancel(context.Background())
						if b.StartRecordingToSinkWithContext(ctx) != nil {
							cancel()
						} else {
							stops = append(stops, cancel)
						}
					case 1:
						stopCh := make(chan struct{})
						b.StartRecordingToSink(stopCh)
						stops = append(stops, func() { close(stopCh) })
					case 2:
						if stop, err := b.StartEventWatcher(func(runtime.Object) {}); err == nil {
							stops = append(stops, stop)
						}
					default:
						if stop, err := b.StartLogging(klogDiscard()); err == nil {
							stops = append(stops, stop)
						}
					}
				case n < 70:
					if len(stops) > 0 {
						i := r.IntN(len(stops))
						stops[i]()
						stops = append(stops[:i], stops[i+1:]...)
					}
				case n < 78 && ending():
					if r.IntN(2) == 0 {
						ctx, cancel := shortCtx(r)
						err := b.ShutdownWithContext(ctx)
						cancel()
						if complete(err) {
							checkDone("ShutdownWithContext")
						}
					} else {
						b.Shutdown()
						if complete(b.ShutdownWithContext(cancelled)) {
							checkDone("Shutdown")
						}
					}
				default:
					rec.Eventf(obj, nil, v1.EventTypeNormal, "Other", "Act", "other %d", r.IntN(50))
				}
				progress.Add(1)
			}
		}()
	}
	wg.Wait()

	b.Shutdown()
	if err := b.ShutdownWithContext(context.Background()); !complete(err) {
		t.Fatalf("ShutdownWithContext without a deadline returned %v", err)
	}
	s := b.Stats()
	if g := chaosGauges(s); g != "" {
		fail("seed %d: after the final Shutdown returned:%s; stats %+v", seed, g, s)
	}
	if u := s.Unaccounted(); u != 0 {
		fail("seed %d: %d events in no bucket after the final Shutdown; stats %+v", seed, u, s)
	}
	if s.Recorded == 0 || s.Offered == 0 {
		fail("seed %d: the round recorded nothing: %+v", seed, s)
	}
	for _, f := range failed {
		t.Error(f)
	}
	if n := failures.Load(); n > int64(len(failed)) {
		t.Errorf("... and %d more failures", n-int64(len(failed)))
	}
	if err := goleak.Find(base); err != nil {
		t.Errorf("seed %d: goroutines left after Shutdown: %v", seed, err)
	}
	if !t.Failed() {
		t.Logf("seed %d: %+v", seed, s)
	}
}

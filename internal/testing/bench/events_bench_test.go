package bench_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	cgevents "k8s.io/client-go/tools/events"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/internal/testing/bench"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// The Events* benchmarks compare herald's events package with client-go's
// tools/events (events.k8s.io/v1), each as sub-benchmarks
// .../impl=herald and .../impl=client-go in the same process, recording to
// the same bench.EventsSink (1 ms per call) with the same inputs:
//
//   - EventsEventf: the caller's cost of one Eventf, with no sink started
//     and with one started.
//   - EventsStorm: a crash-loop storm, 100 objects × 20 identical events
//     spread evenly over 2 s of real time: writes, and how stale the stored
//     series counts are at the end, 3 s later and (herald) after Flush.
//   - EventsShutdown: 3,000 distinct events, then shut down at once.
//   - EventsBurstGoroutines: goroutines alive during a 10,000-event burst
//     and left after Shutdown.
//
// client-go's tools/events has no Flush and its loops run until the
// context given to StartRecordingToSinkWithContext ends: after each
// client-go run the context is cancelled and the benchmark waits for its
// goroutines to end (release), so that none of them runs during the next
// measurement.

const (
	evController   = "bench.heraldk8s.io/controller"
	evSinkLatency  = time.Millisecond
	evReleaseWait  = 30 * time.Second // for client-go's goroutines to end after cancel
	evShutdownWait = 60 * time.Second // herald's ShutdownWithContext
)

// evThroughput is herald's configuration of the storm, shutdown and burst
// scenarios: as the Delivery scenarios', the write limit off and enough
// workers for a 1 ms sink.
var evThroughput = options[record.BroadcasterOption]{}.
	with(fmt.Sprintf("record.WithSinkOptions(sink.Options{Workers: %d, QPS: sink.Unlimited})", workers), record.WithSinkOptions(sink.Options{Workers: workers, QPS: sink.Unlimited})).
	with(fmt.Sprintf("record.WithQueueLength(%d)", queueLength), record.WithQueueLength(queueLength))

// evPipeline is one events.k8s.io/v1 implementation under test.
type evPipeline struct {
	impl   string
	logs   *bench.LogCounter
	herald []record.BroadcasterOption

	rec      cgevents.EventRecorder
	heraldEB events.EventBroadcaster
	clientEB cgevents.EventBroadcaster
	cancel   context.CancelFunc
	before   int // goroutines before start
}

// start builds the broadcaster writing to s and a recorder; with record
// false, recording to the sink is not started.
func (p *evPipeline) start(b testing.TB, s cgevents.EventSink, recording bool) {
	if p.logs != nil {
		p.logs.Reset()
	}
	p.before = runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	var err error
	if p.impl == "herald" {
		p.heraldEB = events.NewBroadcaster(s, events.WithBroadcasterOptions(p.herald...))
		if recording {
			err = p.heraldEB.StartRecordingToSinkWithContext(ctx)
		}
		p.rec = p.heraldEB.NewRecorder(scheme.Scheme, evController)
	} else {
		p.clientEB = cgevents.NewBroadcaster(s)
		if recording {
			err = p.clientEB.StartRecordingToSinkWithContext(ctx)
		}
		p.rec = p.clientEB.NewRecorder(scheme.Scheme, evController)
	}
	if err != nil {
		b.Fatalf("%s: StartRecordingToSinkWithContext: %v", p.impl, err)
	}
}

// eventf records the benchmarks' event about obj.
func (p *evPipeline) eventf(obj kruntime.Object) {
	p.rec.Eventf(obj, nil, v1.EventTypeWarning, "InvalidSpec", "Sync", "key %q: %d", "mode", 3)
}

// flush waits (herald) until everything recorded is written, for max at
// most; client-go cannot be asked, so its sink is observed until stored
// reaches want or it has seen no new write for quiet.
func (p *evPipeline) flush(s *bench.EventsSink, want int64, max time.Duration) {
	if p.impl == "herald" {
		ctx, cancel := context.WithTimeout(context.Background(), max)
		_ = p.heraldEB.Flush(ctx)
		cancel()
		return
	}
	start := time.Now()
	bench.Observe(start, start, func() int64 { return int64(s.Stored()) }, want, nil, quiet, max)
}

// shutdown shuts the broadcaster down as its users do: herald's
// ShutdownWithContext (60 s); client-go's Shutdown, which neither cancels
// the sink's context nor stops the series loops (see release).
func (p *evPipeline) shutdown() time.Duration {
	start := time.Now()
	if p.impl == "herald" {
		ctx, cancel := context.WithTimeout(context.Background(), evShutdownWait)
		_ = p.heraldEB.ShutdownWithContext(ctx)
		cancel()
	} else {
		p.clientEB.Shutdown()
	}
	return time.Since(start)
}

// release cancels the recording context and waits for the goroutines the
// pipeline started to end (client-go's series loops, context waiter and
// per-event goroutines), so that they do not run during the next
// measurement. It returns how many are still there after evReleaseWait.
func (p *evPipeline) release() int {
	p.cancel()
	return bench.Leaked(p.before, evReleaseWait)
}

// dropped returns the events the implementation reported as given up:
// herald's counted drops and abandoned events; client-go's drop logs.
func (p *evPipeline) dropped() int64 {
	if p.impl == "herald" {
		s := p.heraldEB.Stats()
		return s.Dropped.Total() + s.Abandoned
	}
	return p.logs.Drops()
}

// runEvents runs one scenario per implementation, herald first, each with
// its klog output captured, and reports the mean of each metric over b.N
// runs.
func runEvents(b *testing.B, note string, herald options[record.BroadcasterOption], run func(*testing.B, *evPipeline) metrics) {
	for _, impl := range []string{"herald", "client-go"} {
		b.Run("impl="+impl, func(b *testing.B) {
			if impl == "herald" && note != "" {
				b.Logf("benchnote: %s; herald options: %v; client-go: defaults.", note, herald)
			}
			logs := bench.CaptureKlog()
			defer logs.Restore()
			var order []string
			sums := map[string]float64{}
			for range b.N {
				p := &evPipeline{impl: impl, logs: logs, herald: herald.list}
				for _, m := range run(b, p) {
					if _, ok := sums[m.unit]; !ok {
						order = append(order, m.unit)
					}
					sums[m.unit] += m.value
				}
				if n := p.release(); n > 0 {
					b.Logf("%s: %d goroutines still running %v after the context was cancelled", impl, n, evReleaseWait)
				}
			}
			for _, unit := range order {
				b.ReportMetric(sums[unit]/float64(b.N), unit)
			}
		})
	}
}

// argRecorder stands in for a recorder to measure what the caller's
// arguments cost: it keeps them, so they escape, as they do through any
// EventRecorder.
type argRecorder struct{ args []interface{} }

func (r *argRecorder) Eventf(_, _ kruntime.Object, _, _, _, _ string, args ...interface{}) {
	r.args = args
}

// argAllocs returns the allocations of one call of the benchmarks' Eventf
// that only keeps its arguments.
func argAllocs(obj kruntime.Object) float64 {
	r := &argRecorder{}
	var rec interface {
		Eventf(regarding, related kruntime.Object, eventtype, reason, action, note string, args ...interface{})
	} = r
	return testing.AllocsPerRun(1000, func() {
		rec.Eventf(obj, nil, v1.EventTypeWarning, "InvalidSpec", "Sync", "key %q: %d", "mode", 3)
	})
}

// BenchmarkEventsEventf measures the caller's cost of one
// Eventf(pod, nil, "Warning", "InvalidSpec", "Sync", "key %q: %d", "mode", 3)
// with default options: sink=none with no sink started, sink=started with
// recording to the 1 ms sink started (the same event each time: one
// series). client-go's Eventf starts a goroutine that queues the event, and
// its pipeline one more per event; they run on the other cores, so ns/op is
// the caller's time with that work competing, and allocs/op counts every
// allocation made during the loop, the pipeline's included. arg-allocs/op
// is what the caller's arguments cost by themselves (the variadic slice).
func BenchmarkEventsEventf(b *testing.B) {
	obj := bench.Pod(0)
	args := argAllocs(obj)
	for _, recording := range []bool{false, true} {
		name := "sink=none"
		if recording {
			name = "sink=started"
		}
		b.Run(name, func(b *testing.B) {
			for _, impl := range []string{"herald", "client-go"} {
				b.Run("impl="+impl, func(b *testing.B) {
					logs := bench.CaptureKlog()
					defer logs.Restore()
					p := &evPipeline{impl: impl, logs: logs}
					p.start(b, bench.NewEventsSink(evSinkLatency), recording)
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						p.eventf(obj)
					}
					b.StopTimer()
					var dropped int64
					if impl == "herald" {
						dropped = p.heraldEB.Stats().Dropped.Total()
					}
					p.shutdown()
					if n := p.release(); n > 0 {
						b.Logf("%s: %d goroutines still running %v after the context was cancelled", impl, n, evReleaseWait)
					}
					b.ReportMetric(args, "arg-allocs/op")
					if impl == "herald" {
						b.ReportMetric(float64(dropped)/float64(b.N), "dropped/op")
					}
				})
			}
		})
	}
}

// BenchmarkEventsStorm is a crash-loop storm: 100 objects × 20 identical
// events, spread evenly over 2 s of real time (one Eventf per millisecond,
// round robin, so each object repeats every 100 ms), into the 1 ms sink.
// It reports the writes (Create + Patch) and how stale the stored counts
// are: the sum over the objects of (occurrences − stored series count) at
// the end of the storm, 3 s later, and (herald) after Flush; and the
// occurrences counted past those recorded (over-counted) at the end.
func BenchmarkEventsStorm(b *testing.B) {
	const objects, repeats = 100, 20
	const storm, after = 2 * time.Second, 3 * time.Second
	note := fmt.Sprintf("EventsStorm: %d objects × %d identical events over %v of real time, 1 ms sink; "+
		"stale = Σ(occurrences − stored count); client-go writes a series' count again only at its 30-minute refresh or 6–12 idle minutes later",
		objects, repeats, storm)
	runEvents(b, note, evThroughput, func(b *testing.B, p *evPipeline) metrics {
		objs := bench.Pods(objects)
		s := bench.NewEventsSink(evSinkLatency)
		p.start(b, s, true)
		// stale counts occurrences not yet in the stored counts; over,
		// stored counts past the occurrences (which stale reads as 0).
		counts := func(sign int64) float64 {
			stored := s.Counts()
			var n int64
			for _, o := range objs {
				n += max(0, sign*(repeats-stored[bench.Namespace+"/"+o.Name]))
			}
			return float64(n)
		}
		stale := func() float64 { return counts(1) }
		step := storm / time.Duration(objects*repeats)
		start := time.Now()
		for k := range repeats {
			for i, o := range objs {
				if d := time.Until(start.Add(time.Duration(k*objects+i) * step)); d > 0 {
					time.Sleep(d)
				}
				p.eventf(o)
			}
		}
		end := time.Now()
		var m metrics
		m.add("recorded", objects*repeats)
		m.add("stale-at-end", stale())
		time.Sleep(time.Until(end.Add(after)))
		m.add("stale-after-3s", stale())
		if p.impl == "herald" {
			p.flush(s, 0, 30*time.Second)
			m.add("stale-after-flush", stale())
		}
		m.add("over-counted", counts(-1))
		m.add("writes", float64(s.Writes()))
		m.add("creates", float64(s.Creates()))
		m.add("patches", float64(s.Patches()))
		p.shutdown()
		return m
	})
}

// BenchmarkEventsShutdown records one event for each of 3,000 objects and
// shuts down at once: herald with ShutdownWithContext (60 s), client-go
// with Shutdown and then the cancel of the recording context
// (controller-runtime's order). It then waits until the sink has seen no
// new write for 2 s and counts what reached it.
func BenchmarkEventsShutdown(b *testing.B) {
	const n = 3000
	note := fmt.Sprintf("EventsShutdown: %d distinct events into the 1 ms sink, then shutdown at once "+
		"(client-go: Shutdown, then cancel of the recording context); shutdown-ms includes the cancel", n)
	runEvents(b, note, evThroughput, func(b *testing.B, p *evPipeline) metrics {
		objs := bench.Pods(n)
		s := bench.NewEventsSink(evSinkLatency)
		p.start(b, s, true)
		for _, o := range objs {
			p.eventf(o)
		}
		start := time.Now()
		p.shutdown()
		p.cancel()
		took := time.Since(start)
		if p.impl != "herald" {
			start = time.Now()
			bench.Observe(start, start, func() int64 { return int64(s.Stored()) }, n, nil, quiet, maxObserve)
		}
		written := int64(s.Stored())
		dropped := p.dropped()
		var abandoned int64
		if p.impl == "herald" {
			abandoned = p.heraldEB.Stats().Abandoned
		}
		var m metrics
		m.add("recorded", n)
		m.add("written", float64(written))
		m.add("dropped", float64(dropped))
		m.add("abandoned", float64(abandoned))
		m.add("lost", float64(n-written-dropped))
		m.add("shutdown-ms", float64(took)/float64(time.Millisecond))
		return m
	})
}

// BenchmarkEventsBurstGoroutines records one event for each of 10,000
// objects in one burst into the 1 ms sink, samples the number of
// goroutines every millisecond until the burst is written (herald: Flush;
// client-go: until its sink has seen no new write for 2 s), and counts the
// goroutines left 2 s after Shutdown (client-go: Shutdown alone, without
// the cancel of the recording context, which release does afterwards).
func BenchmarkEventsBurstGoroutines(b *testing.B) {
	const n = 10000
	note := fmt.Sprintf("EventsBurstGoroutines: %d distinct events in one burst into the 1 ms sink; goroutines-peak = "+
		"most goroutines alive (sampled every 1 ms) minus those before the broadcaster was made; goroutines-leaked = left 2 s after Shutdown "+
		"(client-go's recording context not yet cancelled)", n)
	runEvents(b, note, evThroughput, func(b *testing.B, p *evPipeline) metrics {
		objs := bench.Pods(n)
		s := bench.NewEventsSink(evSinkLatency)
		p.start(b, s, true)
		var peak atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for {
				if g := int64(runtime.NumGoroutine()); g > peak.Load() {
					peak.Store(g)
				}
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}()
		for _, o := range objs {
			p.eventf(o)
		}
		p.flush(s, n, maxObserve)
		close(stop)
		wg.Wait()
		delivered := s.Stored()
		p.shutdown()
		leaked := bench.Leaked(p.before, 2*time.Second)
		var m metrics
		m.add("recorded", n)
		m.add("delivered", float64(delivered))
		m.add("goroutines-peak", float64(peak.Load()-1-int64(p.before))) // minus the sampler
		m.add("goroutines-leaked", float64(leaked))
		return m
	})
}

package bench_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/scheme"
	clientrecord "k8s.io/client-go/tools/record"

	"github.com/heraldk8s/herald/internal/testing/bench"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// BenchmarkMemory records one event for each of 1,000,000 distinct objects,
// in batches of 10,000 as a busy controller would, into a sink that returns
// at once, and reports the live heap after 100,000 and after 1,000,000
// events (heap-MB-100k, heap-MB-1M). Every cache and queue being bounded,
// the two must be about equal (DESIGN contract 6). herald flushes after each
// batch; client-go has no Flush, so it gets a 20 ms pause instead.
func BenchmarkMemory(b *testing.B) {
	const total, batch = 1_000_000, 10_000
	for _, impl := range []string{"herald", "client-go"} {
		b.Run("objects=1M/impl="+impl, func(b *testing.B) {
			logs := bench.CaptureKlog()
			defer logs.Restore()
			for range b.N {
				s := &bench.NopSink{}
				var rec clientrecord.EventRecorder
				var flush func()
				var stop func()
				if impl == "herald" {
					eb := record.NewBroadcaster(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited, Workers: 8}))
					eb.StartRecordingToSink(s)
					rec = eb.NewRecorder(scheme.Scheme, bench.Source)
					flush = func() { _ = eb.Flush(context.Background()) }
					stop = eb.Shutdown
				} else {
					eb := clientrecord.NewBroadcaster()
					eb.StartRecordingToSink(s)
					rec = eb.NewRecorder(scheme.Scheme, bench.Source)
					flush = func() { time.Sleep(20 * time.Millisecond) }
					stop = eb.Shutdown
				}
				var at100k float64
				for i := 0; i < total; i += batch {
					for j := i; j < i+batch; j++ {
						rec.Eventf(bench.Pod(j), "Warning", "InvalidSpec", "key %q: %d", "mode", 3)
					}
					flush()
					if i+batch == 100_000 {
						at100k = liveHeapMB()
					}
				}
				at1M := liveHeapMB()
				stop()
				b.ReportMetric(at100k, "heap-MB-100k")
				b.ReportMetric(at1M, "heap-MB-1M")
			}
		})
	}
}

func liveHeapMB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

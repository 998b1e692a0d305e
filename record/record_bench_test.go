package record_test

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	clientrecord "k8s.io/client-go/tools/record"

	"github.com/heraldk8s/herald/internal/testing/bench"
	"github.com/heraldk8s/herald/record"
)

// The Eventf benchmarks measure what a reconcile loop pays for one
//
//	recorder.Eventf(pod, "Warning", "InvalidSpec", "key %q: %d", "mode", 3)
//
// with herald and with client-go v0.37.2's tools/record, each with its
// default options and a sink watcher started on a sink that returns at once
// (bench.NopSink), so that only the caller's cost and the CPU the pipeline
// behind it takes are measured. Both log through klog.Background(), whose
// output bench.CaptureKlog formats and discards.
//
// The same event, recorded in a tight loop, outruns either pipeline: the
// broadcaster's incoming queue (1000) fills up and further calls take the
// drop path, which is part of the caller's cost (client-go logs each drop
// with the whole event; herald counts it and logs at a bounded rate).
// "dropped/op" reports the share of calls that took that drop path (herald:
// Stats().Dropped.QueueFull; client-go, which counts nothing: its "too many
// queued events" error logs). Drops further down (a full watcher channel)
// are not the caller's cost and are not reported here.

// benchEventf is the call both implementations are measured on.
func benchEventf(rec clientrecord.EventRecorder, obj *v1.Pod) {
	rec.Eventf(obj, "Warning", "InvalidSpec", "key %q: %d", "mode", 3)
}

func BenchmarkEventf(b *testing.B) { runEventfBench(b, false) }

func BenchmarkEventfParallel(b *testing.B) { runEventfBench(b, true) }

// eventfTarget is one implementation under measurement.
type eventfTarget struct {
	rec     clientrecord.EventRecorder
	dropped func() int64 // calls dropped so far at the full incoming queue
	stop    func()
}

func newEventfTarget(impl string, logs *bench.LogCounter) eventfTarget {
	switch impl {
	case "herald":
		eb := record.NewBroadcaster()
		eb.StartRecordingToSink(&bench.NopSink{})
		return eventfTarget{
			rec:     eb.NewRecorder(scheme.Scheme, bench.Source),
			dropped: func() int64 { return eb.Stats().Dropped.QueueFull },
			stop: func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_ = eb.ShutdownWithContext(ctx)
			},
		}
	default:
		eb := clientrecord.NewBroadcaster()
		eb.StartRecordingToSink(&bench.NopSink{})
		// client-go counts nothing: each drop at its incoming queue is one
		// error log.
		return eventfTarget{rec: eb.NewRecorder(scheme.Scheme, bench.Source), dropped: logs.Drops, stop: eb.Shutdown}
	}
}

func runEventfBench(b *testing.B, parallel bool) {
	obj := bench.Pod(0)
	for _, impl := range []string{"herald", "client-go"} {
		b.Run("impl="+impl, func(b *testing.B) {
			logs := bench.CaptureKlog()
			defer logs.Restore()
			t := newEventfTarget(impl, logs)
			b.ReportAllocs()
			b.ResetTimer()
			if parallel {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						benchEventf(t.rec, obj)
					}
				})
			} else {
				for range b.N {
					benchEventf(t.rec, obj)
				}
			}
			b.StopTimer()
			dropped := t.dropped()
			t.stop()
			b.ReportMetric(float64(dropped)/float64(b.N), "dropped/op")
		})
	}
}

// BenchmarkEventfBare is the caller's cost of one Eventf with nothing
// attached (no sink, no watcher): what every reconcile pays for each event.
// The target: at most 3 allocations besides the caller's arguments
// (the box of "mode" here is the caller's), and at most 0.5× client-go's
// time.
func BenchmarkEventfBare(b *testing.B) {
	obj := bench.Pod(0)
	for _, impl := range []string{"herald", "client-go"} {
		b.Run("impl="+impl, func(b *testing.B) {
			logs := bench.CaptureKlog()
			defer logs.Restore()
			var rec clientrecord.EventRecorder
			var stop func()
			if impl == "herald" {
				eb := record.NewBroadcaster()
				rec, stop = eb.NewRecorder(scheme.Scheme, bench.Source), eb.Shutdown
			} else {
				eb := clientrecord.NewBroadcaster()
				rec, stop = eb.NewRecorder(scheme.Scheme, bench.Source), eb.Shutdown
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rec.Eventf(obj, "Warning", "InvalidSpec", "key %q: %d", "mode", 3)
			}
			b.StopTimer()
			stop()
		})
	}
}

package watch_test

import (
	"strconv"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	apiwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/heraldk8s/herald/watch"
)

// broadcaster is the method set shared by herald's and apimachinery's
// Broadcaster, so one benchmark body measures both.
type broadcaster interface {
	Watch() (apiwatch.Interface, error)
	Action(apiwatch.EventType, runtime.Object) error
	ActionOrDrop(apiwatch.EventType, runtime.Object) (bool, error)
	Shutdown()
}

var impls = []struct {
	name string
	new  func(queueLength int, drop bool) broadcaster
}{
	{"herald", func(queueLength int, drop bool) broadcaster {
		behavior := watch.WaitIfChannelFull
		if drop {
			behavior = watch.DropIfChannelFull
		}
		return watch.NewLongQueueBroadcaster(queueLength, behavior)
	}},
	{"apimachinery", func(queueLength int, drop bool) broadcaster {
		behavior := apiwatch.WaitIfChannelFull
		if drop {
			behavior = apiwatch.DropIfChannelFull
		}
		return apiwatch.NewLongQueueBroadcaster(queueLength, behavior)
	}},
}

// BenchmarkActionOrDrop measures the recording hot path: many goroutines
// calling ActionOrDrop on a broadcaster set up like record's (a long queue
// of 1000, DropIfChannelFull) with one watcher that a goroutine drains.
func BenchmarkActionOrDrop(b *testing.B) {
	for _, impl := range impls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			bc := impl.new(1000, true)
			w, err := bc.Watch()
			if err != nil {
				b.Fatal(err)
			}
			drained := make(chan struct{})
			go func() {
				defer close(drained)
				for range w.ResultChan() {
				}
			}()
			obj := &num{1}
			var dropped atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var d int64
				for pb.Next() {
					if ok, _ := bc.ActionOrDrop(apiwatch.Added, obj); !ok {
						d++
					}
				}
				dropped.Add(d)
			})
			b.StopTimer()
			b.ReportMetric(float64(dropped.Load())/float64(b.N), "drops/op")
			bc.Shutdown()
			<-drained
		})
	}
}

// BenchmarkFanOut measures one producer's Action calls delivered, without
// loss (WaitIfChannelFull), to 1, 4 and 16 watchers, each drained by its own
// goroutine. One op is one event received by every watcher.
func BenchmarkFanOut(b *testing.B) {
	for _, watchers := range []int{1, 4, 16} {
		b.Run("watchers="+strconv.Itoa(watchers), func(b *testing.B) {
			for _, impl := range impls {
				b.Run("impl="+impl.name, func(b *testing.B) {
					bc := impl.new(100, false)
					done := make(chan struct{}, watchers)
					for range watchers {
						w, err := bc.Watch()
						if err != nil {
							b.Fatal(err)
						}
						go func() {
							n := 0
							for range w.ResultChan() {
								if n++; n == b.N {
									done <- struct{}{}
								}
							}
						}()
					}
					obj := &num{1}
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						if err := bc.Action(apiwatch.Added, obj); err != nil {
							b.Fatal(err)
						}
					}
					for range watchers {
						<-done
					}
					b.StopTimer()
					bc.Shutdown()
				})
			}
		})
	}
}

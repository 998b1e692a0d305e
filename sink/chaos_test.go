package sink_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2/ktesting"

	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/internal/testing/replay"
	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// Every public call of the engine at once, from many goroutines, against a
// sink that fails, panics, hangs until cancelled and answers 429, and a
// Stop in the middle: no race, no panic, no leak, and the accounting
// identity holds at every snapshot and at the end.
func TestEngineChaos(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			replay.OnFailure(t, "seed %d", seed)
			_, ctx := ktesting.NewTestContext(t)
			s := sinktest.New()
			var mu sync.Mutex
			r := rand.New(rand.NewPCG(seed, 1))
			roll := func(n int) int { mu.Lock(); defer mu.Unlock(); return r.IntN(n) }
			s.SetFault(func(ctx context.Context, _ sinktest.Op, ev *v1.Event) error {
				switch roll(12) {
				case 0:
					return apierrors.NewServiceUnavailable("busy")
				case 1:
					return apierrors.NewTooManyRequests("slow down", 1)
				case 2:
					return apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, ev.Name, fmt.Errorf("rbac"))
				case 3:
					panic("sink bug")
				case 4:
					<-ctx.Done() // hangs until the engine cancels it
					return ctx.Err()
				}
				return nil
			})
			// Odd seeds with a KeyInterval: keys wait for it, Flushes release them.
			keyInterval := time.Duration(seed%2) * 2 * time.Millisecond
			eng, err := sink.NewEngine(s, sink.WithKeyInterval(sink.Options{Workers: 4, QPS: sink.Unlimited, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, RequestTimeout: 20 * time.Millisecond}, keyInterval))
			if err != nil {
				t.Fatal(err)
			}
			eng.Start(ctx)
			var added atomic.Int64
			var wg sync.WaitGroup
			stop := make(chan struct{})
			busy := make(chan struct{}) // closed once the storm made 1000 Adds
			var busyOnce sync.Once
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						switch roll(10) {
						case 0:
							fctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
							_ = eng.Flush(fctx)
							cancel()
						case 1:
							if st := eng.Stats(); st.HeldBack < 0 || st.HeldBack > st.Pending {
								t.Errorf("held back %d of %d pending", st.HeldBack, st.Pending)
							}
						default:
							k := roll(40)
							var patch []byte
							if roll(2) == 0 {
								patch = patchFor(2)
							}
							eng.Add(fmt.Sprint("k", k), event(fmt.Sprintf("e%d-%d", k, roll(3)), 2), patch)
							if added.Add(1) == 1000 {
								busyOnce.Do(func() { close(busy) })
							}
						}
						if i == 1000 {
							return
						}
					}
				}()
			}
			<-busy // Stop in the middle of the storm
			sctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			eng.Stop(sctx)
			cancel()
			close(stop)
			wg.Wait()
			eng.Stop(context.Background()) // again: nothing more
			st := eng.Stats()
			check.Engine(t, added.Load(), st)
			if st.Pending != 0 || st.InFlight != 0 {
				t.Fatalf("after Stop: pending %d, in flight %d, want 0: %+v", st.Pending, st.InFlight, st)
			}
			if err := eng.Flush(context.Background()); err != nil {
				t.Fatalf("Flush after Stop: %v", err)
			}
		})
	}
}

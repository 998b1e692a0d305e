package record_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/internal/testing/replay"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// coalesceRun records with the given options into a sinktest sink whose
// writes fail at random (server errors and 429s, which are retried), steps
// the fake clock until everything is flushed, and returns the stats and the
// sum of the counts the sink stores.
func coalesceRun(t *testing.T, r *rand.Rand, faultRate int, corr record.CorrelatorOptions, record func(record.EventRecorder)) (record.Stats, int64) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakeClock(t0)
	s := sinktest.New()
	var mu sync.Mutex
	if faultRate > 0 {
		s.SetFault(func(ctx context.Context, _ sinktest.Op, ev *v1.Event) error {
			mu.Lock()
			x := r.IntN(faultRate)
			mu.Unlock()
			switch x {
			case 0:
				return apierrors.NewServiceUnavailable("busy")
			case 1:
				return apierrors.NewTooManyRequests("slow down", 1)
			}
			return nil
		})
	}
	eb := recordNewBroadcaster(ctx, clk, corr)
	defer eb.Shutdown()
	eb.StartRecordingToSink(s)
	rec := eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: "ctrl"})
	record(rec)
	flushStepping(t, eb, clk) // the retries wait at most MaxDelay, 1 s here
	return eb.Stats(), s.TotalCount()
}

// flushStepping flushes eb, stepping its fake clock by a second while
// writes wait on it, and fails the test after a minute.
func flushStepping(t *testing.T, eb record.EventBroadcaster, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		err := eb.Flush(fctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not flushed: %+v", eb.Stats())
		}
		clk.Step(time.Second)
	}
}

func recordNewBroadcaster(ctx context.Context, clk *clocktesting.FakeClock, corr record.CorrelatorOptions) record.EventBroadcaster {
	return record.NewBroadcaster(record.WithContext(ctx), record.WithSinkOptions(sink.Options{Clock: clk, QPS: sink.Unlimited, MaxDelay: time.Second, MaxTries: 1000}), record.WithCorrelatorOptions(corr))
}

// Issue 8's reproduction: the correlator forgets keys (LRU of 16) while the
// engine still holds their unwritten events. Every occurrence counted as
// coalesced must be in a stored count.
func TestCoalescedOccurrencesAreStored(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	st, stored := coalesceRun(t, r, 0, record.CorrelatorOptions{LRUCacheSize: 16}, func(rec record.EventRecorder) {
		for range 2 {
			for i := range 200 {
				rec.Eventf(pod("ns", fmt.Sprint("pod-", i)), v1.EventTypeWarning, "Failed", "pod %d failed", i)
			}
		}
	})
	if got := st.Created + st.Patched + st.Coalesced; stored != got || stored != 400 {
		t.Fatalf("stored counts add up to %d; Created+Patched+Coalesced = %d; stats %+v", stored, got, st)
	}
}

// Issue 28's reproduction, step by step: the answer to a write arrives
// after the correlator has forgotten its key, while a later state of the
// same event (a higher count) waits in the engine. The answer must not
// bring the forgotten key back with the server's lower count: the next
// occurrence would then be given a count the waiting write already
// carries, and one occurrence counted as written would be in no stored
// count. The sink holds every write of pod "a" until the test lets it go.
func TestAnswerAfterEvictionKeepsWaitingCounts(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakeClock(t0)
	s := sinktest.New()
	gate := make(chan struct{})
	s.SetFault(func(ctx context.Context, _ sinktest.Op, ev *v1.Event) error {
		if ev.InvolvedObject.Name != "a" {
			return nil
		}
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	eb := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{LRUCacheSize: 2, DisableSpamFilter: true}),
		record.WithSinkOptions(sink.Options{Clock: clk, QPS: sink.Unlimited, MaxDelay: time.Second, RequestTimeout: 10 * time.Minute}))
	defer eb.Shutdown()
	eb.StartRecordingToSink(s)
	rec := eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: "ctrl"})
	waitStats := func(what string, ok func(record.Stats) bool) {
		t.Helper()
		check.Eventually(t, what, func() error {
			st := eb.Stats()
			return check.Errorf(ok(st), "stats %+v", st)
		})
	}
	a := func() { rec.Eventf(pod("ns", "a"), v1.EventTypeWarning, "Failed", "m") }

	for i := range 4 { // successes open the engine's window of writes under way
		rec.Eventf(pod("ns", fmt.Sprint("w", i)), v1.EventTypeWarning, "Failed", "m")
	}
	flushStepping(t, eb, clk)

	a() // its Create is held by the sink
	waitStats("a's create under way", func(st record.Stats) bool { return st.InFlight == 1 })
	a() // count 2 of the same event: a patch waiting behind the create
	rec.Eventf(pod("ns", "b"), v1.EventTypeWarning, "Failed", "m")
	rec.Eventf(pod("ns", "c"), v1.EventTypeWarning, "Failed", "m") // the LRU of 2 forgets a
	waitStats("b and c written, a's patch waiting", func(st record.Stats) bool {
		return st.Created == 6 && st.InFlight == 1 && st.Pending == 1
	})
	gate <- struct{}{} // the create is stored; its answer (count 1) arrives after a was forgotten
	waitStats("a's create written, its patch under way", func(st record.Stats) bool {
		return st.Created == 7 && st.InFlight == 1 && st.Pending == 0
	})
	a() // the third occurrence, while the patch (count 2) is under way
	waitStats("the third occurrence waiting", func(st record.Stats) bool { return st.Pending == 1 })
	close(gate)
	flushStepping(t, eb, clk)

	st := eb.Stats()
	if got := st.Created + st.Patched + st.Coalesced; s.TotalCount() != got || got != 9 {
		t.Fatalf("stored counts add up to %d; Created+Patched+Coalesced = %d, want 9; stats %+v",
			s.TotalCount(), got, st)
	}
	check.Settled(t, st)
}

// The invariant as a property: whatever the LRU size, the reuse of keys,
// the messages and the sink's transient faults, after Flush the counts
// stored add up to Created + Patched + Coalesced, and every recorded event
// is in one bucket. The spam filter is off: the occurrences it filters are
// carried by a later write's count, by design (see Stats.Filtered).
func TestCoalescingPropertyRandom(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 99))
			lru := 2 + r.IntN(64)
			objects := 1 + r.IntN(150)
			reasons := 1 + r.IntN(3)
			messages := 1 + r.IntN(12) // past 10 distinct ones, events are combined
			n := 100 + r.IntN(500)
			faultRate := []int{0, 3, 6, 20}[r.IntN(4)]
			corr := record.CorrelatorOptions{LRUCacheSize: lru, DisableSpamFilter: true}
			replay.OnFailure(t, "lru %d, objects %d, reasons %d, messages %d, events %d, faults 1/%d", lru, objects, reasons, messages, n, faultRate)
			rr := rand.New(rand.NewPCG(seed, 7))
			st, stored := coalesceRun(t, r, faultRate, corr, func(rec record.EventRecorder) {
				for range n {
					o, re, m := rr.IntN(objects), rr.IntN(reasons), rr.IntN(messages)
					rec.Eventf(pod("ns", fmt.Sprint("p", o)), v1.EventTypeWarning, fmt.Sprint("R", re), "message %d", m)
				}
			})
			t.Logf("lru %d objects %d reasons %d messages %d events %d faults 1/%d: %+v", lru, objects, reasons, messages, n, faultRate, st)
			if got := st.Created + st.Patched + st.Coalesced; stored != got {
				t.Fatalf("stored counts add up to %d; Created+Patched+Coalesced = %d", stored, got)
			}
			if st.Recorded != int64(n) || st.Dropped.Total() != 0 || st.Abandoned != 0 {
				t.Fatalf("recorded %d of %d, dropped %d, abandoned %d", st.Recorded, n, st.Dropped.Total(), st.Abandoned)
			}
			check.Settled(t, st)
		})
	}
}

// A Flush that gives up leaves nothing on the pending writes: 200 Flushes
// timing out while 2,000 writes wait for a server that is down.
func TestTimedOutFlushesKeepNothing(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	s := sinktest.New()
	s.SetFault(func(context.Context, sinktest.Op, *v1.Event) error {
		return apierrors.NewServiceUnavailable("down")
	})
	clk := clocktesting.NewFakeClock(t0) // never stepped: no probe after the first failures
	eb := record.NewBroadcaster(record.WithContext(ctx), record.WithSinkOptions(sink.Options{Clock: clk, QPS: sink.Unlimited}))
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = eb.ShutdownWithContext(sctx)
	}()
	eb.StartRecordingToSink(s)
	rec := eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: "ctrl"})
	for i := range 2000 {
		rec.Eventf(pod("ns", fmt.Sprint("p", i)), v1.EventTypeWarning, "Failed", "m")
	}
	check.Eventually(t, "the events to be pending", func() error {
		st := eb.Stats()
		return check.Errorf(st.Pending >= 1990, "pending %d, want at least 1990; stats %+v", st.Pending, st)
	})
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	for range 200 {
		fctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		if err := eb.Flush(fctx); err == nil {
			t.Fatal("Flush returned nil with the server down")
		}
		cancel()
	}
	if grew := int64(heap()) - int64(before); grew > 2<<20 {
		t.Fatalf("200 timed-out Flushes kept %d KB", grew>>10)
	}
}

// Stats shows why events are late: the engine's view of the server, the
// events it holds back, and the age of the oldest.
func TestStatsShowServerState(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	s := sinktest.New()
	var down atomic.Bool
	down.Store(true)
	s.SetFault(func(context.Context, sinktest.Op, *v1.Event) error {
		if down.Load() {
			return apierrors.NewServiceUnavailable("down")
		}
		return nil
	})
	clk := clocktesting.NewFakeClock(t0)
	eb := record.NewBroadcaster(record.WithContext(ctx), record.WithSinkOptions(sink.Options{Clock: clk, QPS: sink.Unlimited, MaxDelay: time.Second}))
	defer eb.Shutdown()
	eb.StartRecordingToSink(s)
	rec := eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: "ctrl"})
	for i := range 5 {
		rec.Eventf(pod("ns", fmt.Sprint("p", i)), v1.EventTypeWarning, "Failed", "m")
	}
	check.Eventually(t, "the server to be seen down", func() error {
		st := eb.Stats()
		return check.Errorf(st.Server == sink.ServerProbing && st.Pending == 5, "server %v, pending %d, want probing and 5; stats %+v", st.Server, st.Pending, st)
	})
	clk.Step(500 * time.Millisecond) // less than a probe's backoff could be: at most one probe
	st := eb.Stats()
	if st.HeldBack+st.InFlight != 5 || st.OldestPending < 500*time.Millisecond || !math.IsInf(st.WriteRate, 1) {
		t.Fatalf("while down: %+v", st)
	}
	down.Store(false)
	flushStepping(t, eb, clk)
	if st := eb.Stats(); st.Server != sink.ServerHealthy || st.HeldBack != 0 || st.OldestPending != 0 || st.Created != 5 || st.Probes == 0 {
		t.Fatalf("after the return: %+v", st)
	}
}

// WithAdaptiveWriteRate(false) keeps every sink's rate at WithWriteLimit's
// after a 429; the default cuts it.
func TestWithAdaptiveWriteRate(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprint("adaptive=", on), func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			s := sinktest.New()
			var n atomic.Int32
			s.SetFault(func(context.Context, sinktest.Op, *v1.Event) error {
				if n.Add(1) == 1 {
					return apierrors.NewTooManyRequests("busy", 1)
				}
				return nil
			})
			clk := clocktesting.NewFakeClock(t0)
			eb := record.NewBroadcaster(record.WithContext(ctx), record.WithSinkOptions(sink.Options{Clock: clk, QPS: 20, Burst: 20, MaxDelay: time.Second, DisableAdaptiveRate: !(on)}))
			defer eb.Shutdown()
			eb.StartRecordingToSink(s)
			eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: "ctrl"}).Eventf(pod("ns", "p"), v1.EventTypeWarning, "Failed", "m")
			flushStepping(t, eb, clk)
			st := eb.Stats()
			if cut := st.WriteRate < 20; cut != on || (st.RateCuts == 1) != on {
				t.Fatalf("adaptive %v: %+v", on, st)
			}
		})
	}
}

package server_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldk8s/herald/internal/testing/testenv"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// A fleet whose demand steps up, on the real kube-apiserver: the sink's
// TestFleetDemandStepIntoAQueue against the server it models. Priority and
// fairness gives the fleet's user one seat and one queue (riseQueueFor)
// in front of it: a load past the seat's capacity shows first as
// a wait (the round trip grows), then as 429s when the queue is full. The
// capacity is the seat's, measured first on this machine (riseCapacity);
// riseFleet controllers (25, more on a machine whose seat is fast) record
// riseLearnShare of it for riseLearn (the engines learn the usual round
// trip), then riseShare of it for riseFor. Printed, with no targets:
// herald at its defaults, with one write under way at a time (client-go's
// writer sends one at a time, and 25 of them never fill a queue of 40,
// nor n of them one of 1.6n), with the adaptive rate off, with its write
// limit off, and client-go; the 429s, herald's rate cuts (for 429s and
// trims for the delay signal) and whether its first cut came while no 429
// had, the median round trip of the writes stored before and after the
// rise, and when all was stored.
const (
	riseControllers = 25 // at least
	// riseEach is the most writes/s one controller records after the
	// rise: 0.8 of herald's default write limit (50/s), so that at its
	// defaults the server holds the fleet back, not herald's own limit.
	riseEach       = 40
	riseQueue      = 40 // for 25 controllers (riseQueueFor)
	riseLearn      = 6 * time.Second
	riseFor        = 10 * time.Second
	riseLearnShare = 0.3
	riseShare      = 1.2
)

var riseCases = []struct {
	scenario, impl, note string
	opts                 sink.Options
}{
	{"defaults", "herald", "herald at its defaults", sink.Options{}},
	{"defaults", "client-go", "client-go's tools/record", sink.Options{}},
	{"one-worker", "herald", "herald with one write under way at a time (sink.Options.Workers 1), as client-go", sink.Options{Workers: 1}},
	{"adaptive-off", "herald", "herald with the adaptive rate off (sink.Options.DisableAdaptiveRate)", sink.Options{DisableAdaptiveRate: true}},
	{"no-write-limit", "herald", "herald with its write limit off (sink.Options.QPS sink.Unlimited), as the clientsets here", sink.Options{QPS: sink.Unlimited}},
}

func BenchmarkFleetAPFRise(b *testing.B) {
	// One queue, so that the fleet's one flow (one user) may fill all
	// of it.
	queuing := func(n int) flowcontrolv1.QueuingConfiguration {
		return flowcontrolv1.QueuingConfiguration{Queues: 1, HandSize: 1, QueueLengthLimit: int32(riseQueueFor(n))}
	}
	env := startAPF(b, queuing(riseControllers))
	capacity, err := riseCapacity(context.Background(), env)
	if err != nil {
		env.Stop()
		b.Fatal(err)
	}
	n := riseFleet(capacity)
	if n > riseControllers {
		// A fast seat: more controllers, and a queue as much longer.
		env.Stop()
		env = startAPF(b, queuing(n))
	}
	defer env.Stop()
	for _, c := range riseCases {
		b.Run(c.scenario+"/impl="+c.impl, func(b *testing.B) {
			b.Logf("benchnote: FleetAPFRise/%s: a real kube-apiserver (%s) whose event writers' user goes by a FlowSchema to a priority level of %d nominal share (1 seat) queuing at most %d requests in one queue and rejecting (429) the rest; the seat took %.0f writes/s on this machine before the run. %d controllers, each with its own clientset (no client-side limit), record distinct events at %.0f%% of that for %v (to learn the round trip), then at %.0f%% for %v (%.0f writes/s each). %s. s-first-cut and s-first-429: after the rise (%v: never); first-cut-before-429: 1 if herald's first rate cut, polled every 10 ms, was seen while no 429 had been answered (a trim for the delay signal).",
				c.scenario+"/"+c.impl, strings.Join(apfArgs, " "), apfShares, riseQueueFor(n), capacity, n, 100*riseLearnShare, riseLearn, 100*riseShare, riseFor, riseShare*capacity/float64(n), c.note, fleetMax)
			var sum riseResult
			for range b.N {
				sum.add(runRise(b, env, capacity, n, c.opts, c.impl == "herald"))
			}
			sum.report(b, b.N, c.impl == "herald")
		})
	}
}

// riseFleet is how many controllers share the seat's capacity: 25, or as
// many as keep each one's demand after the rise within riseEach writes/s.
// The seat takes 580-2,600 writes/s from machine to machine and run to
// run; at 25 controllers, past about 1,040 each would record past herald's
// default write limit, which client-go's writer, with the clientset's limit
// off as here, does not have, and the defaults would measure that limit
// (19.0 s against client-go's 10.0 s at 2,331 writes/s), not the rate law.
func riseFleet(capacity float64) int {
	return max(riseControllers, int(math.Ceil(riseShare*capacity/riseEach)))
}

// riseQueueFor is the queue in front of the seat for n controllers:
// riseQueue for 25, and as much longer as the fleet is larger, so that
// the fleet keeps the simulation's shape (1.6 requests of queue per
// controller; writers that send one at a time never fill it).
func riseQueueFor(n int) int {
	return int(math.Ceil(float64(riseQueue*n) / riseControllers))
}

// riseCapacity measures the writes/s the fleet's seat takes (FleetAPFRise's,
// FleetMaxInFlight's): 8 writers without a client-side limit, each sending
// its next create as soon as the last is answered, for 2 s, after a second
// to warm up.
func riseCapacity(ctx context.Context, env *testenv.Env) (float64, error) {
	cfg := *env.Restricted
	cfg.QPS = -1
	cs, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		return 0, err
	}
	ns := env.RestrictedNamespace
	var ok atomic.Int64
	var counting atomic.Bool
	stop := time.Now().Add(3 * time.Second)
	time.AfterFunc(time.Second, func() { counting.Store(true) })
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; time.Now().Before(stop); k++ {
				ev := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("capacity-%d-%d", w, k), Namespace: ns},
					InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "capacity"}, Reason: "Capacity", Type: v1.EventTypeNormal}
				_, err := cs.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{})
				if err == nil && counting.Load() {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	c := float64(ok.Load()) / 2
	if c < 20 {
		return 0, fmt.Errorf("the seat took %.0f writes/s: too few to run the fleet", c)
	}
	return c, nil
}

type riseResult struct {
	recorded, stored, lost, requests, writes, tooMany, rateCuts float64
	firstCut, firstTooMany, cutFirst, all                       float64
	rttLearn, rttRise                                           float64 // median round trip of the writes stored, ms
}

func (r *riseResult) add(o riseResult) {
	r.recorded += o.recorded
	r.stored += o.stored
	r.lost += o.lost
	r.requests += o.requests
	r.writes += o.writes
	r.tooMany += o.tooMany
	r.rateCuts += o.rateCuts
	r.firstCut += o.firstCut
	r.firstTooMany += o.firstTooMany
	r.cutFirst += o.cutFirst
	r.all += o.all
	r.rttLearn += o.rttLearn
	r.rttRise += o.rttRise
}

func (r riseResult) report(b *testing.B, n int, herald bool) {
	f := float64(n)
	b.ReportMetric(r.recorded/f, "recorded")
	b.ReportMetric(r.stored/f, "stored")
	b.ReportMetric(r.lost/f, "lost")
	b.ReportMetric(r.tooMany/f, "answered-429")
	b.ReportMetric(r.writes/max(r.requests, 1), "writes/request")
	b.ReportMetric(r.firstTooMany/f, "s-first-429")
	b.ReportMetric(r.all/f, "s-to-all")
	b.ReportMetric(r.rttLearn/f, "ms-rtt-before")
	b.ReportMetric(r.rttRise/f, "ms-rtt-rise")
	if herald {
		b.ReportMetric(r.rateCuts/f, "rate-cuts")
		b.ReportMetric(r.firstCut/f, "s-first-cut")
		b.ReportMetric(r.cutFirst/f, "first-cut-before-429")
	}
}

func median(d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return float64(d[len(d)/2]) / float64(time.Millisecond)
}

func runRise(b *testing.B, env *testenv.Env, capacity float64, n int, opts sink.Options, herald bool) riseResult {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	rise := start.Add(riseLearn)
	end := rise.Add(riseFor)
	cnt := &fleetCounter{start: start, perSecond: map[int]int{}, down: map[string]int{}, split: rise}
	ns := env.RestrictedNamespace
	controllers := make([]*fleetController, n)
	for i := range controllers {
		name := fmt.Sprintf("rise-%d", i)
		cfg := *env.Restricted
		cfg.QPS, cfg.UserAgent = -1, name
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt: rt, name: name, c: cnt} }
		cs, err := kubernetes.NewForConfig(&cfg)
		if err != nil {
			b.Fatal(err)
		}
		controllers[i] = newFleetController(ctx, name, cs, herald, record.WithSinkOptions(opts))
	}

	// The first rate cut of any herald engine, polled, and whether a 429
	// had been answered by then (a cut seen while none had is a trim for
	// the delay signal).
	var firstCut time.Time
	var cutBefore429 bool
	pollDone := make(chan struct{})
	go func() {
		defer close(pollDone)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				for _, c := range controllers {
					if c.herald != nil && c.herald.Stats().RateCuts > 0 {
						// Read after the cut: no earlier than it.
						firstCut = time.Now()
						cnt.mu.Lock()
						cutBefore429 = cnt.tooMany == 0
						cnt.mu.Unlock()
						return
					}
				}
			}
		}
	}()

	// Each controller records at the phase's rate.
	run := fmt.Sprintf("%d", start.UnixNano()%1e9)
	var recorded atomic.Int64
	var wg sync.WaitGroup
	for i, c := range controllers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ; k++ {
				now := time.Now()
				if !now.Before(end) {
					return
				}
				share := riseLearnShare
				if !now.Before(rise) {
					share = riseShare
				}
				obj := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("r%s-c%d-%d", run, i, k), UID: "u"}}
				c.failed(obj, "object %d failed", k)
				recorded.Add(1)
				time.Sleep(time.Duration(float64(time.Second) * float64(n) / (share * capacity)))
			}
		}()
	}
	wg.Wait()

	// Observe until everything is stored, or nothing has been for 3 s, or
	// fleetMax after the end of the rise.
	allAt := waitStored(end.Add(fleetMax), func() int {
		cnt.mu.Lock()
		defer cnt.mu.Unlock()
		return int(recorded.Load()) - cnt.stored
	})
	dropped, cuts := stopFleet(controllers)
	cancel()
	<-pollDone

	cnt.mu.Lock()
	defer cnt.mu.Unlock()
	never := fleetMax.Seconds()
	since := func(t time.Time) float64 {
		if t.IsZero() {
			return never
		}
		return t.Sub(rise).Seconds()
	}
	r := riseResult{
		recorded: float64(recorded.Load()), stored: float64(cnt.stored),
		requests: float64(cnt.requests), writes: float64(cnt.writes), tooMany: float64(cnt.tooMany),
		rateCuts: float64(cuts), firstCut: since(firstCut), firstTooMany: since(cnt.firstTooMany),
		all: since(allAt), rttLearn: median(cnt.rttBefore), rttRise: median(cnt.rttAfter),
	}
	r.lost = r.recorded - r.stored
	if herald {
		r.lost -= float64(dropped)
	}
	if cutBefore429 {
		r.cutFirst = 1
	}
	return r
}

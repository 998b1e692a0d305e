package server_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	clientrecord "k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/internal/testing/bench/server"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// The fleet scenario of issue 13, with real concurrency: controllers
// independent controllers, each with its own clientset (QPS 20, Burst 30)
// and its own broadcaster, record batch Warning events each on distinct
// objects while the API server answers 503 for fleetOutage; it then comes
// back with a capacity of fleetCapacity requests/s, counted by one of the
// server models of model.go (429 Retry-After 1 above it); fleetSecond after
// its return each records batch more.
const (
	fleetControllers = 100
	fleetBatch       = 30
	fleetOutage      = 5 * time.Second
	fleetCapacity    = 300
	fleetSecond      = 10 * time.Second
	fleetMax         = 60 * time.Second // observation, at most, after the return
)

// fleetLatencies are the loopback server's network latencies: 2 ms, and
// 2 ms plus up to 20 ms at random (the simulation's).
var fleetLatencies = []struct {
	name string
	mk   func() func() time.Duration
}{
	{"latency=fixed", func() func() time.Duration { return func() time.Duration { return 2 * time.Millisecond } }},
	{"latency=jittered", func() func() time.Duration {
		var mu sync.Mutex
		rng := rand.New(rand.NewPCG(1, 2))
		return func() time.Duration {
			mu.Lock()
			defer mu.Unlock()
			return 2*time.Millisecond + time.Duration(rng.Int64N(int64(20*time.Millisecond)))
		}
	}},
}

// fleetSettings describes fleetCases.
func fleetSettings() string {
	var parts []string
	for _, c := range fleetCases {
		parts = append(parts, fmt.Sprintf("%s, %s: %s", c.scenario, c.impl, c.note))
	}
	return strings.Join(parts, "; ") + "."
}

// fleetCases are the implementations and settings each server runs.
var fleetCases = []struct {
	scenario, impl string
	herald         []record.BroadcasterOption
	note           string
}{
	{scenario: "defaults", impl: "herald", note: "herald's defaults (write limit 50/s, burst 100, 4 workers)"},
	{scenario: "defaults", impl: "client-go", note: "client-go's defaults"},
	{scenario: "write-limit-off", impl: "herald", herald: []record.BroadcasterOption{record.WithSinkOptions(sink.Options{QPS: sink.Unlimited})}, note: "herald with record.WithSinkOptions(sink.Options{QPS: sink.Unlimited})"},
}

func BenchmarkFleet(b *testing.B) {
	for _, m := range server.Models {
		for _, lat := range fleetLatencies {
			for _, c := range fleetCases {
				if c.impl == "client-go" && lat.name != fleetLatencies[0].name {
					// client-go is printed beside herald, with no targets:
					// once per model is enough for the bench's time.
					continue
				}
				b.Run(m.Name+"/"+lat.name+"/"+c.scenario+"/impl="+c.impl, func(b *testing.B) {
					// Three notes, the same for every run but the model's,
					// which the table prints once each.
					b.Logf("benchnote: Fleet/*: %d controllers, each with its own clientset (QPS 20/Burst 30) and broadcaster writing through it, record %d events each at the start of a %v outage (503), then the server takes %d requests/s through its model, 429 Retry-After above; %d more each %v after its return. s-to-first-batch: from the return until the first %d are stored (%v: never); peak-x-capacity: the most requests within any one second over the capacity then, peak-admitted-x-capacity: those of them the model admitted (a bucket with a burst admits past its capacity, a per-second window up to twice it across two of its seconds); jain-early: Jain's fairness index of the controllers' admitted requests in the first %v after the return (1: equal shares).",
						fleetControllers, fleetBatch, fleetOutage, fleetCapacity, fleetBatch, fleetSecond, fleetControllers*fleetBatch, fleetMax, earlyFor)
					b.Logf("benchnote: Fleet/*/<latency>/<settings>: latency=fixed: 2 ms before each request reaches the server; latency=jittered: 2 ms plus up to 20 ms at random. %s", fleetSettings())
					b.Logf("benchnote: Fleet/%s: %v.", m.Name, m.New(time.Now(), fleetCapacity))
					var sums fleetResult
					for range b.N {
						sums.add(runFleet(b, m.New, lat.mk(), c.impl, c.herald))
					}
					sums.report(b, b.N)
				})
			}
		}
	}
}

type fleetResult struct {
	recorded, stored, lost, requestsDown, maxDownPerController, peak, peakRatio, tooMany, requests, writes float64
	jain                                                                                                   float64
	peakAdmitted                                                                                           float64 // of the requests of the peak second (peakRatio's), those the model admitted, over the capacity
	rateCuts                                                                                               float64 // herald's Stats().RateCuts summed over the controllers (FleetAPF)
	firstBatch, all                                                                                        float64 // seconds after the return; fleetMax if never
	rtt                                                                                                    float64 // the median round trip of the creates stored, ms (the real server's fleets)
}

func (r *fleetResult) add(o fleetResult) {
	r.recorded += o.recorded
	r.stored += o.stored
	r.lost += o.lost
	r.requestsDown += o.requestsDown
	r.maxDownPerController += o.maxDownPerController
	r.peak += o.peak
	r.peakRatio += o.peakRatio
	r.peakAdmitted += o.peakAdmitted
	r.jain += o.jain
	r.tooMany += o.tooMany
	r.rateCuts += o.rateCuts
	r.requests += o.requests
	r.writes += o.writes
	r.firstBatch += o.firstBatch
	r.all += o.all
	r.rtt += o.rtt
}

func (r fleetResult) report(b *testing.B, n int) {
	f := float64(n)
	b.ReportMetric(r.recorded/f, "recorded")
	b.ReportMetric(r.stored/f, "stored")
	b.ReportMetric(r.lost/f, "lost")
	b.ReportMetric(r.requestsDown/f, "requests-while-down")
	b.ReportMetric(r.maxDownPerController/f, "max-requests-down-per-controller")
	b.ReportMetric(r.peak/f, "peak-requests/s")
	// The real server's fleet (FleetAPF) counts neither.
	if r.peakRatio > 0 {
		b.ReportMetric(r.peakRatio/f, "peak-x-capacity")
		b.ReportMetric(r.peakAdmitted/f, "peak-admitted-x-capacity")
	}
	if r.jain > 0 {
		b.ReportMetric(r.jain/f, "jain-early")
	}
	b.ReportMetric(r.tooMany/f, "answered-429")
	b.ReportMetric(r.writes/max(r.requests, 1), "writes/request")
	b.ReportMetric(r.firstBatch/f, "s-to-first-batch")
	b.ReportMetric(r.all/f, "s-to-all")
	if r.rtt > 0 {
		b.ReportMetric(r.rtt/f, "rtt-ms")
	}
}

type fleetController struct {
	name    string
	herald  record.EventBroadcaster
	client  clientrecord.EventBroadcaster
	heraldR record.EventRecorder
	clientR clientrecord.EventRecorder
}

// newFleetController starts controller name's broadcaster writing through
// cs and makes its recorder: herald's, with opts, if herald is set,
// client-go's otherwise (logging to nothing, until ctx ends).
func newFleetController(ctx context.Context, name string, cs kubernetes.Interface, herald bool, opts ...record.BroadcasterOption) *fleetController {
	c := &fleetController{name: name}
	src := v1.EventSource{Component: name}
	if herald {
		c.herald = record.NewBroadcaster(append([]record.BroadcasterOption{record.WithLogger(discard)}, opts...)...)
		c.herald.StartRecordingToSink(&sink.EventSinkImpl{Interface: cs.CoreV1().Events("")})
		c.heraldR = c.herald.NewRecorder(scheme.Scheme, src)
	} else {
		c.client = clientrecord.NewBroadcaster(clientrecord.WithContext(klog.NewContext(ctx, discard)))
		c.client.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
		c.clientR = c.client.NewRecorder(scheme.Scheme, src)
	}
	return c
}

// failed records a Warning event Failed about obj.
func (c *fleetController) failed(obj *v1.Pod, format string, args ...any) {
	if c.heraldR != nil {
		c.heraldR.Eventf(obj, v1.EventTypeWarning, "Failed", format, args...)
	} else {
		c.clientR.Eventf(obj, v1.EventTypeWarning, "Failed", format, args...)
	}
}

// waitStored polls left, the events not stored yet, every 20 ms until it
// is 0 or less (it returns when, else zero), or has not changed for 3 s,
// or deadline passes.
func waitStored(deadline time.Time, left func() int) time.Time {
	last, lastChange := -1, time.Now()
	for time.Now().Before(deadline) {
		n := left()
		if n <= 0 {
			return time.Now()
		}
		if n != last {
			last, lastChange = n, time.Now()
		} else if time.Since(lastChange) > 3*time.Second {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Time{}
}

// stopFleet shuts the controllers down (herald's with a second's deadline)
// and sums what herald's Stats count: the events dropped or abandoned, and
// the rate cuts.
func stopFleet(controllers []*fleetController) (dropped, cuts int64) {
	for _, c := range controllers {
		if c.herald != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = c.herald.ShutdownWithContext(ctx)
			cancel()
			s := c.herald.Stats()
			dropped += s.Dropped.Total() + s.Abandoned
			cuts += s.RateCuts
		} else {
			c.client.Shutdown()
		}
	}
	return dropped, cuts
}

func runFleet(b *testing.B, model func(start time.Time, capacity float64) server.API, latency func() time.Duration, impl string, opts []record.BroadcasterOption) fleetResult {
	b.Helper()
	start := time.Now()
	returned := start.Add(fleetOutage)
	api := newEventsAPI(start, fleetOutage, model(returned, fleetCapacity), latency)
	var mu sync.Mutex
	var firstLeft, allLeft = fleetControllers * fleetBatch, 2 * fleetControllers * fleetBatch
	var firstAt, allAt time.Time
	downBy := map[string]int{}
	api.stored = func(ev *v1.Event, at time.Time) {
		mu.Lock()
		defer mu.Unlock()
		allLeft--
		if strings.Contains(ev.InvolvedObject.Name, "-first-") {
			firstLeft--
			if firstLeft == 0 {
				firstAt = at
			}
		}
		if allLeft == 0 {
			allAt = at
		}
	}
	srv := httptest.NewUnstartedServer(api)
	srv.Config.Handler = countDown(api, downBy)
	srv.Start()
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	controllers := make([]*fleetController, fleetControllers)
	for i := range controllers {
		name := fmt.Sprintf("ctrl-%d", i)
		cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: 20, Burst: 30, UserAgent: name})
		if err != nil {
			b.Fatal(err)
		}
		controllers[i] = newFleetController(ctx, name, cs, impl == "herald", opts...)
	}
	recordBatch := func(which string) {
		for i, c := range controllers {
			for k := range fleetBatch {
				obj := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: fmt.Sprintf("c%d-%s-%d", i, which, k), UID: "u"}}
				c.failed(obj, "object %d of batch %s failed", k, which)
			}
		}
	}
	recordBatch("first")
	time.Sleep(time.Until(returned.Add(fleetSecond)))
	recordBatch("second")

	// Observe until everything is stored, or nothing has been for 3 s, or
	// fleetMax after the return.
	waitStored(returned.Add(fleetMax), func() int {
		mu.Lock()
		defer mu.Unlock()
		return allLeft
	})
	dropped, _ := stopFleet(controllers)
	cancel()

	api.mu.Lock()
	defer api.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	r := fleetResult{
		recorded: 2 * fleetControllers * fleetBatch,
		stored:   float64(len(api.events)),
		requests: float64(api.requests), writes: float64(api.writes),
		requestsDown: float64(api.down), tooMany: float64(api.tooMany),
		jain: jain(api.early, fleetControllers),
	}
	peak, ratio, admitted := slidingPeak(api.arrivals, api.model.CapacityAt)
	r.peak, r.peakRatio, r.peakAdmitted = float64(peak), ratio, admitted
	if impl == "herald" {
		r.lost = r.recorded - r.stored - float64(dropped)
	} else {
		r.lost = r.recorded - r.stored // client-go's drops are per-event log lines only
	}
	for _, n := range downBy {
		r.maxDownPerController = max(r.maxDownPerController, float64(n))
	}
	r.firstBatch, r.all = fleetMax.Seconds(), fleetMax.Seconds()
	if !firstAt.IsZero() {
		r.firstBatch = firstAt.Sub(returned).Seconds()
	}
	if !allAt.IsZero() {
		r.all = allAt.Sub(returned).Seconds()
	}
	return r
}

// jain is Jain's fairness index of the counts of n clients (those not in
// by count 0): (Σx)² / (n·Σx²), 1 when every share is equal, 1/n when one
// client has everything.
func jain(by map[string]int, n int) float64 {
	var sum, sq float64
	for _, x := range by {
		sum += float64(x)
		sq += float64(x) * float64(x)
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(n) * sq)
}

func peakFrom(perSecond map[int]int, from int) int {
	peak := 0
	for sec, n := range perSecond {
		if sec >= from && n > peak {
			peak = n
		}
	}
	return peak
}

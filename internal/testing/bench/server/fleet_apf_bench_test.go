package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldk8s/herald/internal/testing/faultproxy"
	"github.com/heraldk8s/herald/internal/testing/testenv"
	"github.com/heraldk8s/herald/record"
)

// The fleet scenario against the real kube-apiserver (internal/testing/testenv)
// whose capacity is set by API Priority and Fairness: the event writers'
// user is matched by a FlowSchema to a priority level of apfShares
// nominal shares (one seat with these in-flight limits) that queues a few
// requests and rejects (429) the rest. An internal/testing/faultproxy in front of it
// answers 503 during the outage. As many controllers as this machine
// carries beside the server (apfControllers), each with its own clientset
// and broadcaster. No targets: the figures are printed.
const (
	apfControllers = 25
	apfShares      = 1
)

var apfArgs = []string{
	"--enable-priority-and-fairness=true",
	"--max-requests-inflight=10",
	"--max-mutating-requests-inflight=5",
}

func BenchmarkFleetAPF(b *testing.B) {
	env := startAPF(b, flowcontrolv1.QueuingConfiguration{Queues: apfQueues, HandSize: 2, QueueLengthLimit: apfQueueLength})
	defer env.Stop()
	for _, c := range fleetCases {
		b.Run(c.scenario+"/impl="+c.impl, func(b *testing.B) {
			b.Logf("benchnote: FleetAPF/%s: a real kube-apiserver (%s) whose event writers' user goes by a FlowSchema to a priority level of %d nominal share (1 seat) queuing at most %d requests in %d queues and rejecting (429) the rest; %d controllers, each with its own clientset (QPS 20/Burst 30) through a proxy that answers 503 for %v, record %d events each at the start of the outage, %d more each %v after its return. %s. Counted at each client's transport; no targets (the capacity is the server's). s-to-first-batch: from the return until the first %d are stored (%v: never); rtt-ms: the median round trip of the creates stored.",
				c.scenario, strings.Join(apfArgs, " "), apfShares, apfQueueLength, apfQueues, apfControllers, fleetOutage, fleetBatch, fleetBatch, fleetSecond, c.note, apfControllers*fleetBatch, fleetMax)
			var sums fleetResult
			for range b.N {
				sums.add(runFleetAPF(b, env, c.impl, c.herald))
			}
			sums.report(b, b.N)
			if c.impl == "herald" {
				// Cuts for 429s and trims for the delay signal: more
				// than answered-429 are trims (one cut per 429 at most).
				b.ReportMetric(sums.rateCuts/float64(b.N), "rate-cuts")
			}
		})
	}
}

const (
	apfQueues      = 4
	apfQueueLength = 5
)

// startAPF starts a kube-apiserver with apfArgs whose restricted user's
// requests go to a priority level of their own (configureAPF, queuing as
// q says).
func startAPF(b *testing.B, q flowcontrolv1.QueuingConfiguration) *testenv.Env {
	b.Helper()
	return startServer(b, apfArgs, func(ctx context.Context, env *testenv.Env) error {
		return configureAPF(ctx, env, q)
	})
}

// startServer starts a kube-apiserver with args and runs ready on it (what
// sets it up, and the check that it applies); it stops the server and
// fails b if either fails.
func startServer(b *testing.B, args []string, ready func(context.Context, *testenv.Env) error) *testenv.Env {
	b.Helper()
	if _, err := testenv.BinaryPath(); err != nil {
		b.Fatalf("%v (run `make apiserver`)", err)
	}
	ctx := context.Background()
	env, err := testenv.Start(ctx, testenv.Options{ExtraArgs: args})
	if err != nil {
		b.Fatal(err)
	}
	if err := ready(ctx, env); err != nil {
		env.Stop()
		b.Fatal(err)
	}
	return env
}

// configureAPF puts the restricted user's requests in a priority level of
// its own (apfShares nominal shares, queuing as q says) and waits until the
// server applies it (a burst of raw requests sees a 429).
func configureAPF(ctx context.Context, env *testenv.Env, q flowcontrolv1.QueuingConfiguration) error {
	admin, err := kubernetes.NewForConfig(env.Admin)
	if err != nil {
		return err
	}
	shares := int32(apfShares)
	_, err = admin.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "herald-fleet-bench"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: &shares,
				LimitResponse: flowcontrolv1.LimitResponse{
					Type:    flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &q,
				},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	_, err = admin.FlowcontrolV1().FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "herald-fleet-bench"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "herald-fleet-bench"},
			MatchingPrecedence:         100,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: env.RestrictedUser}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"},
				}},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	// More than the flow's queues hold (each request in flight holds a
	// goroutine): some must be rejected.
	if err := burstSees429(ctx, env, 60+2*int(q.HandSize*q.QueueLengthLimit)); err != nil {
		return fmt.Errorf("%w: APF configuration not applied", err)
	}
	return nil
}

// burstSees429 sends n creates at once as the restricted user, every half
// second until one is answered 429 (the server's limit applies), for at
// most a minute.
func burstSees429(ctx context.Context, env *testenv.Env, n int) error {
	restricted, err := kubernetes.NewForConfig(env.Restricted)
	if err != nil {
		return err
	}
	ns := env.RestrictedNamespace
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; ; i++ {
		var seen atomic.Bool
		var wg sync.WaitGroup
		for k := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ev := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("limit-probe-%d-%d", i, k), Namespace: ns},
					InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "probe"}, Reason: "Probe", Type: v1.EventTypeNormal}
				err := restricted.CoreV1().RESTClient().Post().Namespace(ns).Resource("events").Body(ev).MaxRetries(0).Do(ctx).Error()
				var se *apierrors.StatusError
				if errors.As(err, &se) && se.ErrStatus.Code == http.StatusTooManyRequests {
					seen.Store(true)
				}
			}()
		}
		wg.Wait()
		if seen.Load() {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the server never answered 429")
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// fleetCounter counts what the clients of one run send and are answered,
// at their transports.
type fleetCounter struct {
	start, returned time.Time

	mu        sync.Mutex
	perSecond map[int]int
	down      map[string]int // by controller
	requests  int
	tooMany   int
	writes    int // answered 2xx
	stored    int // creates answered 201
	firstLeft int
	firstAt   time.Time
	allLeft   int
	allAt     time.Time
	downTotal int

	firstTooMany time.Time // the first 429 answered
	// split divides the round trips of the creates answered 201: those
	// sent before it, and the others.
	split               time.Time
	rttBefore, rttAfter []time.Duration
}

type countingTransport struct {
	rt   http.RoundTripper
	name string
	c    *fleetCounter
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	first := false
	if r.Method == http.MethodPost && r.GetBody != nil {
		if body, err := r.GetBody(); err == nil {
			data, _ := io.ReadAll(body)
			_ = body.Close()
			first = bytes.Contains(data, []byte("-first-"))
		}
	}
	sent := time.Now()
	resp, err := t.rt.RoundTrip(r)
	now := time.Now()
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++
	c.perSecond[int(sent.Sub(c.start)/time.Second)]++
	if sent.Before(c.returned) {
		c.down[t.name]++
		c.downTotal++
	}
	if err != nil {
		return resp, err
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		c.tooMany++
		if c.firstTooMany.IsZero() {
			c.firstTooMany = now
		}
	case resp.StatusCode/100 == 2:
		c.writes++
		if r.Method == http.MethodPost && resp.StatusCode == http.StatusCreated {
			c.stored++
			if sent.Before(c.split) {
				c.rttBefore = append(c.rttBefore, now.Sub(sent))
			} else {
				c.rttAfter = append(c.rttAfter, now.Sub(sent))
			}
			c.allLeft--
			if c.allLeft == 0 {
				c.allAt = now
			}
			if first {
				c.firstLeft--
				if c.firstLeft == 0 {
					c.firstAt = now
				}
			}
		}
	}
	return resp, err
}

// runFleetAPF runs the fleet scenario once on the real server env
// (FleetAPF, FleetMaxInFlight): apfControllers controllers of impl, each
// with its own clientset through a fault proxy that answers 503 for
// fleetOutage, counted at their transports.
func runFleetAPF(b *testing.B, env *testenv.Env, impl string, opts []record.BroadcasterOption) fleetResult {
	b.Helper()
	proxy, err := faultproxy.New(env.URL)
	if err != nil {
		b.Fatal(err)
	}
	defer proxy.Close()
	proxy.FailWith(http.StatusServiceUnavailable, 0, -1)
	start := time.Now()
	returned := start.Add(fleetOutage)
	cnt := &fleetCounter{start: start, returned: returned, perSecond: map[int]int{}, down: map[string]int{},
		firstLeft: apfControllers * fleetBatch, allLeft: 2 * apfControllers * fleetBatch}
	ns := env.RestrictedNamespace

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	controllers := make([]*fleetController, apfControllers)
	for i := range controllers {
		name := fmt.Sprintf("ctrl-%d", i)
		cfg := proxy.Config(env.Restricted)
		cfg.QPS, cfg.Burst, cfg.UserAgent = 20, 30, name
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt: rt, name: name, c: cnt} }
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		controllers[i] = newFleetController(ctx, name, cs, impl == "herald", opts...)
	}
	run := fmt.Sprintf("%d", start.UnixNano()%1e9)
	recordBatch := func(which string) {
		for i, c := range controllers {
			for k := range fleetBatch {
				obj := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("r%s-c%d-%s-%d", run, i, which, k), UID: "u"}}
				c.failed(obj, "object %d of batch %s failed", k, which)
			}
		}
	}
	recordBatch("first")
	time.Sleep(time.Until(returned))
	proxy.ClearFaults()
	time.Sleep(time.Until(returned.Add(fleetSecond)))
	recordBatch("second")

	// Observe until everything is stored, or nothing has been for 3 s, or
	// fleetMax after the return.
	waitStored(returned.Add(fleetMax), func() int {
		cnt.mu.Lock()
		defer cnt.mu.Unlock()
		return cnt.allLeft
	})
	dropped, cuts := stopFleet(controllers)
	cancel()

	cnt.mu.Lock()
	defer cnt.mu.Unlock()
	r := fleetResult{
		recorded: 2 * apfControllers * fleetBatch,
		stored:   float64(cnt.stored),
		requests: float64(cnt.requests), writes: float64(cnt.writes),
		requestsDown: float64(cnt.downTotal), tooMany: float64(cnt.tooMany),
		peak:     float64(peakFrom(cnt.perSecond, int(fleetOutage/time.Second))),
		rateCuts: float64(cuts),
		rtt:      median(cnt.rttAfter),
	}
	r.lost = r.recorded - r.stored
	if impl == "herald" {
		r.lost -= float64(dropped)
	}
	for _, n := range cnt.down {
		r.maxDownPerController = max(r.maxDownPerController, float64(n))
	}
	r.firstBatch, r.all = fleetMax.Seconds(), fleetMax.Seconds()
	if !cnt.firstAt.IsZero() {
		r.firstBatch = cnt.firstAt.Sub(returned).Seconds()
	}
	if !cnt.allAt.IsZero() {
		r.all = cnt.allAt.Sub(returned).Seconds()
	}
	return r
}

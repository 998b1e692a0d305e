package sink_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"

	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// outage is a fault that fails every write with a 503 while down is set,
// and records the most writes under way at once.
type outage struct {
	down              atomic.Bool
	inFlight, maxSeen atomic.Int32
	calls             atomic.Int32
}

func (o *outage) fault(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
	n := o.inFlight.Add(1)
	defer o.inFlight.Add(-1)
	for {
		m := o.maxSeen.Load()
		if n <= m || o.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	o.calls.Add(1)
	if o.down.Load() {
		return apierrors.NewServiceUnavailable("down")
	}
	return nil
}

// downHarness is a harness whose server is down (every write fails with a
// 503) until o.down is cleared.
func downHarness(t *testing.T, opts sink.Options) (*harness, *outage) {
	t.Helper()
	o := &outage{}
	o.down.Store(true)
	h := newHarness(t, opts)
	h.sink.SetFault(o.fault)
	return h, o
}

// waitDown waits until the engine has seen the server down and has no
// write under way.
func (h *harness) waitDown() {
	h.t.Helper()
	h.until("server seen down", func(s sink.Stats) bool { return s.Server == sink.ServerProbing && s.InFlight == 0 })
}

// waitTimer waits until the dispatcher sleeps on the fake clock.
func (h *harness) waitTimer() {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !h.clock.HasWaiters() {
		if time.Now().After(deadline) {
			h.t.Fatalf("the engine never waited on its clock; stats %+v", h.eng.Stats())
		}
		time.Sleep(time.Millisecond)
	}
}

// While the server is down the engine sends one probe at a time, after a
// backoff; the first success releases every waiting key at once.
func TestOutageOneProbeAtATimeThenReleaseAll(t *testing.T) {
	h, o := downHarness(t, sink.Options{Workers: 8, BaseDelay: time.Second, MaxDelay: 4 * time.Second})
	for i := range 50 {
		h.eng.Add(fmt.Sprint("k", i), event(fmt.Sprint("e", i), 1), nil)
	}
	h.waitDown()
	first := o.calls.Load() // the requests already under way when it went down
	if first > 8 {
		t.Fatalf("%d requests before the engine held back, want at most the workers", first)
	}
	for range 6 {
		before := o.calls.Load()
		h.waitTimer()
		h.clock.Step(4 * time.Second) // at least the longest backoff
		h.until("a probe", func(sink.Stats) bool { return o.calls.Load() == before+1 })
		h.until("the probe's failure", func(s sink.Stats) bool { return s.InFlight == 0 })
	}
	if got := o.maxSeen.Load(); got > 8 {
		t.Fatalf("max writes at once %d", got)
	}
	s := h.eng.Stats()
	if s.Probes != 6 || s.Created != 0 || s.HeldBack != 50 || s.OldestPending < 24*time.Second {
		t.Fatalf("after 6 probes: %+v", s)
	}
	o.down.Store(false)
	h.waitTimer()
	h.clock.Step(4 * time.Second)
	// No more clock steps: the probe's success releases everything.
	h.until("all released", func(s sink.Stats) bool { return s.Created == 50 })
	if s := h.eng.Stats(); s.Server != sink.ServerHealthy || s.Dropped.Total() != 0 || s.HeldBack != 0 || s.OldestPending != 0 {
		t.Fatalf("after recovery: %+v", s)
	}
}

// A Retry-After longer than MaxDelay is honoured only up to MaxDelay.
func TestRetryAfterCappedAtMaxDelay(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	h := newHarness(t, sink.Options{BaseDelay: time.Second, MaxDelay: 2 * time.Second})
	h.sink.SetFault(func(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
		if fail.Swap(false) {
			return apierrors.NewTooManyRequests("come back in an hour", 3600)
		}
		return nil
	})
	h.eng.Add("k", event("e", 1), nil)
	h.until("the 429", func(s sink.Stats) bool { return s.Retried == 1 && s.InFlight == 0 })
	h.waitTimer()
	h.clock.Step(3 * time.Second) // MaxDelay plus the most jitter (half of it)
	h.until("written", func(s sink.Stats) bool { return s.Created == 1 })
	if s := h.eng.Stats(); s.RateCuts != 1 {
		t.Fatalf("a 429 must cut the write rate: %+v", s)
	}
}

// A 429 cuts the adaptive rate; it grows back while writes wait for it.
func TestAdaptiveRateCutAndGrowth(t *testing.T) {
	var n atomic.Int32
	h := newHarness(t, sink.Options{QPS: 20, Burst: 20, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second})
	h.sink.SetFault(func(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
		if n.Add(1) == 11 {
			return apierrors.NewTooManyRequests("busy", 1)
		}
		return nil
	})
	for i := range 10 {
		h.eng.Add(fmt.Sprint("k", i), event(fmt.Sprint("e", i), 1), nil)
	}
	h.until("ten written", func(s sink.Stats) bool { return s.Created == 10 })
	if r := h.eng.Stats().WriteRate; r != 20 {
		t.Fatalf("rate before any 429: %v", r)
	}
	h.eng.Add("x", event("x", 1), nil)
	h.until("the 429", func(s sink.Stats) bool { return s.RateCuts == 1 && s.InFlight == 0 })
	cut := h.eng.Stats().WriteRate
	if cut >= 20 || cut < 0.5 {
		t.Fatalf("rate after a 429: %v", cut)
	}
	for i := range 40 {
		h.eng.Add(fmt.Sprint("m", i), event(fmt.Sprint("m", i), 1), nil)
	}
	h.stepUntil("all written", 200*time.Millisecond, func(s sink.Stats) bool { return s.Created == 51 })
	if r := h.eng.Stats().WriteRate; r <= cut {
		t.Fatalf("rate did not grow back while writes waited: %v <= %v", r, cut)
	}
}

// Keys are written oldest first, after the probe.
func TestOldestFirst(t *testing.T) {
	h, o := downHarness(t, sink.Options{Workers: 1, BaseDelay: time.Second, MaxDelay: time.Second})
	h.eng.Add("k0", event("e0", 1), nil)
	h.waitDown()
	for i := 1; i <= 5; i++ {
		h.clock.Step(time.Millisecond)
		h.eng.Add(fmt.Sprint("k", i), event(fmt.Sprint("e", i), 1), nil)
	}
	o.down.Store(false)
	h.waitTimer()
	h.clock.Step(2 * time.Second)
	h.until("written", func(s sink.Stats) bool { return s.Created == 6 })
	var order []string
	for _, c := range h.sink.History() {
		if c.Err == nil {
			order = append(order, c.Event.Name)
		}
	}
	// The probe is the oldest event that has not just failed (e1); then
	// the rest go oldest first.
	if got := fmt.Sprint(order); got != "[e1 e0 e2 e3 e4 e5]" {
		t.Fatalf("write order %v", got)
	}
}

// When the correlator starts a new event for a key (it forgot the old one)
// while the old one's write waits, both are written: no count is lost.
func TestNewNameDoesNotSwallowWaitingCount(t *testing.T) {
	h, o := downHarness(t, sink.Options{BaseDelay: time.Second, MaxDelay: time.Second})
	h.eng.Add("k", event("first", 1), nil)
	h.waitDown()
	h.eng.Add("k", event("first", 2), patchFor(2))
	h.eng.Add("k", event("first", 3), patchFor(3))
	h.eng.Add("k", event("second", 1), nil) // a new name, count 1
	h.eng.Add("k", event("second", 2), patchFor(2))
	o.down.Store(false)
	h.waitTimer()
	h.clock.Step(2 * time.Second)
	h.flush()
	s := h.eng.Stats()
	if first, _ := h.sink.Get("ns", "first"); first == nil || first.Count != 3 {
		t.Fatalf("first: %+v", first)
	}
	if second, _ := h.sink.Get("ns", "second"); second == nil || second.Count != 2 {
		t.Fatalf("second: %+v", second)
	}
	if stored := h.sink.TotalCount(); stored != s.Created+s.Patched+s.Coalesced || stored != 5 {
		t.Fatalf("stored counts %d, stats %+v", stored, s)
	}
}

// Faults of the sink or of the input are counted drops; the engine goes on.
func TestFaultsAreCountedDrops(t *testing.T) {
	h := newHarness(t, sink.Options{})
	h.sink.SetFault(func(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
		if ev.Name == "boom" {
			panic("sink bug")
		}
		return nil
	})
	if h.eng.Add("nil", nil, nil) {
		t.Fatal("Add(nil) accepted")
	}
	h.eng.Add("boom", event("boom", 1), nil)
	bad := event("bad", 1)
	bad.Namespace = "a/b"
	h.eng.Add("bad", bad, nil)
	h.eng.Add("ok", event("ok", 1), nil)
	h.flush()
	s := h.eng.Stats()
	if s.Dropped.NilEvent != 1 || s.Dropped.SinkPanicked != 1 || s.Dropped.Rejected != 1 || s.Created != 1 || s.Retried != 0 {
		t.Fatalf("stats %+v", s)
	}
	// sinktest records the calls that return: "ok" only (the panicking one
	// never returned, the invalid namespace never reached the sink).
	if n := h.sink.Calls(sinktest.OpCreate); n != 1 {
		t.Fatalf("sink calls %d: the invalid namespace must not reach the sink", n)
	}
}

// emptySink answers every write with an empty event and no error.
type emptySink struct{ calls atomic.Int32 }

func (s *emptySink) Create(*v1.Event) (*v1.Event, error) { s.calls.Add(1); return &v1.Event{}, nil }
func (s *emptySink) Update(*v1.Event) (*v1.Event, error) { return &v1.Event{}, nil }
func (s *emptySink) Patch(*v1.Event, []byte) (*v1.Event, error) {
	s.calls.Add(1)
	return &v1.Event{}, nil
}

func TestEmptyResponseIsBadResponse(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	s := &emptySink{}
	eng, err := sink.NewEngine(s, sink.Options{QPS: sink.Unlimited})
	if err != nil {
		t.Fatal(err)
	}
	eng.Start(ctx)
	defer eng.Stop(context.Background())
	eng.Add("k", event("e", 1), nil)
	if err := eng.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := eng.Stats(); st.Dropped.BadResponse != 1 || st.Created != 0 || s.calls.Load() != 1 {
		t.Fatalf("stats %+v, calls %d", st, s.calls.Load())
	}
}

func TestNilSinksRefused(t *testing.T) {
	var typed *sink.EventSinkImpl
	var clientgo *typedcorev1.EventSinkImpl
	for _, s := range []sink.EventSink{nil, typed, clientgo} {
		if _, err := sink.NewEngine(s, sink.Options{}); err == nil {
			t.Errorf("NewEngine(%T nil) accepted", s)
		}
	}
}

// A Flush whose context ends leaves nothing behind.
func TestFlushCancelForgetsItsWait(t *testing.T) {
	h, _ := downHarness(t, sink.Options{BaseDelay: time.Hour, MaxDelay: time.Hour})
	for i := range 100 {
		h.eng.Add(fmt.Sprint("k", i), event(fmt.Sprint("e", i), 1), nil)
	}
	h.waitDown()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 1000 {
		if err := h.eng.Flush(ctx); err == nil {
			t.Fatal("Flush with a cancelled context returned nil")
		}
	}
	if n := sink.WaitersForTest(h.eng); n != 0 {
		t.Fatalf("%d waiters left behind by cancelled Flushes", n)
	}
}

// blockingSink is a plain EventSink (no context methods) whose writes
// never return until released.
type blockingSink struct {
	release chan struct{}
	entered chan struct{}
	once    sync.Once
}

func (s *blockingSink) Create(ev *v1.Event) (*v1.Event, error) {
	s.once.Do(func() { close(s.entered) })
	<-s.release
	return ev, nil
}
func (s *blockingSink) Update(ev *v1.Event) (*v1.Event, error) { return ev, nil }
func (s *blockingSink) Patch(ev *v1.Event, _ []byte) (*v1.Event, error) {
	return s.Create(ev)
}

// ctxIgnoringSink has context methods but ignores the context.
type ctxIgnoringSink struct{ *blockingSink }

func (s ctxIgnoringSink) CreateContext(_ context.Context, ev *v1.Event) (*v1.Event, error) {
	return s.Create(ev)
}
func (s ctxIgnoringSink) PatchContext(_ context.Context, ev *v1.Event, _ []byte) (*v1.Event, error) {
	return s.Create(ev)
}

// Stop returns by its deadline whatever the sink does; a write stuck then
// is abandoned, and not counted again when it returns.
func TestStopKeepsDeadlineWithStuckSinks(t *testing.T) {
	for _, tc := range []struct {
		name string
		sink func(*blockingSink) sink.EventSink
	}{
		{"plain sink", func(b *blockingSink) sink.EventSink { return b }},
		{"context sink ignoring its context", func(b *blockingSink) sink.EventSink { return ctxIgnoringSink{b} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			b := &blockingSink{release: make(chan struct{}), entered: make(chan struct{})}
			s := tc.sink(b)
			eng, err := sink.NewEngine(s, sink.Options{Workers: 2, QPS: sink.Unlimited})
			if err != nil {
				t.Fatal(err)
			}
			eng.Start(ctx)
			for i := range 5 {
				eng.Add(fmt.Sprint("k", i), event(fmt.Sprint("e", i), 1), nil)
			}
			<-b.entered
			if n := stopWithin(t, eng, 50*time.Millisecond); n != 5 {
				t.Fatalf("Stop abandoned %d, want 5", n)
			}
			close(b.release) // the stuck writes return now
			eng.Stop(context.Background())
			goleak.VerifyNone(t, goleak.IgnoreCurrent())
			if s := eng.Stats(); s.Created != 0 || s.Abandoned != 5 || s.InFlight != 0 {
				t.Fatalf("a write that returned after Stop was counted again: %+v", s)
			}
		})
	}
}

// client-go's own EventSinkImpl against a server that accepts the
// connection and never answers: herald uses its client's context, so Stop
// cancels the request and returns by its deadline, leaving no goroutine.
func TestStopCancelsClientGoSink(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	entered := make(chan struct{}, 10)
	unblock := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-unblock:
		}
	}))
	defer srv.Close()
	defer close(unblock)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	s := &typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")}
	eng, err := sink.NewEngine(s, sink.Options{Workers: 1, QPS: sink.Unlimited})
	if err != nil {
		t.Fatal(err)
	}
	eng.Start(ctx)
	eng.Add("k", event("e", 1), nil)
	<-entered
	if n := stopWithin(t, eng, 50*time.Millisecond); n != 1 {
		t.Fatalf("abandoned %d", n)
	}
}

// stopWithin calls Stop with a context of d and returns what it abandoned,
// failing the test if Stop does not return (well past d plus its slack).
func stopWithin(t *testing.T, eng *sink.Engine, d time.Duration) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan int64)
	go func() { done <- eng.Stop(ctx) }()
	select {
	case n := <-done:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return")
		return 0
	}
}

// herald's requests are not retried inside client-go's REST client: a 429
// reaches the engine after one request (client-go's own typed client would
// retry it up to 10 times, honouring Retry-After, hiding the overload).
func TestSinkSeesTooManyRequests(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429,"details":{"retryAfterSeconds":1}}`)
	}))
	defer srv.Close()
	s, err := sink.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.CreateContext(context.Background(), event("e", 1))
	after, _ := apierrors.SuggestsClientDelay(err)
	if requests.Load() != 1 || !apierrors.IsTooManyRequests(err) || after != 1 {
		t.Fatalf("requests %d, err %v (Retry-After %d s), want one request answered 429 with Retry-After 1 s", requests.Load(), err, after)
	}
}

func TestNewForConfig(t *testing.T) {
	if _, err := sink.NewForConfig(nil); err == nil {
		t.Fatal("nil config accepted")
	}
	var ua atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ua.Store(r.UserAgent())
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"Event","apiVersion":"v1","metadata":{"name":"e","namespace":"ns"},"count":1}`)
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL, QPS: 5, Burst: 10, UserAgent: "my-controller"}
	s, err := sink.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QPS != 5 || cfg.Burst != 10 || cfg.UserAgent != "my-controller" {
		t.Fatalf("NewForConfig modified the caller's config: %+v", cfg)
	}
	out, err := s.Create(event("e", 1))
	if err != nil || out.Name != "e" {
		t.Fatalf("create: %v %+v", err, out)
	}
	if got := ua.Load(); got != "my-controller herald-events" {
		t.Fatalf("user agent %q", got)
	}
	// Its own budget: 100 writes in a row are not held to the caller's 5 QPS.
	deadline := time.Now().Add(5 * time.Second)
	for i := range 100 {
		if _, err := s.Create(event(fmt.Sprint("e", i), 1)); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d writes in 5 s: the caller's 5 QPS applies", i)
		}
	}
}

// With DisableAdaptiveRate a 429 is still honoured (Retry-After), but the
// write rate stays at QPS.
func TestAdaptiveRateDisabled(t *testing.T) {
	var n atomic.Int32
	h := newHarness(t, sink.Options{QPS: 20, Burst: 20, DisableAdaptiveRate: true, MaxDelay: time.Second})
	h.sink.SetFault(func(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
		if n.Add(1) == 1 {
			return apierrors.NewTooManyRequests("busy", 1)
		}
		return nil
	})
	h.eng.Add("k", event("e", 1), nil)
	h.until("the 429", func(s sink.Stats) bool { return s.Retried == 1 && s.InFlight == 0 })
	if s := h.eng.Stats(); s.RateCuts != 0 || s.WriteRate != 20 {
		t.Fatalf("rate changed with the adaptive rate off: %+v", s)
	}
	h.stepUntil("written", 500*time.Millisecond, func(s sink.Stats) bool { return s.Created == 1 })
}

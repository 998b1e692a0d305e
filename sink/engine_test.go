package sink_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/internal/testing/replay"
	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

func event(name string, count int32) *v1.Event {
	return &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: "ns"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "pod"},
		Reason:         "Reason", Message: fmt.Sprintf("msg %d", count), Type: v1.EventTypeNormal,
		Count: count, FirstTimestamp: metav1.NewTime(t0), LastTimestamp: metav1.NewTime(t0),
	}
}

func patchFor(count int32) []byte {
	return fmt.Appendf(nil, `{"count":%d,"message":"msg %d"}`, count, count)
}

type harness struct {
	t     *testing.T
	eng   *sink.Engine
	sink  *sinktest.Sink
	clock *clocktesting.FakeClock
}

func newHarness(t *testing.T, opts sink.Options) *harness {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	h := &harness{t: t, sink: sinktest.New(), clock: clocktesting.NewFakeClock(t0)}
	if opts.Clock == nil {
		opts.Clock = h.clock
	}
	if opts.QPS == 0 {
		opts.QPS = sink.Unlimited
	}
	eng, err := sink.NewEngine(h.sink, opts)
	if err != nil {
		t.Fatal(err)
	}
	h.eng = eng
	eng.Start(ctx)
	t.Cleanup(func() { eng.Stop(context.Background()) })
	return h
}

// flush waits for the engine's barrier, failing the test after a bound.
func (h *harness) flush() {
	h.t.Helper()
	select {
	case <-sink.BarrierForTest(h.eng):
	case <-time.After(10 * time.Second):
		h.t.Fatalf("barrier not reached; stats %+v", h.eng.Stats())
	}
}

// until polls cond (engine state changes on worker goroutines) with a bound.
func (h *harness) until(what string, cond func(sink.Stats) bool) {
	h.t.Helper()
	check.Eventually(h.t, what, func() error {
		s := h.eng.Stats()
		return check.Errorf(cond(s), "stats %+v", s)
	})
}

// stepUntil steps the fake clock by d until cond holds. Stepping more than
// once is needed because the dispatcher may read the clock just before a
// step and arm its timer just after it, one step late.
func (h *harness) stepUntil(what string, d time.Duration, cond func(sink.Stats) bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond(h.eng.Stats()) {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s; stats %+v", what, h.eng.Stats())
		}
		h.clock.Step(d)
		time.Sleep(time.Millisecond)
	}
}

func TestCreateThenPatch(t *testing.T) {
	h := newHarness(t, sink.Options{})
	h.eng.Add("k", event("e", 1), nil)
	h.flush()
	h.eng.Add("k", event("e", 2), patchFor(2))
	h.flush()
	got, ok := h.sink.Get("ns", "e")
	if !ok || got.Count != 2 || got.Message != "msg 2" {
		t.Fatalf("stored %+v", got)
	}
	if s := h.eng.Stats(); s.Created != 1 || s.Patched != 1 || s.Pending != 0 || s.InFlight != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestOnWrittenGetsServerEvent(t *testing.T) {
	var got atomic.Pointer[v1.Event]
	h := newHarness(t, sink.Options{OnWritten: func(key string, _, ev *v1.Event) {
		if key == "k" {
			got.Store(ev)
		}
	}})
	h.eng.Add("k", event("e", 1), nil)
	h.flush()
	if ev := got.Load(); ev == nil || ev.ResourceVersion == "" {
		t.Fatalf("OnWritten got %+v", ev)
	}
}

func TestCoalescesWhileWaiting(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	h := newHarness(t, sink.Options{Workers: 1})
	h.sink.SetFault(func(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
		if ev.Name == "blocker" {
			entered <- struct{}{}
			<-release
		}
		return nil
	})
	h.eng.Add("blocker", event("blocker", 1), nil)
	<-entered // the only worker is busy
	h.eng.Add("k", event("e", 1), nil)
	for i := int32(2); i <= 50; i++ {
		h.eng.Add("k", event("e", i), patchFor(i))
	}
	close(release)
	h.flush()
	got, _ := h.sink.Get("ns", "e")
	if got == nil || got.Count != 50 {
		t.Fatalf("stored %+v", got)
	}
	s := h.eng.Stats()
	if s.Created != 2 || s.Patched != 0 || s.Coalesced != 49 {
		t.Fatalf("want one create carrying 50 events, got %+v", s)
	}
	if n := h.sink.Calls(sinktest.OpCreate) + h.sink.Calls(sinktest.OpPatch); n != 2 {
		t.Fatalf("calls = %d, want 2", n)
	}
}

// A key whose writes keep failing with a server error holds the others
// only for a probe or two: the failed key is probed, goes behind the
// others, the next probe (another key) succeeds and releases them all.
func TestNoHeadOfLineBlocking(t *testing.T) {
	h := newHarness(t, sink.Options{Workers: 2, MaxDelay: time.Second})
	h.sink.SetFault(func(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
		if ev.Name == "bad" {
			return apierrors.NewServiceUnavailable("down")
		}
		return nil
	})
	h.eng.Add("bad", event("bad", 1), nil)
	h.until("first failure", func(s sink.Stats) bool { return s.Retried >= 1 })
	for i := range 100 {
		h.eng.Add(fmt.Sprint("good", i), event(fmt.Sprint("good", i), 1), nil)
	}
	h.stepUntil("good keys written", time.Second, func(s sink.Stats) bool { return s.Created == 100 })
	if s := h.eng.Stats(); s.Pending+s.InFlight != 1 || s.Probes > 3 {
		t.Fatalf("the failing key should wait alone, after at most a few probes: %+v", s)
	}
}

func TestRetryBackoffAndRetryAfter(t *testing.T) {
	var fail atomic.Int32
	fail.Store(2)
	h := newHarness(t, sink.Options{BaseDelay: time.Second, MaxDelay: 8 * time.Second})
	h.sink.SetFault(func(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
		if fail.Add(-1) >= 0 {
			return apierrors.NewTooManyRequests("slow down", 5)
		}
		return nil
	})
	h.eng.Add("k", event("e", 1), nil)
	h.until("first failure", func(s sink.Stats) bool { return s.Retried == 1 })
	h.clock.Step(4 * time.Second) // Retry-After is 5 s: no retry yet
	if n := h.sink.Calls(sinktest.OpCreate); n != 1 {
		t.Fatalf("retried before Retry-After: %d calls", n)
	}
	h.stepUntil("second failure", time.Second+time.Millisecond, func(s sink.Stats) bool { return s.Retried == 2 })
	h.stepUntil("written", time.Second+time.Millisecond, func(s sink.Stats) bool { return s.Created == 1 })
	if s := h.eng.Stats(); s.Pending != 0 || s.Retried != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestPatchNotFoundCreates(t *testing.T) {
	h := newHarness(t, sink.Options{})
	h.eng.Add("k", event("e", 1), nil)
	h.flush()
	h.sink.Delete("ns", "e")
	h.eng.Add("k", event("e", 7), patchFor(7))
	h.flush()
	got, ok := h.sink.Get("ns", "e")
	if !ok || got.Count != 7 {
		t.Fatalf("stored %+v", got)
	}
	if s := h.eng.Stats(); s.Created != 2 || s.Patched != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// An event that comes and goes between the requests of one write (its
// patch answered NotFound, its create AlreadyExists, the patch that
// follows NotFound again: its time to live ran out meanwhile) is created
// anew in the same write. The last 404 once left the write as a patch's,
// read as a 5xx: the key was retried, and two such keys with nothing
// answered in between made the server look down.
func TestEventGoneBetweenTwoRequestsIsCreated(t *testing.T) {
	h := newHarness(t, sink.Options{})
	var refused sync.Map // event names whose first create was answered AlreadyExists
	h.sink.SetFault(func(_ context.Context, op sinktest.Op, ev *v1.Event) error {
		if op == sinktest.OpCreate {
			if _, again := refused.LoadOrStore(ev.Name, true); !again {
				return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "events"}, ev.Name)
			}
		}
		return nil
	})
	for _, name := range []string{"e1", "e2"} {
		h.eng.Add(name, event(name, 3), patchFor(3)) // never created: every patch is answered NotFound
	}
	h.flush()
	for _, name := range []string{"e1", "e2"} {
		if got, ok := h.sink.Get("ns", name); !ok || got.Count != 3 {
			t.Errorf("%s: stored %+v, want count 3", name, got)
		}
	}
	if s := h.eng.Stats(); s.Created != 2 || s.Retried != 0 || s.Probes != 0 || s.Server != sink.ServerHealthy {
		t.Fatalf("stats %+v, want both created in their first write, nothing retried, the server healthy", s)
	}
}

func TestPermanentErrorsDropOnce(t *testing.T) {
	gr := schema.GroupResource{Resource: "events"}
	terminating := apierrors.NewForbidden(gr, "e", errors.New("namespace is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: v1.NamespaceTerminatingCause}}
	cases := []struct {
		err    error
		reason string // its label in Drops.ByReason
	}{
		{apierrors.NewAlreadyExists(gr, "e"), "already_exists"},
		{terminating, "namespace_terminating"},
		{apierrors.NewForbidden(gr, "e", errors.New("rbac")), "forbidden"},
		{apierrors.NewInvalid(schema.GroupKind{Kind: "Event"}, "e", nil), "rejected"},
		{apierrors.NewBadRequest("bad"), "rejected"},
	}
	for _, c := range cases {
		t.Run(string(c.reason)+"/"+fmt.Sprint(apierrors.ReasonForError(c.err)), func(t *testing.T) {
			h := newHarness(t, sink.Options{})
			h.sink.SetFault(func(context.Context, sinktest.Op, *v1.Event) error { return c.err })
			h.eng.Add("k", event("e", 1), nil)
			h.flush()
			s := h.eng.Stats()
			if s.Dropped.ByReason()[c.reason] != 1 || s.Dropped.Total() != 1 || s.Retried != 0 {
				t.Fatalf("stats %+v", s)
			}
			if n := h.sink.Calls(sinktest.OpCreate); n != 1 {
				t.Fatalf("%d calls, want 1 (no retry)", n)
			}
		})
	}
}

type nilSink struct{ sinktest.Sink }

func (*nilSink) CreateContext(context.Context, *v1.Event) (*v1.Event, error) { return nil, nil }

func TestBadResponseIsCountedNotACrash(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	eng, err := sink.NewEngine(&nilSink{}, sink.Options{QPS: sink.Unlimited})
	if err != nil {
		t.Fatal(err)
	}
	eng.Start(ctx)
	defer eng.Stop(context.Background())
	eng.Add("k", event("e", 1), nil)
	<-sink.BarrierForTest(eng)
	if s := eng.Stats(); s.Dropped.BadResponse != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// A key whose writes fail while the server answers the others (a poison
// key) is dropped after MaxTries of its own failures; failed probes are
// not charged to it.
func TestPoisonKeyRetriesExhausted(t *testing.T) {
	h := newHarness(t, sink.Options{MaxTries: 3, BaseDelay: time.Second, MaxDelay: time.Second})
	h.sink.SetFault(func(_ context.Context, _ sinktest.Op, ev *v1.Event) error {
		if ev.Name == "bad" {
			return errors.New("connection reset")
		}
		return nil
	})
	h.eng.Add("bad", event("bad", 1), nil)
	for i := 0; h.eng.Stats().Dropped.RetriesExhausted == 0; i++ {
		if i > 100 {
			t.Fatalf("poison key never dropped: %+v", h.eng.Stats())
		}
		h.eng.Add(fmt.Sprint("good", i), event(fmt.Sprint("good", i), 1), nil)
		h.until("settled", func(s sink.Stats) bool { return s.InFlight == 0 })
		h.clock.Step(time.Second)
		time.Sleep(time.Millisecond)
	}
	if s := h.eng.Stats(); s.Dropped.Total() != 1 || s.Pending+s.InFlight != 0 && s.Created == 0 {
		t.Fatalf("dropped %d, want 1 (the poison key alone); created %d, pending + in flight %d, want the good events written; stats %+v", s.Dropped.Total(), s.Created, s.Pending+s.InFlight, s)
	}
}

// During an outage (every write fails) events wait; failed probes are not
// tries, so nothing is dropped however long it lasts.
func TestOutageDoesNotExhaustTries(t *testing.T) {
	h := newHarness(t, sink.Options{MaxTries: 3, BaseDelay: time.Second, MaxDelay: time.Second})
	h.sink.SetFault(func(context.Context, sinktest.Op, *v1.Event) error { return errors.New("connection refused") })
	h.eng.Add("k", event("e", 1), nil)
	h.stepUntil("ten probes", time.Second, func(s sink.Stats) bool { return s.Probes >= 10 })
	if s := h.eng.Stats(); s.Dropped.Total() != 0 || s.Pending+s.InFlight != 1 || s.Server != sink.ServerProbing {
		t.Fatalf("stats %+v", s)
	}
}

// MaxPending caps the writes waiting (the one under way is not waiting).
func TestPendingCap(t *testing.T) {
	release := make(chan struct{})
	h := newHarness(t, sink.Options{Workers: 1, MaxPending: 3})
	h.sink.SetFault(func(ctx context.Context, op sinktest.Op, ev *v1.Event) error { <-release; return nil })
	h.eng.Add("0", event("0", 1), nil)
	h.until("first write under way", func(s sink.Stats) bool { return s.InFlight == 1 })
	for i := 1; i < 6; i++ {
		h.eng.Add(fmt.Sprint(i), event(fmt.Sprint(i), 1), nil)
	}
	// Repeats of a waiting key still coalesce when the engine is full.
	if !h.eng.Add("2", event("2", 2), patchFor(2)) {
		t.Fatal("repeat of a waiting key refused")
	}
	close(release)
	h.flush()
	s := h.eng.Stats()
	if s.Dropped.PendingFull != 2 || s.Created != 4 || s.Coalesced != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestWriteRateLimit(t *testing.T) {
	h := newHarness(t, sink.Options{QPS: 1, Burst: 1})
	h.eng.Add("a", event("a", 1), nil)
	h.eng.Add("b", event("b", 1), nil)
	h.until("first write", func(s sink.Stats) bool { return s.Created == 1 })
	if h.eng.Stats().Created != 1 {
		t.Fatal("second write did not wait for a token")
	}
	h.clock.Step(time.Second)
	h.until("second write", func(s sink.Stats) bool { return s.Created == 2 })
}

func TestStopAbandonsAndCountsLateAdds(t *testing.T) {
	entered := make(chan struct{})
	h := newHarness(t, sink.Options{Workers: 1})
	h.sink.SetFault(func(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
		close(entered)
		<-ctx.Done() // a request that hangs until cancelled
		return ctx.Err()
	})
	h.eng.Add("a", event("a", 1), nil)
	<-entered
	h.eng.Add("b", event("b", 1), nil)
	h.eng.Add("b", event("b", 2), patchFor(2))
	if n := h.eng.Stop(context.Background()); n != 3 {
		t.Fatalf("Stop abandoned %d, want 3", n)
	}
	if h.eng.Add("c", event("c", 1), nil) {
		t.Fatal("Add after Stop accepted")
	}
	select {
	case <-sink.BarrierForTest(h.eng):
	default:
		t.Fatal("barrier after Stop must be immediate")
	}
	if s := h.eng.Stats(); s.Abandoned != 4 || s.Pending != 0 || s.InFlight != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestOneWriterPerKey(t *testing.T) {
	var mu sync.Mutex
	active := map[string]int{}
	var overlap atomic.Bool
	h := newHarness(t, sink.Options{Workers: 8})
	h.sink.SetFault(func(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
		mu.Lock()
		active[ev.Name]++
		if active[ev.Name] > 1 {
			overlap.Store(true)
		}
		mu.Unlock()
		for range 100 {
			runtime.Gosched() // widen the window for an overlap
		}
		mu.Lock()
		active[ev.Name]--
		mu.Unlock()
		return nil
	})
	for i := int32(1); i <= 2000; i++ {
		k := fmt.Sprint(i % 4)
		var p []byte
		if i > 4 {
			p = patchFor(i)
		}
		h.eng.Add(k, event(k, i), p)
	}
	h.flush()
	if overlap.Load() {
		t.Fatal("two workers wrote one key at once")
	}
	for _, ev := range h.sink.Events() {
		if ev.Count < 1997 {
			t.Fatalf("%s stored count %d: the latest state was not written last", ev.Name, ev.Count)
		}
	}
}

// TestAccountingIdentity adds random workloads against a sink with random
// faults and checks that every event ends in exactly one bucket.
func TestAccountingIdentity(t *testing.T) {
	for seed := range uint64(5) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			replay.OnFailure(t, "seed %d", seed)
			r := rand.New(rand.NewPCG(seed, 1))
			var rmu sync.Mutex
			h := newHarness(t, sink.Options{Workers: 3, MaxTries: 3, MaxPending: 20, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
			h.sink.SetFault(func(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
				rmu.Lock()
				x := r.IntN(10)
				rmu.Unlock()
				switch x {
				case 0:
					return apierrors.NewInternalError(errors.New("boom"))
				case 1:
					return errors.New("connection refused")
				case 2:
					return apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, ev.Name, errors.New("no"))
				}
				return nil
			})
			var added int64
			counts := map[string]int32{}
			for range 500 {
				rmu.Lock()
				k := fmt.Sprint(r.IntN(40))
				rmu.Unlock()
				counts[k]++
				var p []byte
				if counts[k] > 1 {
					p = patchFor(counts[k])
				}
				h.eng.Add(k, event(k, counts[k]), p)
				added++
			}
			// Let retries run out by stepping the fake clock: every event
			// ends written or dropped, none is left waiting.
			deadline := time.Now().Add(30 * time.Second)
			for s := h.eng.Stats(); s.Pending+s.InFlight > 0; s = h.eng.Stats() {
				if time.Now().After(deadline) {
					t.Fatalf("events still waiting after their retries should have run out: pending %d, in flight %d, want 0; stats %+v", s.Pending, s.InFlight, s)
				}
				h.clock.Step(time.Millisecond)
				time.Sleep(100 * time.Microsecond)
			}
			// So Stop finds nothing to abandon.
			h.eng.Stop(context.Background())
			s := h.eng.Stats()
			if s.Abandoned != 0 || s.Pending != 0 || s.InFlight != 0 {
				t.Errorf("after Stop: abandoned %d, pending %d, in flight %d, want 0 (every event written or dropped before Stop); stats %+v", s.Abandoned, s.Pending, s.InFlight, s)
			}
			check.Engine(t, added, s)
		})
	}
}

// TestNewEngineOptions: a nil sink is refused; an option out of range
// means its default, and Start logs one error naming each such field, and
// the engine writes as with the defaults.
func TestNewEngineOptions(t *testing.T) {
	if _, err := sink.NewEngine(nil, sink.Options{}); err == nil {
		t.Fatal("nil sink accepted")
	}
	logger, logLines := check.Logger()
	s := sinktest.New()
	eng, err := sink.NewEngine(s, sink.Options{Workers: 5000, QPS: math.NaN(), Burst: -3, MaxTries: -1, MaxPending: -1,
		BaseDelay: -time.Second, MaxDelay: -time.Second, RequestTimeout: -1})
	if err != nil {
		t.Fatalf("NewEngine with invalid options: %v, want an engine using the defaults", err)
	}
	ctx := context.Background()
	eng.Start(klog.NewContext(ctx, logger))
	defer eng.Stop(ctx)
	eng.Add("k", event("e", 1), nil)
	if err := eng.Flush(ctx); err != nil || len(s.Events()) != 1 {
		t.Fatalf("flush: %v, %d events stored, want 1", err, len(s.Events()))
	}
	lines := logLines()
	for _, field := range []string{"Workers", "QPS", "Burst", "MaxTries", "MaxPending", "BaseDelay", "MaxDelay", "RequestTimeout"} {
		n := 0
		for _, l := range lines {
			if strings.Contains(l, `"Invalid sink option, using its default"`) && strings.Contains(l, `"option"="`+field+`"`) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d log lines for the invalid %s, want 1:\n%s", n, field, strings.Join(lines, "\n"))
		}
	}
}

// TestBarrierSeesFinalCounts checks that when a barrier opens, the events it
// waited for are already counted (a Flush that returns must see them).
func TestBarrierSeesFinalCounts(t *testing.T) {
	h := newHarness(t, sink.Options{Workers: 2})
	gr := schema.GroupResource{Resource: "events"}
	h.sink.SetFault(func(_ context.Context, _ sinktest.Op, ev *v1.Event) error {
		if ev.Name[0] == 'f' {
			return apierrors.NewForbidden(gr, ev.Name, errors.New("rbac"))
		}
		return nil
	})
	for i := range 3000 {
		name := fmt.Sprint("f", i)
		if i%2 == 1 {
			name = fmt.Sprint("ok", i)
		}
		h.eng.Add(name, event(name, 1), nil)
		h.flush()
		s := h.eng.Stats()
		if got := s.Created + s.Dropped.Total(); got != int64(i+1) || s.Pending+s.InFlight != 0 {
			t.Fatalf("after barrier %d: %d accounted, stats %+v", i, got, s)
		}
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

// TestUnauthorizedTriedOnceMore: a 401 is tried once more at once (client-go's
// transport refreshes its credentials on one), counted in Retried; a second
// 401 drops the event as rejected, after two requests, with no wait. An
// event whose first request meets the 401 and whose second succeeds is
// written.
func TestUnauthorizedTriedOnceMore(t *testing.T) {
	h := newHarness(t, sink.Options{})
	var calls atomic.Int32
	h.sink.SetFault(func(_ context.Context, _ sinktest.Op, ev *v1.Event) error {
		n := calls.Add(1)
		if ev.Name == "revoked" || n == 3 {
			return apierrors.NewUnauthorized("token revoked")
		}
		return nil
	})
	h.eng.Add("revoked", event("revoked", 1), nil)
	h.flush()
	s := h.eng.Stats()
	if s.Dropped.Rejected != 1 || s.Retried != 1 || h.sink.Calls(sinktest.OpCreate) != 2 {
		t.Fatalf("credentials that stay invalid: stats %+v, %d creates; want rejected after 2 creates, 1 retry", s, h.sink.Calls(sinktest.OpCreate))
	}
	h.eng.Add("rotated", event("rotated", 1), nil)
	h.flush()
	s = h.eng.Stats()
	if s.Created != 1 || s.Retried != 2 || s.Dropped.Total() != 1 || len(h.sink.Events()) != 1 {
		t.Fatalf("credentials refreshed on the 401: stats %+v, %d stored; want created on its second request", s, len(h.sink.Events()))
	}
}

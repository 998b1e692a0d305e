package sink_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

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

// TestUnbuildableRequestsRejected: what client-go could not put in a
// request path (a name that is "." or "..", or holds '/' or '%'; a
// namespace that is not a DNS label; a patch without a name) is dropped at
// once as rejected, never sent and never retried; the other events are
// written.
func TestUnbuildableRequestsRejected(t *testing.T) {
	h := newHarness(t, sink.Options{})
	bad := []*v1.Event{event(".", 1), event("..", 1), event("a/b", 1), event("50%", 1)}
	ns := event("in-bad-namespace", 1)
	ns.Namespace = "Bad_NS"
	bad = append(bad, ns)
	for i, ev := range bad {
		h.eng.Add(fmt.Sprint("bad", i), ev, nil)
	}
	h.eng.Add("nameless", event("", 2), patchFor(2)) // a patch needs a name
	h.eng.Add("ok", event("ok", 1), nil)
	h.eng.Add("ok.dots", event("ok..dots", 1), nil) // dots inside a name are fine
	h.flush()
	s := h.eng.Stats()
	if want := int64(len(bad) + 1); s.Dropped.Rejected != want || s.Created != 2 || s.Retried != 0 {
		t.Fatalf("stats %+v, want %d rejected, 2 created, none retried", s, want)
	}
	if n := h.sink.Calls(sinktest.OpCreate) + h.sink.Calls(sinktest.OpPatch); n != 2 {
		t.Fatalf("%d sink calls: an unbuildable request reached the sink", n)
	}
}

package events

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/sink"
)

// downSink answers 503 to every request while down.
type downSink struct {
	down  atomic.Bool
	calls atomic.Int64
}

func (s *downSink) do(ev *v1.Event) (*v1.Event, error) {
	s.calls.Add(1)
	if s.down.Load() {
		return nil, apierrors.NewServiceUnavailable("etcd is down")
	}
	return ev.DeepCopy(), nil
}
func (s *downSink) Create(ev *v1.Event) (*v1.Event, error)          { return s.do(ev) }
func (s *downSink) Update(ev *v1.Event) (*v1.Event, error)          { return s.do(ev) }
func (s *downSink) Patch(ev *v1.Event, _ []byte) (*v1.Event, error) { return s.do(ev) }

// A write seriesOrder skips (its count is not above the stored one) sends
// no request, as a write checkRequest refuses sends none: it tells nothing
// of the server. As the probe of the retiring engine's outage it must not
// bring the server back (release every key, charge the failed one a try).
func TestSkippedSeriesWriteDoesNotEndAnOutage(t *testing.T) {
	fs := &downSink{}
	o := newSeriesOrder(fs)
	// The new session's engine wrote count 5 of x.
	if _, err := o.PatchContext(context.Background(), seriesEv("x", 5), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	fs.down.Store(true)
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	eng, err := sink.NewEngine(o, sink.Options{Workers: 1, MaxTries: 1, BaseDelay: time.Second, MaxDelay: time.Second,
		QPS: sink.Unlimited, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	eng.Start(context.Background())
	defer eng.Stop(context.Background())
	until := func(what string, cond func(sink.Stats) bool) {
		t.Helper()
		check.Eventually(t, what, func() error {
			s := eng.Stats()
			return check.Errorf(cond(s), "stats %+v", s)
		})
	}
	e0 := &v1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e0"}, Count: 1}
	eng.Add("k0", e0, nil)
	until("server seen down", func(s sink.Stats) bool { return s.Server == sink.ServerProbing && s.InFlight == 0 })
	// The retiring engine's stale count 3 of x: the probe (e0's key failed).
	eng.Add("kx", seriesEv("x", 3), []byte(`{"series":{"count":3}}`))
	before := fs.calls.Load()
	check.Eventually(t, "the engine to wait on its clock", func() error {
		return check.Errorf(clk.HasWaiters(), "no waiter")
	})
	clk.Step(2 * time.Second)
	until("the skipped write and what follows", func(s sink.Stats) bool {
		return s.Patched == 1 && s.InFlight == 0 && (s.Probes >= 2 || s.Pending == 0)
	})
	s := eng.Stats()
	if s.Server != sink.ServerProbing || s.Dropped.RetriesExhausted != 0 || s.Pending != 1 {
		t.Fatalf("after a probe that sent no request: server %v, %d requests since the outage was seen, %d dropped as retries exhausted, %d pending; stats %+v",
			s.Server, fs.calls.Load()-before, s.Dropped.RetriesExhausted, s.Pending, s)
	}
}

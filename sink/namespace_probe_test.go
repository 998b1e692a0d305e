package sink_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/sink"
)

// A namespaced client's sink refuses an event of another namespace before
// any request (sink.go checkNamespace), as checkRequest refuses a name that
// cannot be a path segment: no request went, so it tells nothing of the
// server. As the probe of an outage it must not bring the server back.
func TestNamespaceRefusalProbeDoesNotEndAnOutage(t *testing.T) {
	var calls atomic.Int64
	cs := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"ServiceUnavailable","code":503}`)
	}))
	s := &sink.EventSinkImpl{Interface: cs.CoreV1().Events("ns")}
	clk := clocktesting.NewFakeClock(t0)
	_, ctx := ktesting.NewTestContext(t)
	eng, err := sink.NewEngine(s, sink.Options{Workers: 1, MaxTries: 1, BaseDelay: time.Second, MaxDelay: time.Second,
		QPS: sink.Unlimited, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	eng.Start(ctx)
	defer eng.Stop(context.Background())
	h := &harness{t: t, eng: eng, clock: clk}
	eng.Add("k0", event("e0", 1), nil)
	h.until("server seen down", func(s sink.Stats) bool { return s.Server == sink.ServerProbing && s.InFlight == 0 })
	other := event("o", 1)
	other.Namespace = "other"
	eng.Add("other", other, nil) // the probe: the oldest key that has not failed
	before := calls.Load()
	check.Eventually(t, "the engine to wait on its clock", func() error {
		return check.Errorf(clk.HasWaiters(), "no waiter")
	})
	clk.Step(2 * time.Second)
	h.until("the refused event dropped and what follows", func(s sink.Stats) bool {
		return s.Dropped.Rejected == 1 && s.InFlight == 0 && (s.Probes >= 2 || s.Pending == 0)
	})
	st := eng.Stats()
	if st.Server != sink.ServerProbing || st.Dropped.RetriesExhausted != 0 || st.Pending != 1 {
		t.Fatalf("after a probe that sent no request: server %v, %d requests since, %d dropped as retries exhausted, %d pending; stats %+v",
			st.Server, calls.Load()-before, st.Dropped.RetriesExhausted, st.Pending, st)
	}
}

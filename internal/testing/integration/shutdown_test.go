package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// TestShutdownDeliversEverything records 5,000 events about distinct objects
// and shuts down at once: when ShutdownWithContext returns, every one of them
// is in the API server (client-go's broadcaster would have lost almost all).
func TestShutdownDeliversEverything(t *testing.T) {
	const n = 5000
	cs := adminClient(t)
	ns := env.CreateNamespace(t, "shutdown")

	// The sink's client must not be what limits throughput: rest.Config's
	// default client-side limiter is 5 QPS.
	cfg := rest.CopyConfig(env.Admin)
	cfg.QPS, cfg.Burst = 2000, 4000
	h := newHarness(t, heraldSink(t, cfg),
		record.WithSinkOptions(sink.Options{Workers: 16, QPS: sink.Unlimited}),
		record.WithQueueLength(2*n),
	)

	start := time.Now()
	for i := range n {
		h.rec.Eventf(podRef(ns, fmt.Sprintf("pod-%04d", i)), v1.EventTypeNormal, "Started", "Started container app-%d", i)
	}
	recorded := time.Since(start)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := h.eb.ShutdownWithContext(ctx); err != nil {
		t.Fatalf("ShutdownWithContext: %v; stats %+v", err, h.eb.Stats())
	}
	t.Logf("recorded %d events in %v, all delivered by shutdown after %v", n, recorded.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	s := h.eb.Stats()
	check.Settled(t, s)
	if s.Recorded != n || s.Created != n || s.Abandoned != 0 || s.Dropped.Total() != 0 {
		t.Errorf("stats %+v: want %d recorded and created, none abandoned or dropped", s, n)
	}

	// Straight after the return: a consistent list must show all of them.
	evs, err := listEvents(t.Context(), cs, ns, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing events: %v", err)
	}
	want := make(map[string]int32, n)
	for i := range n {
		want[fmt.Sprintf("pod-%04d", i)] = 1
	}
	if err := countEvents(want)(evs); err != nil {
		t.Errorf("%d events in the API server after shutdown, want %d: %v", len(evs), n, err)
	}

	// Recording after shutdown is a counted drop, not a panic.
	h.rec.Event(podRef(ns, "late"), v1.EventTypeNormal, "Late", "after shutdown")
	if s := h.eb.Stats(); s.Dropped.AfterShutdown != 1 {
		t.Errorf("stats %+v: want 1 dropped after shutdown", s)
	}
}

// TestShutdownDuringOutage shuts down while the API server cannot be
// reached: ShutdownWithContext returns when its context ends, with an error
// that counts the abandoned events, and Stats account for every one.
func TestShutdownDuringOutage(t *testing.T) {
	const n = 10
	cs := adminClient(t)
	ns := env.CreateNamespace(t, "outage-shutdown")
	proxy := newProxy(t)
	proxy.Dark()
	h := newHarness(t, heraldSink(t, proxy.Config(env.Admin)))
	for i := range n {
		h.rec.Eventf(podRef(ns, fmt.Sprintf("pod-%d", i)), v1.EventTypeNormal, "Started", "Started container app-%d", i)
	}

	const grace = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	start := time.Now()
	err := h.eb.ShutdownWithContext(ctx)
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprint(n)) {
		t.Errorf("ShutdownWithContext: %v, want an error counting %d abandoned events", err, n)
	}
	if took > grace+5*time.Second {
		t.Errorf("ShutdownWithContext took %v with a %v context", took, grace)
	}
	s := h.eb.Stats()
	check.Settled(t, s)
	if s.Abandoned != n || written(s) != 0 || s.Dropped.Total() != 0 {
		t.Errorf("stats %+v: want %d abandoned, nothing written or dropped", s, n)
	}

	proxy.Light()
	waitEvents(t, cs, ns, metav1.ListOptions{}, countEvents(map[string]int32{}))
}

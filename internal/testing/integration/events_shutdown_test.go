package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// TestEventsV1Shutdown records events.k8s.io/v1 events right before
// ShutdownWithContext (with a generous deadline): when it returns, every
// one is stored, with exact series counts, and none was abandoned.
func TestEventsV1Shutdown(t *testing.T) {
	// The sink's client must not be what limits throughput.
	cfg := rest.CopyConfig(env.Admin)
	cfg.QPS, cfg.Burst = 2000, 4000

	shutdown := func(t *testing.T, h *evHarness) record.Stats {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := h.eb.ShutdownWithContext(ctx); err != nil {
			t.Fatalf("ShutdownWithContext: %v; stats %+v", err, h.eb.Stats())
		}
		s := h.eb.Stats()
		check.Settled(t, s)
		return s
	}

	t.Run("5000 distinct events", func(t *testing.T) {
		const n = 5000
		cs := adminClient(t)
		ns := env.CreateNamespace(t, "ev-shutdown")
		h := newEvHarness(t, evSink(t, cfg), events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{Workers: 16, QPS: sink.Unlimited}), record.WithQueueLength(2*n)))
		start := time.Now()
		for i := range n {
			h.rec.Eventf(podRef(ns, fmt.Sprintf("pod-%04d", i)), nil, v1.EventTypeNormal, "Started", defaultAction, "Started container app-%d", i)
		}
		s := shutdown(t, h)
		t.Logf("%d events recorded and all delivered by shutdown after %v", n, time.Since(start).Round(time.Millisecond))
		if s.Recorded != n || s.Created != n || s.Abandoned != 0 || s.Dropped.Total() != 0 {
			t.Errorf("stats %+v: want %d recorded and created, none abandoned or dropped", s, n)
		}
		// Straight after the return: a consistent list must show all of them.
		evs, err := listV1(t.Context(), cs, ns, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("listing events: %v", err)
		}
		want := make(map[string]int32, n)
		for i := range n {
			want[fmt.Sprintf("pod-%04d", i)] = 1
		}
		if err := countV1(want)(evs); err != nil {
			t.Errorf("%d events in the API server after shutdown, want %d: %v", len(evs), n, err)
		}
	})

	t.Run("200 series with pending counts", func(t *testing.T) {
		const objects, repeats = 200, 5
		cs := adminClient(t)
		ns := env.CreateNamespace(t, "ev-shutdown-series")
		h := newEvHarness(t, evSink(t, cfg), events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{Workers: 8, QPS: sink.Unlimited})))
		want := make(map[string]int32, objects)
		// The first occurrences are stored before the repeats, so that the
		// repeats are counts pending at shutdown.
		for i := range objects {
			name := fmt.Sprintf("obj-%03d", i)
			want[name] = repeats
			h.rec.Eventf(podRef(ns, name), nil, v1.EventTypeWarning, "Unhealthy", defaultAction, "Liveness probe failed")
		}
		h.flush(flushTimeout)
		for range repeats - 1 {
			for i := range objects {
				h.rec.Eventf(podRef(ns, fmt.Sprintf("obj-%03d", i)), nil, v1.EventTypeWarning, "Unhealthy", defaultAction, "Liveness probe failed")
			}
		}
		s := shutdown(t, h)
		if s.Recorded != objects*repeats || written(s) != objects*repeats || s.Created != objects || s.Abandoned != 0 || s.Dropped.Total() != 0 {
			t.Errorf("stats %+v: want %d recorded and written, %d created, none abandoned or dropped", s, objects*repeats, objects)
		}
		evs, err := listV1(t.Context(), cs, ns, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("listing events: %v", err)
		}
		if err := countV1(want)(evs); err != nil {
			t.Errorf("after shutdown: %v\n%s", err, describeV1(evs))
		}
	})
}

// TestEventsV1Restart halts the API server (connection refused, as while it
// restarts) while events.k8s.io/v1 events are recorded, new ones and
// repeats of stored ones, starts it again on the same data, and Flushes:
// every event is stored with its exact series count. The server is started
// again even if the test fails, so that the other tests of the package
// still have it.
func TestEventsV1Restart(t *testing.T) {
	const (
		stored  = 50  // events stored before the outage, repeated during it
		fresh   = 200 // new events during the outage
		repeats = 3   // occurrences of each event during the outage
	)
	cs := adminClient(t)
	ns := env.CreateNamespace(t, "ev-restart")
	// Probe soon after the server is back; never give up on a key.
	h := newEvHarness(t, evSink(t, env.Admin),
		events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited, Workers: 8, MaxDelay: 500 * time.Millisecond, BaseDelay: 100 * time.Millisecond, MaxTries: 1000})))

	want := map[string]int32{}
	for i := range stored {
		name := fmt.Sprintf("stored-%02d", i)
		want[name] = 1
		h.rec.Eventf(podRef(ns, name), nil, v1.EventTypeWarning, "BackOff", defaultAction, "Back-off restarting failed container")
	}
	h.flush(flushTimeout)
	waitV1(t, cs, ns, metav1.ListOptions{}, countV1(want))

	restart := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		return env.Restart(ctx)
	}
	// Registered before the Halt (and after the namespace's and the
	// broadcaster's cleanups, so it runs before them): whatever happens,
	// the server runs again when the test ends.
	halted := true
	t.Cleanup(func() {
		if halted {
			if err := restart(); err != nil {
				t.Errorf("restarting the API server after a failure: %v", err)
			}
		}
	})
	if err := env.Halt(); err != nil {
		t.Fatalf("Halt: %v", err)
	}
	haltedAt := time.Now()

	for r := range repeats {
		for i := range stored {
			h.rec.Eventf(podRef(ns, fmt.Sprintf("stored-%02d", i)), nil, v1.EventTypeWarning, "BackOff", defaultAction, "Back-off restarting failed container")
		}
		for i := range fresh {
			h.rec.Eventf(podRef(ns, fmt.Sprintf("fresh-%03d", i)), nil, v1.EventTypeNormal, "Pulled", defaultAction, "Pulled image (%d)", r)
		}
	}
	for i := range stored {
		want[fmt.Sprintf("stored-%02d", i)] = 1 + repeats
	}
	for i := range fresh {
		want[fmt.Sprintf("fresh-%03d", i)] = repeats
	}
	// Let the engine see the outage before the server comes back.
	check.Eventually(t, "the engine sees the API server down", func() error {
		if s := h.eb.Stats(); s.Server != sink.ServerProbing {
			return fmt.Errorf("stats %+v", s)
		}
		return nil
	})
	if s := h.eb.Stats(); written(s) != stored || s.Dropped.Total() != 0 {
		t.Errorf("during the outage: stats %+v, want only the %d events stored before it written, none dropped", s, stored)
	}

	if err := restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	halted = false
	t.Logf("API server down for %v", time.Since(haltedAt).Round(time.Millisecond))

	start := time.Now()
	s := h.flush(90 * time.Second)
	t.Logf("delivered %v after the restart; stats %+v", time.Since(start).Round(time.Millisecond), s)
	total := int64(stored + (stored+fresh)*repeats)
	if s.Recorded != total || written(s) != total || s.Created != stored+fresh || s.Dropped.Total() != 0 || s.Abandoned != 0 {
		t.Errorf("stats %+v: want %d recorded and written, %d created, none dropped or abandoned", s, total, stored+fresh)
	}
	waitV1(t, cs, ns, metav1.ListOptions{}, countV1(want))
}

package controllerruntime_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	heraldcr "github.com/heraldk8s/herald/controllerruntime"
	"github.com/heraldk8s/herald/events"
)

// Shutdown called from inside a watcher's handler returns once what was
// recorded is written: it does not wait for the handler that called it.
func TestShutdownFromAHandler(t *testing.T) {
	ns := env.CreateNamespace(t, "cr-shutdown-handler")
	cs := adminClient(t)
	cm := createConfigMap(t, cs, ns, "handler")
	mgr := newManager(t, baseOptions())
	core, _ := mgr.Broadcasters()
	done := make(chan error, 1)
	var once sync.Once
	core.StartEventWatcher(func(*corev1.Event) {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			done <- mgr.Shutdown(ctx)
		})
	})
	mgr.GetEventRecorderFor("herald-cr-test").Eventf(cm, corev1.EventTypeNormal, "Synced", "shut down from a handler") //nolint:staticcheck // what is tested
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shutdown from a handler: %v", err)
		}
	case <-time.After(pollTimeout):
		t.Fatal("Shutdown from a handler did not return")
	}
	evs, err := listCore(context.Background(), cs, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		t.Fatalf("%d events stored, want 1", len(evs))
	}
}

// events.WithSeriesInterval spaces events.k8s.io/v1 series only: a repeated
// core/v1 event is patched at once, without a Flush.
func TestSeriesIntervalLeavesCoreV1Alone(t *testing.T) {
	ns := env.CreateNamespace(t, "cr-series-interval")
	cs := adminClient(t)
	cm := createConfigMap(t, cs, ns, "repeated")
	mgr := newManager(t, baseOptions(), heraldcr.WithEventsOptions(events.WithSeriesInterval(time.Hour)))
	rec := mgr.GetEventRecorderFor("herald-cr-test") //nolint:staticcheck // what is tested
	for want := int32(1); want <= 2; want++ {
		rec.Eventf(cm, corev1.EventTypeNormal, "Synced", "synced")
		eventually(t, fmt.Sprint("stored count ", want), func(ctx context.Context) error {
			evs, err := listCore(ctx, cs, ns)
			if err != nil {
				return err
			}
			if len(evs) != 1 || evs[0].Count != want {
				return fmt.Errorf("%d events stored (%+v), want one with count %d", len(evs), evs, want)
			}
			return nil
		})
	}
}

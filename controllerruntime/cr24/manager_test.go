package cr24_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientevents "k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	heraldcr "github.com/heraldk8s/herald/controllerruntime/cr24"
	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/record"
)

// TestManagerRecordsThroughHeraldAndFlushesAtStop runs a manager of the
// controller-runtime this module is built with (v0.23 or v0.24) with leader
// election on, and a runnable that records, once its context has ended,
// distinct events through both recorder APIs: every one is stored when
// Start returns, and leader election's event went through herald's core/v1
// recorder. The behaviour is that of the controllerruntime module (whose
// tests go into the details); this checks the wiring against each
// controller-runtime of the generation.
func TestManagerRecordsThroughHeraldAndFlushesAtStop(t *testing.T) {
	ns := env.CreateNamespace(t, "cr24")
	cs, err := kubernetes.NewForConfig(env.Admin)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := heraldcr.NewManager(env.Admin, manager.Options{
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		LeaderElection:          true,
		LeaderElectionID:        "herald-cr24-test",
		LeaderElectionNamespace: ns,
	}, heraldcr.WithEventsOptions(events.WithSeriesInterval(time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	evRec := mgr.GetEventRecorder("example.com/herald-cr24-test")
	if _, ok := evRec.(clientevents.EventRecorderLogger); !ok {
		t.Errorf("GetEventRecorder returned %T, not an events.EventRecorderLogger", evRec)
	}
	coreRec := mgr.GetEventRecorderFor("herald-cr24-test") //nolint:staticcheck // what is tested

	// More than herald writes at once (50/s by default), so that some are
	// still pending when the runnable returns and Start must flush them.
	const n = 200
	running := make(chan struct{})
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		close(running)
		<-ctx.Done()
		for i := range n {
			obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, Name: fmt.Sprintf("cm-%03d", i), UID: types.UID(fmt.Sprintf("uid-%03d", i)),
			}}
			evRec.Eventf(obj, nil, corev1.EventTypeNormal, "Stopping", "Shutdown", "stopping while handling %s", obj.Name)
		}
		coreRec.Eventf(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "core", UID: "uid-core"}},
			corev1.EventTypeNormal, "Stopped", "stopped")
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	select {
	case <-running: // runnables that need leader election run once elected
	case <-time.After(time.Minute):
		t.Fatal("the runnable did not start within a minute (leader election?)")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Start did not return within 2 minutes of its context's end")
	}

	core, ev := statsOf(mgr)
	for what, s := range map[string]record.Stats{"core/v1": core, "events.k8s.io/v1": ev} {
		if s.Dropped.Total() != 0 || s.Abandoned != 0 || s.Pending != 0 || s.Unaccounted() != 0 {
			t.Errorf("%s: dropped %v, abandoned %d, pending %d, unaccounted %d, want none: %+v",
				what, s.Dropped.ByReason(), s.Abandoned, s.Pending, s.Unaccounted(), s)
		}
	}
	if ev.Recorded != n || ev.Created != n {
		t.Errorf("events.k8s.io/v1: recorded %d, created %d, want %d each", ev.Recorded, ev.Created, n)
	}
	// The runnable's event and leader election's ("became leader", and
	// "stopped leading" as the manager stops).
	if core.Recorded < 2 || core.Created != core.Recorded {
		t.Errorf("core/v1: recorded %d, created %d, want at least 2, all written", core.Recorded, core.Created)
	}

	list, err := cs.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stopping := map[string]int{}
	for _, e := range list.Items {
		if e.Reason == "Stopping" && e.ReportingController == "example.com/herald-cr24-test" {
			stopping[e.Regarding.Name]++
		}
	}
	if len(stopping) != n {
		t.Errorf("%d distinct Stopping events stored, want %d", len(stopping), n)
	}
	coreList, err := cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var stopped, leader int
	for _, e := range coreList.Items {
		switch {
		case e.Reason == "Stopped" && e.Source.Component == "herald-cr24-test":
			stopped++
		case e.Reason == "LeaderElection" && e.InvolvedObject.Name == "herald-cr24-test" && strings.HasSuffix(e.Message, " became leader"):
			leader++
		}
	}
	if stopped != 1 || leader != 1 {
		t.Errorf("core/v1 events stored: %d Stopped (want 1), %d LeaderElection became leader (want 1), of %d", stopped, leader, len(coreList.Items))
	}
}

// statsOf returns the counters of mgr's core/v1 and events.k8s.io/v1
// broadcasters.
func statsOf(mgr *heraldcr.Manager) (core, eventsV1 record.Stats) {
	c, e := mgr.Broadcasters()
	return c.Stats(), e.Stats()
}

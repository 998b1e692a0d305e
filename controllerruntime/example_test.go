package controllerruntime_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	heraldcr "github.com/heraldk8s/herald/controllerruntime"
)

// NewManager replaces ctrl.NewManager: the recorders the manager hands out
// (GetEventRecorder here) record through herald, and Start writes what is
// pending once the manager's runnables have stopped. The example runs
// against the package tests' kube-apiserver (env.Admin); a controller passes
// ctrl.GetConfigOrDie().
func ExampleNewManager() {
	cfg := env.Admin // in a controller: ctrl.GetConfigOrDie()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cm, cleanup, err := env.ExampleObject("example-newmanager") // the object a reconciler would record about
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()

	mgr, err := heraldcr.NewManager(cfg, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"}, // no ports opened by the example
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		fmt.Println("NewManager:", err)
		return
	}
	started, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- mgr.Start(started) }() // in a controller: mgr.Start(ctrl.SetupSignalHandler())

	recorder := mgr.GetEventRecorder("example.com/settings-controller")
	for range 3 {
		recorder.Eventf(cm, nil, corev1.EventTypeWarning, "InvalidSpec", "Validate", "missing required key %q", "mode")
	}

	stop() // the manager stops; Start writes what herald still holds, then returns
	if err := <-done; err != nil {
		fmt.Println("Start:", err)
	}
	list, err := kubernetes.NewForConfigOrDie(cfg).EventsV1().Events(cm.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Println("list:", err)
		return
	}
	for _, e := range list.Items {
		count := int32(1)
		if e.Series != nil {
			count = e.Series.Count
		}
		fmt.Printf("%s %s/%s %s %s: %s (count %d)\n", e.ReportingController, e.Regarding.Kind, e.Regarding.Name, e.Type, e.Reason, e.Note, count)
	}
	_, eventsV1 := mgr.Broadcasters()
	s := eventsV1.Stats()
	fmt.Printf("recorded %d, created %d, dropped %d\n", s.Recorded, s.Created, s.Dropped.Total())
	// Output:
	// example.com/settings-controller ConfigMap/settings Warning InvalidSpec: missing required key "mode" (count 3)
	// recorded 3, created 1, dropped 0
}

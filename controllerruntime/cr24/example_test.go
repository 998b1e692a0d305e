package cr24_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	heraldcr "github.com/heraldk8s/herald/controllerruntime/cr24"
)

// NewManager replaces ctrl.NewManager for controller-runtime v0.23 and
// v0.24: GetEventRecorder hands out client-go's events.EventRecorder,
// backed by herald, and Start writes what is pending once the manager's
// runnables have stopped. The example runs against the package tests'
// kube-apiserver (env.Admin); a controller passes ctrl.GetConfigOrDie().
func ExampleNewManager() {
	cfg := env.Admin // in a controller: ctrl.GetConfigOrDie()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cm, cleanup, err := env.ExampleObject("example-cr24") // the object a reconciler would record about
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

	mgr.GetEventRecorder("example.com/settings-controller").
		Eventf(cm, nil, corev1.EventTypeNormal, "Synced", "Reconcile", "applied %d keys", 2)

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
		fmt.Printf("%s %s/%s %s %s: %s\n", e.ReportingController, e.Regarding.Kind, e.Regarding.Name, e.Type, e.Reason, e.Note)
	}
	// Output:
	// example.com/settings-controller ConfigMap/settings Normal Synced: applied 2 keys
}

// Command kubebuilder is a kubebuilder-style controller whose event
// recorders are herald's. A kubebuilder project (cmd/main.go of the
// scaffold) switches with one import and one changed line:
//
//	 import (
//	 	...
//	+	heraldcr "github.com/heraldk8s/herald/controllerruntime"
//	 	ctrl "sigs.k8s.io/controller-runtime"
//	 	...
//	 )
//	 ...
//	-	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
//	+	mgr, err := heraldcr.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
//	 		Scheme:                 scheme,
//	 		...
//
// Everything else stays: mgr is still a manager.Manager, reconcilers take
// their recorders from mgr.GetEventRecorder (or the deprecated
// GetEventRecorderFor), and `mgr.Start(ctrl.SetupSignalHandler())` now
// also writes the events still pending when SIGTERM arrives, within the
// manager's GracefulShutdownTimeout, before it returns.
//
// The controller reconciles ConfigMaps and records a Normal "Observed"
// event (action "Reconcile") per reconcile through
// mgr.GetEventRecorder("example.com/configmap-controller"), plus
// --extra-events "Extra" events, which herald folds into one series. Run it
// against a cluster with --kubeconfig (or $KUBECONFIG); --namespace limits
// it to one namespace; --leader-elect turns leader election on (out of a
// cluster, also give --leader-election-namespace).
package main

import (
	"context"
	"flag"
	"os"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	heraldcr "github.com/heraldk8s/herald/controllerruntime"
)

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
}

// ConfigMapReconciler records an event about every ConfigMap it reconciles.
type ConfigMapReconciler struct {
	client.Client
	Recorder recorder.EventRecorder
	// ExtraEvents is how many "Extra" events each reconcile records on top
	// of its "Observed" one.
	ExtraEvents int
}

func (r *ConfigMapReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var cm corev1.ConfigMap
	if err := r.Get(ctx, req.NamespacedName, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	r.Recorder.Eventf(&cm, nil, corev1.EventTypeNormal, "Observed", "Reconcile",
		"ConfigMap %s has %d keys", cm.Name, len(cm.Data)+len(cm.BinaryData))
	for i := range r.ExtraEvents {
		r.Recorder.Eventf(&cm, nil, corev1.EventTypeNormal, "Extra", "Reconcile",
			"extra event %d of %d", i+1, r.ExtraEvents)
	}
	log.Info("Observed ConfigMap", "events", 1+r.ExtraEvents)
	return ctrl.Result{}, nil
}

func (r *ConfigMapReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.ConfigMap{}).
		Named("configmap").
		Complete(r)
}

func main() {
	var metricsAddr, probeAddr, namespace, leaderNamespace string
	var enableLeaderElection bool
	var extraEvents int
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "The address the metrics endpoint binds to; 0 disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address the probe endpoint binds to; 0 disables it.")
	flag.BoolVar(&enableLeaderElection, "leader-elect", false, "Enable leader election for the controller manager.")
	flag.StringVar(&leaderNamespace, "leader-election-namespace", "", "Namespace of the leader election Lease (required out of a cluster).")
	flag.StringVar(&namespace, "namespace", "", "Reconcile the ConfigMaps of this namespace only (default all).")
	flag.IntVar(&extraEvents, "extra-events", 0, "Extra events to record per reconcile.")
	opts := zap.Options{Development: true}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))

	var cacheOpts cache.Options
	if namespace != "" {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	// The one line that differs from kubebuilder's scaffold:
	// ctrl.NewManager becomes heraldcr.NewManager.
	mgr, err := heraldcr.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          enableLeaderElection,
		LeaderElectionID:        "configmap-controller.example.com",
		LeaderElectionNamespace: leaderNamespace,
		Cache:                   cacheOpts,
	})
	if err != nil {
		setupLog.Error(err, "unable to start manager")
		os.Exit(1)
	}

	if err := (&ConfigMapReconciler{
		Client:      mgr.GetClient(),
		Recorder:    mgr.GetEventRecorder("example.com/configmap-controller"),
		ExtraEvents: extraEvents,
	}).SetupWithManager(mgr); err != nil {
		setupLog.Error(err, "unable to create controller", "controller", "ConfigMap")
		os.Exit(1)
	}

	setupLog.Info("starting manager")
	err = mgr.Start(ctrl.SetupSignalHandler())
	// Not in the scaffold: what herald did, for the curious (and the test).
	cb, eb := mgr.Broadcasters()
	core, eventsV1 := cb.Stats(), eb.Stats()
	setupLog.Info("herald events.k8s.io/v1", "recorded", eventsV1.Recorded, "created", eventsV1.Created,
		"patched", eventsV1.Patched, "abandoned", eventsV1.Abandoned, "dropped", eventsV1.Dropped.Total(),
		"alreadyExists", eventsV1.Dropped.AlreadyExists)
	setupLog.Info("herald core/v1", "recorded", core.Recorded, "created", core.Created,
		"patched", core.Patched, "abandoned", core.Abandoned, "dropped", core.Dropped.Total(),
		"alreadyExists", core.Dropped.AlreadyExists)
	if err != nil {
		setupLog.Error(err, "problem running manager")
		os.Exit(1)
	}
}

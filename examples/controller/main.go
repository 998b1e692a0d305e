// Command controller runs a small controller that records Kubernetes Events
// with herald: it validates the ConfigMaps labelled
// herald.example/managed=true (their data must hold "mode" with one of fast,
// safe, off) and records a Normal Synced or a Warning InvalidSpec event on
// each, again on every resync. See package
// github.com/heraldk8s/herald/examples/controller/controller for the logic.
//
// Usage:
//
//	controller [-kubeconfig FILE] [-namespace NS] [-resync 30s] [-duration 0] [-shutdown-timeout 10s] [-v N]
//
// Without -kubeconfig it uses $KUBECONFIG, then ~/.kube/config, then the
// in-cluster configuration. SIGINT or SIGTERM stops it gracefully: the events
// still pending are written before it exits, and it prints herald's Stats.
//
// It needs list and watch on configmaps, and create and patch on events
// (core group), in the watched namespaces.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/examples/controller/controller"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster)")
	namespace := flag.String("namespace", "", `namespace to watch ("" for all)`)
	resync := flag.Duration("resync", controller.DefaultResync, "informer resync period: each ConfigMap's event is recorded again this often (at least 1s)")
	duration := flag.Duration("duration", 0, "stop after this long (0: run until SIGINT or SIGTERM)")
	shutdownTimeout := flag.Duration("shutdown-timeout", controller.DefaultShutdownTimeout, "how long to flush pending events when stopping")
	klog.InitFlags(nil)
	flag.Parse()

	if err := run(*kubeconfig, *namespace, *resync, *duration, *shutdownTimeout); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, namespace string, resync, duration, shutdownTimeout time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Once stopping, a second signal kills the process at once.
	context.AfterFunc(ctx, stop)
	if duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, duration)
		defer cancel()
	}
	logger := klog.Background()
	ctx = klog.NewContext(ctx, logger)

	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("loading the client configuration: %w", err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}

	logger.Info("Running", "server", config.Host, "namespace", namespace, "resync", resync, "duration", duration)
	stats, err := controller.Run(ctx, controller.Config{
		Client:          client,
		Namespace:       namespace,
		Resync:          resync,
		ShutdownTimeout: shutdownTimeout,
	})
	logger.Info("Stopped", "recorded", stats.Recorded, "created", stats.Created, "patched", stats.Patched,
		"coalesced", stats.Coalesced, "filtered", stats.Filtered, "aggregated", stats.Aggregated,
		"dropped", stats.Dropped.Total(), "abandoned", stats.Abandoned)
	klog.Flush()
	return err
}

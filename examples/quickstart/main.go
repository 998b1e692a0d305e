// Command quickstart is the README's usage example as a program: it records
// a few events with herald on a ConfigMap, waits until they are written, and
// prints what the API server stored.
//
// Usage:
//
//	quickstart [-kubeconfig FILE] [-namespace default]
//
// Without -kubeconfig it uses $KUBECONFIG, then ~/.kube/config. It creates
// the ConfigMap herald-quickstart in the namespace if it does not exist, and
// leaves it there so that `kubectl describe configmap herald-quickstart`
// shows the events. It needs get and create on configmaps, and create,
// patch and list on events.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// objectName is the ConfigMap the events are about.
const objectName = "herald-quickstart"

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	namespace := flag.String("namespace", metav1.NamespaceDefault, "namespace of the ConfigMap the events are about")
	klog.InitFlags(nil)
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())

	err := func() error {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = *kubeconfig
		config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return fmt.Errorf("loading the client configuration: %w", err)
		}
		client, err := kubernetes.NewForConfig(config)
		if err != nil {
			return err
		}
		return run(ctx, client, *namespace, os.Stdout)
	}()
	klog.Flush()
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// run records the events and prints what the server stored.
func run(ctx context.Context, client kubernetes.Interface, namespace string, out io.Writer) error {
	cm, err := ensureConfigMap(ctx, client, namespace)
	if err != nil {
		return err
	}
	// Only this run's events are printed; the server keeps seconds.
	start := time.Now().Truncate(time.Second)

	// The README's usage example.
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	defer broadcaster.Shutdown() // flushes pending events, then stops every goroutine
	broadcaster.StartStructuredLogging(4)
	broadcaster.StartRecordingToSink(&sink.EventSinkImpl{Interface: client.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "herald-quickstart"})

	mode, allowed := cm.Data["mode"], []string{"fast", "safe", "off"}
	recorder.Eventf(cm, v1.EventTypeNormal, "Started", "Quickstart is checking %s", cm.Name)
	for range 3 { // the same event three times: one event with count 3
		recorder.Eventf(cm, v1.EventTypeWarning, "InvalidSpec", "spec.mode %q is not one of %v", mode, allowed)
	}

	// Wait until everything recorded so far is written (or given up).
	flushCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := broadcaster.Flush(flushCtx); err != nil {
		return fmt.Errorf("flushing events: %w", err)
	}
	s := broadcaster.Stats()
	fmt.Fprintf(out, "Recorded %d events: %d created, %d patched, %d folded into counts, %d dropped.\n\n",
		s.Recorded, s.Created, s.Patched, s.Coalesced+s.Filtered, s.Dropped.Total())

	list, err := client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing events: %w", err)
	}
	fmt.Fprintf(out, "Events of configmap/%s stored by the API server:\n", cm.Name)
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "TYPE\tREASON\tCOUNT\tMESSAGE")
	for _, ev := range list.Items {
		if ev.InvolvedObject.UID != cm.UID || ev.LastTimestamp.Time.Before(start) {
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", ev.Type, ev.Reason, ev.Count, ev.Message)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nSee them with: kubectl describe configmap %s -n %s\n", cm.Name, namespace)
	return nil
}

// ensureConfigMap returns the quickstart's ConfigMap, creating it if needed.
func ensureConfigMap(ctx context.Context, client kubernetes.Interface, namespace string) (*v1.ConfigMap, error) {
	cms := client.CoreV1().ConfigMaps(namespace)
	cm, err := cms.Get(ctx, objectName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm, err = cms.Create(ctx, &v1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: objectName, Namespace: namespace},
			Data:       map[string]string{"mode": "turbo"},
		}, metav1.CreateOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("getting configmap %s/%s: %w", namespace, objectName, err)
	}
	return cm, nil
}

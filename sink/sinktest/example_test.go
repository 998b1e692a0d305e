package sinktest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// TestMain checks that the examples' broadcasters leave no goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A Sink stands in for the API server in unit tests: give it to
// StartRecordingToSink, flush, and look at what it stored and how it was
// called.
func ExampleSink() {
	broadcaster := record.NewBroadcaster(
		record.WithSinkOptions(sink.Options{Clock: clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), QPS: sink.Unlimited}), // a fake clock never refills the token bucket
	)
	defer broadcaster.Shutdown()
	store := sinktest.New()
	broadcaster.StartRecordingToSink(store)
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "my-controller"})

	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "settings"}}
	recorder.Event(cm, v1.EventTypeWarning, "InvalidSpec", `missing required key "mode"`)
	if err := broadcaster.Flush(context.Background()); err != nil {
		fmt.Println("flush:", err)
	}
	recorder.Event(cm, v1.EventTypeWarning, "InvalidSpec", `missing required key "mode"`)
	if err := broadcaster.Flush(context.Background()); err != nil {
		fmt.Println("flush:", err)
	}

	for _, ev := range store.Events() {
		fmt.Printf("%s/%s %s: %s (count %d)\n", ev.InvolvedObject.Namespace, ev.InvolvedObject.Name, ev.Reason, ev.Message, ev.Count)
	}
	fmt.Println("creates:", store.Calls(sinktest.OpCreate), "patches:", store.Calls(sinktest.OpPatch))
	// Output:
	// demo/settings InvalidSpec: missing required key "mode" (count 2)
	// creates: 1 patches: 1
}

// A Fault makes the sink fail like an API server: here the first write
// answers 503, and the delivery engine retries it.
func ExampleSink_SetFault() {
	store := sinktest.New()
	failures := 1
	store.SetFault(func(_ context.Context, op sinktest.Op, ev *v1.Event) error {
		if failures > 0 { // called from one worker at a time for one event
			failures--
			return apierrors.NewServiceUnavailable("etcd is down")
		}
		return nil
	})

	broadcaster := record.NewBroadcaster(record.WithSinkOptions(sink.Options{BaseDelay: time.Millisecond}))
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(store)
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "my-controller"})
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "settings"}}
	recorder.Event(cm, v1.EventTypeNormal, "Synced", `Synced with mode "fast"`)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := broadcaster.Flush(ctx); err != nil {
		fmt.Println("flush:", err)
	}
	for _, call := range store.History() {
		fmt.Printf("%s %s: err=%v\n", call.Op, call.Event.Reason, call.Err)
	}
	s := broadcaster.Stats()
	fmt.Printf("created %d, retried %d, dropped %d\n", s.Created, s.Retried, s.Dropped.Total())
	// Output:
	// create Synced: err=etcd is down
	// create Synced: err=<nil>
	// created 1, retried 1, dropped 0
}

// Run checks a sink of your own against what the delivery engine expects of
// an API server. Call it from a test; here it checks herald's EventSinkImpl
// over client-go's fake clientset.
func ExampleRun() {
	testEventSinkImpl := func(t *testing.T) {
		sinktest.Run(t, func(t *testing.T) (sink.EventSink, string) {
			return &sink.EventSinkImpl{Interface: fake.NewClientset().CoreV1().Events("")}, "default"
		})
	}
	_ = testEventSinkImpl // a test function: func TestMySink(t *testing.T) { ... }
}

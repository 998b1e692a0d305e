package record_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// The examples write to an in-memory sink (a controller passes
// &sink.EventSinkImpl{Interface: clientset.CoreV1().Events("")}) and run on
// a fake clock, so their output is stable. A fake clock never refills a
// token bucket, hence QPS sink.Unlimited.
func exampleOptions() []record.BroadcasterOption {
	return []record.BroadcasterOption{
		record.WithSinkOptions(sink.Options{Clock: clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), QPS: sink.Unlimited}),
	}
}

// A controller's setup: one broadcaster, a sink, a recorder per component.
// Repeats of an event become one stored event with a count.
func ExampleNewBroadcaster() {
	broadcaster := record.NewBroadcaster(exampleOptions()...)
	defer broadcaster.Shutdown() // flushes pending events, then stops every goroutine
	store := sinktest.New()
	broadcaster.StartRecordingToSink(store)
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "my-controller"})

	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "settings"}}
	recorder.Eventf(cm, v1.EventTypeNormal, "Synced", "Synced with mode %q", "fast")
	for range 3 {
		recorder.Eventf(cm, v1.EventTypeWarning, "InvalidSpec", "mode %q is not one of %v", "turbo", []string{"fast", "safe", "off"})
	}

	if err := broadcaster.Flush(context.Background()); err != nil {
		fmt.Println("flush:", err)
	}
	for _, ev := range store.Events() {
		fmt.Printf("%s %s/%s %s: %s (count %d)\n", ev.Type, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Reason, ev.Message, ev.Count)
	}
	// Output:
	// Normal ConfigMap/settings Synced: Synced with mode "fast" (count 1)
	// Warning ConfigMap/settings InvalidSpec: mode "turbo" is not one of [fast safe off] (count 3)
}

// FakeRecorder turns each event into a string on a channel, like client-go's;
// unlike client-go's it never blocks when the channel is full.
func ExampleFakeRecorder() {
	recorder := record.NewFakeRecorder(2)
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "settings"}}

	recorder.Eventf(cm, v1.EventTypeWarning, "InvalidSpec", "mode %q is not one of %v", "turbo", []string{"fast", "safe", "off"})
	recorder.Event(cm, v1.EventTypeNormal, "Synced", "Synced")
	recorder.Event(cm, v1.EventTypeNormal, "Synced", "Synced again") // the channel is full

	fmt.Println(<-recorder.Events)
	fmt.Println(<-recorder.Events)
	fmt.Println("overflow:", recorder.Overflow())
	// Output:
	// Warning InvalidSpec mode "turbo" is not one of [fast safe off]
	// Normal Synced Synced
	// overflow: 1
}

// Flush waits until everything recorded so far has been written (or folded,
// filtered, dropped); ShutdownWithContext flushes, then stops. Every
// recorded event is counted in Stats, including one recorded too late.
func ExampleEventBroadcaster_Flush() {
	broadcaster := record.NewBroadcaster(exampleOptions()...)
	store := sinktest.New()
	broadcaster.StartRecordingToSink(store)
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "my-controller"})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web-0"}}

	recorder.Event(pod, v1.EventTypeNormal, "Started", "Started container web")
	recorder.Event(pod, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container web")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := broadcaster.Flush(ctx); err != nil {
		fmt.Println("flush:", err)
	}
	fmt.Println("stored after Flush:", len(store.Events()))

	recorder.Event(pod, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container web")
	if err := broadcaster.ShutdownWithContext(ctx); err != nil {
		fmt.Println("shutdown:", err) // says how many events were abandoned
	}
	recorder.Event(pod, v1.EventTypeNormal, "Killing", "Stopping container web") // after shutdown: a counted drop

	s := broadcaster.Stats()
	fmt.Printf("recorded %d, created %d, patched+coalesced %d, dropped after shutdown %d, abandoned %d\n",
		s.Recorded, s.Created, s.Patched+s.Coalesced, s.Dropped.AfterShutdown, s.Abandoned)
	for _, ev := range store.Events() {
		fmt.Printf("%s: %s (count %d)\n", ev.Reason, ev.Message, ev.Count)
	}
	// Output:
	// stored after Flush: 2
	// recorded 4, created 2, patched+coalesced 1, dropped after shutdown 1, abandoned 0
	// Started: Started container web (count 1)
	// BackOff: Back-off restarting failed container web (count 2)
}

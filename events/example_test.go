package events_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/heraldk8s/herald/events"
)

// A crash-looping pod's events form one series whose stored count is exact
// once the broadcaster has flushed (here through Shutdown).
func Example() {
	clientset := fake.NewClientset() // a real one: kubernetes.NewForConfig(cfg)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: clientset.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(context.Background()); err != nil {
		panic(err)
	}
	recorder := broadcaster.NewRecorder(scheme.Scheme, "example.com/pod-controller")

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default"}}
	for range 5 {
		recorder.Eventf(pod, nil, v1.EventTypeWarning, "BackOff", "Restart", "back-off restarting container %s", "web")
	}
	broadcaster.Shutdown() // writes what is pending, then stops

	list, _ := clientset.EventsV1().Events("default").List(context.Background(), metav1.ListOptions{})
	for _, e := range list.Items {
		fmt.Println(e.Regarding.Name, e.Type, e.Reason, e.Action, e.Note, e.Series.Count)
	}
	fmt.Println("recorded:", broadcaster.Stats().Recorded)
	// Output:
	// web-0 Warning BackOff Restart back-off restarting container web 5
	// recorded: 5
}

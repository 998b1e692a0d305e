package events_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldk8s/herald/events"
)

// FakeRecorder formats each event as client-go's does and sends it on a
// channel; unlike client-go's it never blocks a test when the channel is
// full: the event is counted in Overflow. For structured assertions, see
// package events/eventstest.
func ExampleNewFakeRecorder() {
	recorder := events.NewFakeRecorder(2)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web-0"}}

	recorder.Eventf(pod, nil, v1.EventTypeWarning, "BackOff", "Restart", "back-off restarting container %s", "web")
	recorder.Eventf(pod, nil, v1.EventTypeNormal, "Started", "Start", "started container %s", "web")
	recorder.Eventf(pod, nil, v1.EventTypeNormal, "Killing", "Stop", "stopping container %s", "web") // the channel is full

	fmt.Println(<-recorder.Events)
	fmt.Println(<-recorder.Events)
	fmt.Println("overflow:", recorder.Overflow())
	// Output:
	// Warning BackOff back-off restarting container web
	// Normal Started started container web
	// overflow: 1
}

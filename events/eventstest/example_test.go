package eventstest_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/events/eventstest"
)

// reconcile stands for the code under test: it records events.k8s.io/v1
// events through the events.EventRecorder it is given (in production, a
// broadcaster's, or a controller-runtime manager's GetEventRecorder).
func reconcile(rec events.EventRecorder, pod *v1.Pod, node *v1.Node) {
	if node.Spec.Unschedulable {
		rec.Eventf(pod, node, v1.EventTypeWarning, "FailedBinding", "Bind", "node %s is cordoned", node.Name)
		return
	}
	rec.Eventf(pod, node, v1.EventTypeNormal, "Bound", "Bind", "bound to %s", node.Name)
}

// A test hands a Recorder to the code under test, then asserts on every
// field of the events (regarding and related objects, action, note).
func ExampleRecorder() {
	rec := eventstest.New()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web-0"}}
	reconcile(rec, pod, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Spec: v1.NodeSpec{Unschedulable: true}})
	reconcile(rec, pod, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}})

	for _, e := range rec.Events() {
		fmt.Printf("%s (action %s, related %s)\n", e, e.Action, e.Related.(*v1.Node).Name)
	}
	failed := rec.WithReason("FailedBinding") // in a test: if len(failed) != 1 { t.Errorf(...) }
	fmt.Println("FailedBinding events:", len(failed), "note:", failed[0].Note)
	// Output:
	// Warning FailedBinding node node-a is cordoned (action Bind, related node-a)
	// Normal Bound bound to node-b (action Bind, related node-b)
	// FailedBinding events: 1 note: node node-a is cordoned
}

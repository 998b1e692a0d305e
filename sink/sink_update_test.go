package sink_test

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/heraldk8s/herald/sink"
)

// TestEventSinkImplUpdate: the engine never calls Update, but a user of
// client-go's EventSink may: it replaces the stored event in the event's
// own namespace (the sink's client is made for all namespaces).
func TestEventSinkImplUpdate(t *testing.T) {
	cs := fake.NewClientset()
	s := &sink.EventSinkImpl{Interface: cs.CoreV1().Events("")}
	ev := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"}, Message: "first", Count: 1}
	if _, err := s.Create(ev); err != nil {
		t.Fatalf("Create: %v", err)
	}
	ev = ev.DeepCopy()
	ev.Message, ev.Count = "second", 2
	got, err := s.Update(ev)
	if err != nil || got.Message != "second" || got.Count != 2 {
		t.Fatalf("Update: %v, %+v", err, got)
	}
	stored, err := cs.CoreV1().Events("ns").Get(context.Background(), "e", metav1.GetOptions{})
	if err != nil || stored.Message != "second" || stored.Count != 2 {
		t.Fatalf("stored after Update: %v, %+v", err, stored)
	}
	missing := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "missing", Namespace: "ns"}}
	if _, err := s.Update(missing); err == nil {
		t.Fatal("Update of an event never created succeeded")
	}
}

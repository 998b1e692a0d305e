package record_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	cgevents "k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/record"
)

// TestEventRecorderAdapterKeepsActionAndRelated: around a herald recorder
// the adapter writes the action and the related object on the core/v1
// event, and the note formatted with its arguments; WithLogger keeps that.
func TestEventRecorderAdapterKeepsActionAndRelated(t *testing.T) {
	e := newEnv(t)
	var a cgevents.EventRecorderLogger = record.NewEventRecorderAdapter(e.rec)
	a = a.WithLogger(klog.Background())
	a.Eventf(pod("ns", "p"), pod("ns", "owner"), v1.EventTypeWarning, "Failed", "Scale", "replicas %d", 3)
	// client-go's AnnotatedEventRecorder (v0.37 and later) by its method
	// set: herald builds with older client-go too (events/annotated.go).
	a.(interface {
		AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...interface{})
	}).AnnotatedEventf(pod("ns", "q"), nil, map[string]string{"k": "v"},
		v1.EventTypeNormal, "Done", "Sync", "ok")
	e.flush()
	evs := e.sink.Events()
	if len(evs) != 2 {
		t.Fatalf("stored %d events", len(evs))
	}
	for _, ev := range evs {
		switch ev.InvolvedObject.Name {
		case "p":
			if ev.Action != "Scale" || ev.Related == nil || ev.Related.Name != "owner" || ev.Message != "replicas 3" || ev.Reason != "Failed" {
				t.Errorf("event %+v", ev)
			}
		case "q":
			if ev.Action != "Sync" || ev.Related != nil || ev.Annotations["k"] != "v" || ev.Message != "ok" {
				t.Errorf("event %+v", ev)
			}
		}
	}
}

// TestEventRecorderAdapterAroundOtherRecorder: around another recorder the
// adapter calls its Eventf with the note and arguments, as client-go's.
func TestEventRecorderAdapterAroundOtherRecorder(t *testing.T) {
	f := record.NewFakeRecorder(2)
	a := record.NewEventRecorderAdapter(f)
	a.Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "n=%d", 1)
	a.AnnotatedEventf(pod("ns", "p"), nil, map[string]string{"k": "v"}, v1.EventTypeNormal, "R", "A", "m")
	if got := <-f.Events; got != "Normal R n=1" {
		t.Fatalf("got %q", got)
	}
	if got := <-f.Events; got != "Normal R m map[k:v]" {
		t.Fatalf("got %q", got)
	}
}

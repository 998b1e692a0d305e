package events

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The core/v1 <-> events.k8s.io/v1 conversion of coreSink is lossless
// (coreSink's doc): every field an events.k8s.io/v1 Event has survives the
// round trip both ways, so the engine, and a user's sink.Options.OnWritten,
// see the server's answer whole.
func TestConversionIsLossless(t *testing.T) {
	at := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	core := &v1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: "ns", Name: "p.1", ResourceVersion: "5", UID: "eu", Annotations: map[string]string{"a": "b"}},
		EventTime:           metav1.NewMicroTime(at),
		ReportingController: "example.com/ctl",
		ReportingInstance:   "ctl-host",
		Action:              "A",
		Reason:              "R",
		InvolvedObject:      v1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p", UID: "u", APIVersion: "v1"},
		Related:             &v1.ObjectReference{Kind: "Node", Name: "n", UID: "nu", APIVersion: "v1"},
		Message:             "note",
		Type:                v1.EventTypeWarning,
		Source:              v1.EventSource{Component: "c", Host: "h"},
		FirstTimestamp:      metav1.NewTime(at),
		LastTimestamp:       metav1.NewTime(at.Add(time.Second)),
		Count:               3,
		Series:              &v1.EventSeries{Count: 4, LastObservedTime: metav1.NewMicroTime(at.Add(2 * time.Second))},
	}
	if got := fromEventsV1(toEventsV1(core)); !reflect.DeepEqual(got, core) {
		t.Errorf("core -> events.k8s.io/v1 -> core:\n got %+v\nwant %+v", got, core)
	}
	ev := toEventsV1(core)
	want := &eventsv1.Event{
		ObjectMeta: core.ObjectMeta, EventTime: core.EventTime, Series: &eventsv1.EventSeries{Count: 4, LastObservedTime: core.Series.LastObservedTime},
		ReportingController: core.ReportingController, ReportingInstance: core.ReportingInstance, Action: "A", Reason: "R",
		Regarding: core.InvolvedObject, Related: core.Related, Note: "note", Type: v1.EventTypeWarning,
		DeprecatedSource: core.Source, DeprecatedFirstTimestamp: core.FirstTimestamp, DeprecatedLastTimestamp: core.LastTimestamp, DeprecatedCount: 3,
	}
	if !reflect.DeepEqual(ev, want) {
		t.Errorf("core -> events.k8s.io/v1:\n got %+v\nwant %+v", ev, want)
	}
	if got := toEventsV1(fromEventsV1(want)); !reflect.DeepEqual(got, want) {
		t.Errorf("events.k8s.io/v1 -> core -> events.k8s.io/v1:\n got %+v\nwant %+v", got, want)
	}
}

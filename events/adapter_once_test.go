package events_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The adapter starts its core/v1 sink once, however often
// StartRecordingToSink is called (client-go starts it every time, and then
// writes each legacy event once per call).
func TestAdapterStartsLegacySinkOnce(t *testing.T) {
	cs := fake.NewClientset()
	servesEventsV1(cs)
	a := newAdapter(t, cs) // started once
	stop := make(chan struct{})
	a.StartRecordingToSink(stop) // refused for events.k8s.io/v1: it still records
	close(stop)
	a.StartRecordingToSink(nil)
	a.DeprecatedNewLegacyRecorder("legacy-ctl").Eventf(pod("ns", "p"), v1.EventTypeNormal, "Legacy", "legacy")
	flushAdapter(t, a)
	s := a.(flusher).LegacyStats()
	if s.Offered != 1 || s.Created != 1 || s.Dropped.Total() != 0 {
		t.Errorf("legacy stats %+v: want the event offered to one sink and created once", s)
	}
	if evs := coreEvents(t, cs); len(evs) != 1 {
		t.Errorf("%d core/v1 events, want 1", len(evs))
	}
}

package events

import (
	"math"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func seriesTestEvent() *v1.Event {
	return &v1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: "ns", Name: "p.1"},
		InvolvedObject:      v1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p", UID: "u"},
		Type:                v1.EventTypeWarning,
		Reason:              "R",
		Action:              "A",
		ReportingController: "ctl",
		ReportingInstance:   "ctl-host",
	}
}

// A series is open for exactly finishTime after its last occurrence, as
// client-go's (it ends a series whose lastObservedTime is before
// now-finishTime): an occurrence finishTime after the last one still
// continues it, one a nanosecond later starts a new event.
func TestSeriesOpenUpToFinishTimeInclusive(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC))
	s := newSeriesCorrelator(clk, defaultCacheSize).session()
	if res, err := s.EventCorrelate(seriesTestEvent()); err != nil || res.Patch != nil {
		t.Fatalf("first: %+v, %v; want a create", res, err)
	}
	clk.Step(finishTime)
	res, err := s.EventCorrelate(seriesTestEvent())
	if err != nil || res.Patch == nil || res.Event.Series == nil || res.Event.Series.Count != 2 {
		t.Fatalf("finishTime after the last: %+v, %v; want the series patched to count 2", res, err)
	}
	clk.Step(finishTime + time.Nanosecond)
	res, err = s.EventCorrelate(seriesTestEvent())
	if err != nil || res.Patch != nil || res.Event.Series != nil {
		t.Fatalf("finishTime+1ns after the last: %+v, %v; want a new event (a create)", res, err)
	}
}

// A series' count saturates at math.MaxInt32: it never wraps to a
// negative count, which the API server would refuse.
func TestSeriesCountSaturates(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC))
	c := newSeriesCorrelator(clk, defaultCacheSize)
	s := c.session()
	ev := seriesTestEvent()
	if _, err := s.EventCorrelate(ev); err != nil {
		t.Fatal(err)
	}
	v, ok := c.cache.Get(seriesKey(ev))
	if !ok {
		t.Fatal("series not cached")
	}
	v.(*series).count = math.MaxInt32 - 1
	for i, want := range []int32{math.MaxInt32, math.MaxInt32} {
		clk.Step(time.Second)
		res, err := s.EventCorrelate(seriesTestEvent())
		if err != nil || res.Event.Series == nil {
			t.Fatalf("occurrence %d: %+v, %v", i, res, err)
		}
		if got := res.Event.Series.Count; got != want {
			t.Errorf("occurrence %d: count %d, want %d", i, got, want)
		}
		if want := seriesPatch(want, res.Event.Series.LastObservedTime); string(res.Patch) != string(want) {
			t.Errorf("occurrence %d: patch %s, want %s", i, res.Patch, want)
		}
	}
}

// seriesKey is client-go's: every field of the type, action, reason,
// reporting controller and instance, and of the regarding and related
// references tells two events apart; the note and annotations do not.
func TestSeriesKeyFields(t *testing.T) {
	base := func() *v1.Event {
		ev := seriesTestEvent()
		ev.InvolvedObject = v1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p", UID: "u", APIVersion: "v1", ResourceVersion: "7", FieldPath: "spec"}
		ev.Related = &v1.ObjectReference{Kind: "Node", Namespace: "", Name: "n", UID: "nu", APIVersion: "v1", ResourceVersion: "9", FieldPath: "status"}
		return ev
	}
	key := seriesKey(base())
	for name, change := range map[string]func(*v1.Event){
		"type":                      func(e *v1.Event) { e.Type = v1.EventTypeNormal },
		"action":                    func(e *v1.Event) { e.Action = "B" },
		"reason":                    func(e *v1.Event) { e.Reason = "S" },
		"reportingController":       func(e *v1.Event) { e.ReportingController = "other" },
		"reportingInstance":         func(e *v1.Event) { e.ReportingInstance = "other" },
		"regarding.kind":            func(e *v1.Event) { e.InvolvedObject.Kind = "X" },
		"regarding.namespace":       func(e *v1.Event) { e.InvolvedObject.Namespace = "x" },
		"regarding.name":            func(e *v1.Event) { e.InvolvedObject.Name = "x" },
		"regarding.uid":             func(e *v1.Event) { e.InvolvedObject.UID = "x" },
		"regarding.apiVersion":      func(e *v1.Event) { e.InvolvedObject.APIVersion = "x" },
		"regarding.resourceVersion": func(e *v1.Event) { e.InvolvedObject.ResourceVersion = "x" },
		"regarding.fieldPath":       func(e *v1.Event) { e.InvolvedObject.FieldPath = "x" },
		"related.kind":              func(e *v1.Event) { e.Related.Kind = "X" },
		"related.namespace":         func(e *v1.Event) { e.Related.Namespace = "x" },
		"related.name":              func(e *v1.Event) { e.Related.Name = "x" },
		"related.uid":               func(e *v1.Event) { e.Related.UID = "x" },
		"related.apiVersion":        func(e *v1.Event) { e.Related.APIVersion = "x" },
		"related.resourceVersion":   func(e *v1.Event) { e.Related.ResourceVersion = "x" },
		"related.fieldPath":         func(e *v1.Event) { e.Related.FieldPath = "x" },
		"related nil":               func(e *v1.Event) { e.Related = nil },
	} {
		ev := base()
		change(ev)
		if seriesKey(ev) == key {
			t.Errorf("changing %s leaves the series key unchanged", name)
		}
	}
	ev := base()
	ev.Message, ev.Annotations, ev.Name = "another note", map[string]string{"a": "b"}, "other.2"
	if seriesKey(ev) != key {
		t.Error("the note, annotations or name changed the series key")
	}
}

// The patch carries lastObservedTime as client-go's MicroTime marshals
// it: RFC 3339 with microseconds, in UTC, whatever the clock's zone.
func TestSeriesPatchTimeInUTC(t *testing.T) {
	at := time.Date(2026, 11, 22, 4, 0, 0, 123456789, time.FixedZone("CET", 3600))
	got := string(seriesPatch(3, metav1.NewMicroTime(at)))
	want := `{"series":{"count":3,"lastObservedTime":"2026-11-22T03:00:00.123456Z"}}`
	if got != want {
		t.Errorf("seriesPatch = %s, want %s", got, want)
	}
	// The same string client-go's JSON encoding gives the field.
	b, err := metav1.NewMicroTime(at).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if w := `{"series":{"count":3,"lastObservedTime":` + string(b) + `}}`; got != w {
		t.Errorf("seriesPatch = %s, MicroTime marshals %s", got, b)
	}
}

package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2/ktesting"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// one checks that evs holds exactly one event and returns it.
func one(evs []eventsv1.Event) error {
	if len(evs) != 1 {
		return fmt.Errorf("%d events, want 1", len(evs))
	}
	return nil
}

// TestEventsV1Edges checks what the real server stores in the less common
// cases: a series whose event was deleted (or expired), fields longer than
// the server accepts, an object name that is no valid event name,
// annotations, and a series about a cluster-scoped object.
func TestEventsV1Edges(t *testing.T) {
	cs := adminClient(t)
	ns := env.CreateNamespace(t, "ev-edges")
	h := newEvHarness(t, evSink(t, env.Admin))

	t.Run("series of a deleted event is created again", func(t *testing.T) {
		ref := podRef(ns, "gone")
		h.rec.Eventf(ref, nil, v1.EventTypeWarning, "BackOff", defaultAction, "Back-off")
		h.flush(flushTimeout)
		sel := metav1.ListOptions{FieldSelector: "regarding.name=gone"}
		first := waitV1(t, cs, ns, sel, one)[0]
		if err := cs.EventsV1().Events(ns).Delete(t.Context(), first.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("deleting %s: %v", first.Name, err)
		}
		waitV1(t, cs, ns, sel, countV1(map[string]int32{}))
		for range 2 {
			h.rec.Eventf(ref, nil, v1.EventTypeWarning, "BackOff", defaultAction, "Back-off")
		}
		s := h.flush(flushTimeout)
		if s.Dropped.Total() != 0 {
			t.Errorf("stats %+v: want nothing dropped", s)
		}
		// client-go: the patch's 404 makes a create of the whole event,
		// series included, under the first occurrence's name.
		e := waitV1(t, cs, ns, sel, countV1(map[string]int32{"gone": 3}))[0]
		if e.Name != first.Name || e.Note != first.Note || !e.EventTime.Equal(&first.EventTime) {
			t.Errorf("re-created event %s (note %q, eventTime %v), want %s (note %q, eventTime %v)",
				e.Name, e.Note, e.EventTime, first.Name, first.Note, first.EventTime)
		}
	})

	t.Run("fields longer than the server accepts are cut", func(t *testing.T) {
		// A qualified name: a 200-byte DNS prefix and a 63-byte name.
		controller := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + ".example.com/" + strings.Repeat("d", 63)
		rec := h.eb.NewRecorder(scheme.Scheme, controller)
		rec.Eventf(podRef(ns, "long"), nil, v1.EventTypeWarning, strings.Repeat("R", 200), strings.Repeat("A", 200), "%s", strings.Repeat("é", 1000))
		s := h.flush(flushTimeout)
		if s.Dropped.Total() != 0 {
			t.Fatalf("stats %+v: want nothing dropped", s)
		}
		e := waitV1(t, cs, ns, metav1.ListOptions{FieldSelector: "regarding.name=long"}, one)[0]
		if len(e.Reason) != 128 || len(e.Action) != 128 ||
			len(e.ReportingInstance) != 128 || len(e.Note) > 1024 || len(e.Note) < 1024-1 {
			t.Errorf("lengths: reason %d, action %d, reportingInstance %d, note %d bytes; want %d, %d, %d, %d",
				len(e.Reason), len(e.Action), len(e.ReportingInstance), len(e.Note),
				128, 128, 128, 1024)
		}
		if e.ReportingController != controller || !strings.HasPrefix(controller+"-", e.ReportingInstance) {
			t.Errorf("reportingController %q, reportingInstance %q", e.ReportingController, e.ReportingInstance)
		}
	})

	t.Run("object name that is no valid event name", func(t *testing.T) {
		ref := &v1.ObjectReference{Kind: "Widget", APIVersion: "example.com/v1", Namespace: ns, Name: "Web_0", UID: types.UID("uid-web-0")}
		h.rec.Eventf(ref, nil, v1.EventTypeNormal, "Synced", defaultAction, "synced")
		s := h.flush(flushTimeout)
		if s.Dropped.Total() != 0 {
			t.Fatalf("stats %+v: want nothing dropped", s)
		}
		e := waitV1(t, cs, ns, metav1.ListOptions{FieldSelector: "regarding.uid=uid-web-0"}, one)[0]
		if e.Regarding.Name != "Web_0" {
			t.Errorf("regarding name %q", e.Regarding.Name)
		}
		t.Logf("event name %q", e.Name)
	})

	t.Run("annotations", func(t *testing.T) {
		ann := map[string]string{"example.com/trace-id": "abc123"}
		h.rec.(events.AnnotatedEventRecorder).AnnotatedEventf(podRef(ns, "annotated"), nil, ann, v1.EventTypeNormal, "Traced", defaultAction, "traced")
		h.flush(flushTimeout)
		e := waitV1(t, cs, ns, metav1.ListOptions{FieldSelector: "regarding.name=annotated"}, one)[0]
		if e.Annotations["example.com/trace-id"] != "abc123" {
			t.Errorf("annotations %v, want %v", e.Annotations, ann)
		}
	})

	t.Run("series about a cluster-scoped object", func(t *testing.T) {
		node := &v1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: "herald-it-evnode-" + randSuffix(), UID: types.UID("uid-node-" + randSuffix())}
		for range 3 {
			h.rec.Eventf(node, nil, v1.EventTypeWarning, "NodeNotReady", "Probe", "kubelet stopped posting status")
		}
		h.flush(flushTimeout)
		e := waitV1(t, cs, metav1.NamespaceDefault, metav1.ListOptions{FieldSelector: "regarding.uid=" + string(node.UID)}, one)[0]
		if occurrences(e) != 3 {
			t.Errorf("series %+v, want count 3", e.Series)
		}
	})
}

// TestEventsV1StopRecordingByContext ends the context given to
// StartRecordingToSinkWithContext right after recording: what was recorded
// before is still written, and recording may start again.
func TestEventsV1StopRecordingByContext(t *testing.T) {
	const n = 1000
	cs := adminClient(t)
	ns := env.CreateNamespace(t, "ev-stop-ctx")
	logger := ktesting.NewLogger(t, ktesting.NewConfig())
	eb := events.NewBroadcaster(evSink(t, env.Admin), events.WithBroadcasterOptions(record.WithLogger(logger), record.WithSinkOptions(sink.Options{QPS: sink.Unlimited, Workers: 8})))
	t.Cleanup(eb.Shutdown)
	ctx, cancel := context.WithCancel(context.Background())
	if err := eb.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	rec := eb.NewRecorder(scheme.Scheme, evController)
	want := map[string]int32{}
	for i := range n {
		name := fmt.Sprintf("pod-%03d", i)
		want[name] = 1
		rec.Eventf(podRef(ns, name), nil, v1.EventTypeNormal, "Started", defaultAction, "Started")
	}
	cancel()
	check.Eventually(t, "all events written after the context ended", func() error {
		if s := eb.Stats(); written(s) != n || s.Offered != n {
			return fmt.Errorf("stats %+v", s)
		}
		return nil
	})
	waitV1(t, cs, ns, metav1.ListOptions{}, countV1(want))

	// Recording again, to the same sink.
	if err := eb.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatalf("StartRecordingToSinkWithContext after the first context ended: %v", err)
	}
	rec.Eventf(podRef(ns, "again"), nil, v1.EventTypeNormal, "Started", defaultAction, "Started")
	fctx, fcancel := context.WithTimeout(context.Background(), flushTimeout)
	defer fcancel()
	if err := eb.Flush(fctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	want["again"] = 1
	waitV1(t, cs, ns, metav1.ListOptions{}, countV1(want))
	if s := eb.Stats(); s.Dropped.Total() != 0 || s.Abandoned != 0 {
		t.Errorf("stats %+v: want nothing dropped or abandoned", s)
	}
}

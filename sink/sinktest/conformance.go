package sinktest

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldk8s/herald/sink"
)

// Run checks that an EventSink behaves as herald's delivery engine expects
// of an API server: Create returns the stored event, a second Create of the
// same name fails with a class that drops it (AlreadyExists), Patch applies
// a strategic-merge patch of count, lastTimestamp and message, and Patch of
// a missing event asks for a Create (NotFound). newSink is called once per
// subtest and returns the sink and the namespace to write in.
//
// Use it to check a sink of your own, like testing/slogtest checks a
// slog.Handler.
func Run(t *testing.T, newSink func(t *testing.T) (sink.EventSink, string)) {
	t.Helper()
	stamp := time.Now().UTC().Truncate(time.Second)
	event := func(ns, name string) *v1.Event {
		return &v1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: name},
			InvolvedObject: v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: "conformance"},
			Reason:         "Conformance", Message: "first", Type: v1.EventTypeNormal, Count: 1,
			FirstTimestamp: metav1.NewTime(stamp), LastTimestamp: metav1.NewTime(stamp),
			Source: v1.EventSource{Component: "sinktest"},
		}
	}
	t.Run("CreateReturnsStoredEvent", func(t *testing.T) {
		s, ns := newSink(t)
		out, err := s.Create(event(ns, "create.1"))
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		if out == nil || out.Name != "create.1" || out.Namespace != ns || out.Count != 1 || out.Message != "first" {
			t.Fatalf("Create returned %+v", out)
		}
	})
	t.Run("CreateTwiceIsPermanent", func(t *testing.T) {
		s, ns := newSink(t)
		if _, err := s.Create(event(ns, "twice.1")); err != nil {
			t.Fatalf("Create: %v", err)
		}
		_, err := s.Create(event(ns, "twice.1"))
		if !apierrors.IsAlreadyExists(err) {
			t.Fatalf("second Create: %v, want AlreadyExists (which the engine counts as an already_exists drop)", err)
		}
	})
	t.Run("PatchUpdatesCountAndMessage", func(t *testing.T) {
		s, ns := newSink(t)
		ev := event(ns, "patch.1")
		if _, err := s.Create(ev); err != nil {
			t.Fatalf("Create: %v", err)
		}
		later := stamp.Add(time.Minute)
		data := fmt.Appendf(nil, `{"count":7,"lastTimestamp":%q,"message":"seventh"}`, later.Format(time.RFC3339))
		out, err := s.Patch(ev, data)
		if err != nil {
			t.Fatalf("Patch: %v", err)
		}
		if out == nil || out.Count != 7 || out.Message != "seventh" || !out.LastTimestamp.Time.Equal(later) || !out.FirstTimestamp.Time.Equal(stamp) {
			t.Fatalf("Patch returned %+v", out)
		}
	})
	t.Run("PatchMissingAsksForCreate", func(t *testing.T) {
		s, ns := newSink(t)
		_, err := s.Patch(event(ns, "missing.1"), []byte(`{"count":2}`))
		if !apierrors.IsNotFound(err) {
			t.Fatalf("Patch of a missing event: %v, want NotFound (on which the engine creates the event instead)", err)
		}
	})
}

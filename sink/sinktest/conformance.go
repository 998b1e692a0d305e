package sinktest

import (
	"context"
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
// and stores a strategic-merge patch of count, lastTimestamp and message,
// and Patch of a missing event asks for a Create (NotFound). Each check
// runs through Create and Patch (subtest "plain") and, for a
// sink.ContextEventSink, through CreateContext and PatchContext too
// (subtest "context"): the engine writes through those when a sink has
// them. newSink is called once per check and returns the sink and the
// namespace to write in.
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
	// check runs f once per path of the sink newSink returns, each with
	// event names of its own.
	check := func(name string, f func(t *testing.T, w writes, ns, name string)) {
		t.Run(name, func(t *testing.T) {
			s, ns := newSink(t)
			for _, w := range pathsOf(s) {
				t.Run(w.path, func(t *testing.T) { f(t, w, ns, w.path) })
			}
		})
	}
	check("CreateReturnsStoredEvent", func(t *testing.T, w writes, ns, name string) {
		name = "create." + name
		out, err := w.create(event(ns, name))
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		if out == nil || out.Name != name || out.Namespace != ns || out.Count != 1 || out.Message != "first" {
			t.Fatalf("Create returned %+v", out)
		}
	})
	check("CreateTwiceIsPermanent", func(t *testing.T, w writes, ns, name string) {
		name = "twice." + name
		if _, err := w.create(event(ns, name)); err != nil {
			t.Fatalf("Create: %v", err)
		}
		_, err := w.create(event(ns, name))
		if !apierrors.IsAlreadyExists(err) {
			t.Fatalf("second Create: %v, want AlreadyExists (which the engine counts as an already_exists drop)", err)
		}
	})
	check("PatchUpdatesCountAndMessage", func(t *testing.T, w writes, ns, name string) {
		ev := event(ns, "patch."+name)
		if _, err := w.create(ev); err != nil {
			t.Fatalf("Create: %v", err)
		}
		later := stamp.Add(time.Minute)
		data := fmt.Appendf(nil, `{"count":7,"lastTimestamp":%q,"message":"seventh"}`, later.Format(time.RFC3339))
		out, err := w.patch(ev, data)
		if err != nil {
			t.Fatalf("Patch: %v", err)
		}
		if out == nil || out.Count != 7 || out.Message != "seventh" || !out.LastTimestamp.Time.Equal(later) || !out.FirstTimestamp.Time.Equal(stamp) {
			t.Fatalf("Patch returned %+v", out)
		}
		// The patch was stored: a patch of the message alone keeps count 7.
		out, err = w.patch(ev, []byte(`{"message":"eighth"}`))
		if err != nil || out == nil || out.Count != 7 || out.Message != "eighth" {
			t.Fatalf("second Patch returned %+v, %v: the first patch was not stored", out, err)
		}
	})
	check("PatchMissingAsksForCreate", func(t *testing.T, w writes, ns, name string) {
		_, err := w.patch(event(ns, "missing."+name), []byte(`{"count":2}`))
		if !apierrors.IsNotFound(err) {
			t.Fatalf("Patch of a missing event: %v, want NotFound (on which the engine creates the event instead)", err)
		}
	})
}

// writes is one way of writing through a sink: Create and Patch, or their
// context variants.
type writes struct {
	path   string
	create func(*v1.Event) (*v1.Event, error)
	patch  func(*v1.Event, []byte) (*v1.Event, error)
}

// pathsOf returns the ways the engine may write through s.
func pathsOf(s sink.EventSink) []writes {
	out := []writes{{path: "plain", create: s.Create, patch: s.Patch}}
	if cs, ok := s.(sink.ContextEventSink); ok {
		ctx := context.Background()
		out = append(out, writes{path: "context",
			create: func(e *v1.Event) (*v1.Event, error) { return cs.CreateContext(ctx, e) },
			patch:  func(e *v1.Event, d []byte) (*v1.Event, error) { return cs.PatchContext(ctx, e, d) },
		})
	}
	return out
}

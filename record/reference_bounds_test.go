package record_test

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/heraldk8s/herald/sink/sinktest"
)

// The involved object's namespace must be a DNS-1123 label (recorder.go:
// a cut or invalid reference would name another object, or be refused by
// the server): up to 63 bytes, no leading or trailing '-'. Its other fields
// are at most 1024 bytes. A reference that breaks a rule is a counted
// invalid drop; one at the bounds is written.
func TestReferenceBoundsAtTheEdge(t *testing.T) {
	ns63 := strings.Repeat("n", 63)
	if errs := validation.IsDNS1123Label(ns63); len(errs) > 0 {
		t.Fatalf("test namespace: %v", errs)
	}
	long := strings.Repeat("f", 1025)
	for _, tc := range []struct {
		name  string
		ref   *v1.ObjectReference
		valid bool
	}{
		{"namespace of 63 bytes", &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns63, Name: "p"}, true},
		{"namespace of 64 bytes", &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns63 + "n", Name: "p"}, false},
		{"namespace with a trailing dash", &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns-", Name: "p"}, false},
		{"namespace with a leading dash", &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "-ns", Name: "p"}, false},
		{"namespace with an inner dash", &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "n-s", Name: "p"}, true},
		{"fieldPath of 1024 bytes", &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "p", FieldPath: long[1:]}, true},
		{"fieldPath of 1025 bytes", &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "p", FieldPath: long}, false},
		{"resourceVersion of 1025 bytes", &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "p", ResourceVersion: long}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.rec.Event(tc.ref, v1.EventTypeNormal, "R", "m")
			e.flush()
			s := e.eb.Stats()
			if tc.valid && (s.Created != 1 || s.Dropped.Invalid != 0) {
				t.Errorf("stats %+v: want the event written", s)
			}
			if !tc.valid && (s.Created != 0 || s.Dropped.Invalid != 1) {
				t.Errorf("stats %+v: want one invalid drop", s)
			}
		})
	}
}

// A shutdown that abandons a single event says so at error level, as it
// does for more.
func TestShutdownLogsASingleAbandonedEvent(t *testing.T) {
	e := newEnv(t)
	e.sink.SetFault(func(ctx context.Context, _ sinktest.Op, _ *v1.Event) error {
		<-ctx.Done()
		return ctx.Err()
	})
	e.rec.Event(pod("ns", "p"), v1.EventTypeNormal, "R", "m")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := e.eb.ShutdownWithContext(ctx)
	if err == nil || !strings.Contains(err.Error(), "abandoned 1 events") {
		t.Fatalf("ShutdownWithContext = %v, want 1 event abandoned", err)
	}
	if logs := e.logs(); !strings.Contains(logs, "Event broadcaster shut down before every event was written") || strings.Contains(logs, "every event accounted for") {
		t.Errorf("want the abandoned event logged at error level, got:\n%s", logs)
	}
}

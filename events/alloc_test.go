package events_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/heraldk8s/herald/events"
)

// TestEventfAllocations holds the caller's path of Eventf, with nothing
// attached, to two allocations of its own (the event and its note; the name
// is made by the broadcaster's loop) plus the caller's argument box.
func TestEventfAllocations(t *testing.T) {
	b := events.NewBroadcaster(nil)
	defer b.Shutdown()
	rec := b.NewRecorder(scheme.Scheme, "example.com/c")
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	allocs := testing.AllocsPerRun(1000, func() { rec.Eventf(p, nil, v1.EventTypeNormal, "R", "A", "key %q", "mode") })
	if !raceEnabled && allocs > 3 {
		t.Fatalf("Eventf allocates %v times, want at most 3 (event, note, the caller's argument box)", allocs)
	}
}

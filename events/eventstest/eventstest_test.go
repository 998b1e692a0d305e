package eventstest_test

import (
	"fmt"
	"sync"
	"testing"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cgevents "k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/events/eventstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	_ cgevents.EventRecorderLogger  = (*eventstest.Recorder)(nil)
	_ events.AnnotatedEventRecorder = (*eventstest.Recorder)(nil)
)

func TestRecorder(t *testing.T) {
	var r eventstest.Recorder // zero value ready
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	rec := r.WithLogger(klog.Background())
	rec.Eventf(p, n, v1.EventTypeWarning, "Failed", "Sync", "failed %d times", 3)
	ann := map[string]string{"k": "v"}
	rec.(events.AnnotatedEventRecorder).AnnotatedEventf(p, nil, ann, v1.EventTypeNormal, "Synced", "Sync", "100%")
	ann["k"] = "changed"

	got := r.Events()
	if len(got) != 2 {
		t.Fatalf("got %d events", len(got))
	}
	if e := got[0]; e.Regarding != p || e.Related != n || e.Type != "Warning" || e.Reason != "Failed" || e.Action != "Sync" ||
		e.Note != "failed 3 times" || e.Annotations != nil || e.String() != "Warning Failed failed 3 times" {
		t.Errorf("first %+v", e)
	}
	if e := got[1]; e.Related != nil || e.Annotations["k"] != "v" || e.Note != "100%!(NOVERB)" {
		t.Errorf("second %+v", e)
	}
	if w := r.WithReason("Synced"); len(w) != 1 || w[0].Reason != "Synced" {
		t.Errorf("WithReason %+v", w)
	}
	if w := r.WithReason("none"); len(w) != 0 {
		t.Errorf("WithReason %+v", w)
	}
	got[0].Reason = "mutated"
	if r.Events()[0].Reason != "Failed" {
		t.Error("Events does not return a copy")
	}
	r.Reset()
	if len(r.Events()) != 0 {
		t.Error("Reset kept events")
	}
}

func TestRecorderConcurrent(t *testing.T) {
	r := eventstest.New()
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				r.Eventf(nil, nil, v1.EventTypeNormal, fmt.Sprint("R", g), "A", "n")
				_ = r.WithReason("R0")
			}
		}()
	}
	wg.Wait()
	if n := len(r.Events()); n != 1600 {
		t.Errorf("got %d", n)
	}
	if n := len(r.WithReason("R3")); n != 100 {
		t.Errorf("R3: %d", n)
	}
}

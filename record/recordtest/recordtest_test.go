package recordtest_test

import (
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/record/recordtest"
)

func TestRecorderKeepsEvents(t *testing.T) {
	r := recordtest.New()
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	ann := map[string]string{"k": "v"}
	r.Eventf(p, v1.EventTypeWarning, "InvalidSpec", "mode %q", "x")
	r.WithLogger(klog.Background()).AnnotatedEventf(&v1.ObjectReference{Namespace: "ns2", Name: "ref"}, ann, v1.EventTypeNormal, "Synced", "ok")
	var nilPod *v1.Pod
	r.Event(nilPod, v1.EventTypeNormal, "Nil", "typed nil does not panic")
	ann["k"] = "changed"
	evs := r.Events()
	if len(evs) != 3 {
		t.Fatalf("%d events", len(evs))
	}
	if e := evs[0]; e.Namespace != "ns" || e.Name != "p" || e.String() != `Warning InvalidSpec mode "x"` {
		t.Fatalf("event 0: %+v", e)
	}
	if e := evs[1]; e.Namespace != "ns2" || e.Name != "ref" || e.Annotations["k"] != "v" {
		t.Fatalf("event 1: %+v", e)
	}
	if got := r.WithReason("Synced"); len(got) != 1 {
		t.Fatalf("WithReason: %v", got)
	}
	r.Reset()
	if len(r.Events()) != 0 {
		t.Fatal("Reset kept events")
	}
}

func TestRecorderConcurrentUse(t *testing.T) {
	var r recordtest.Recorder
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				r.Event(&v1.Pod{}, v1.EventTypeNormal, "R", "m")
			}
		})
	}
	wg.Wait()
	if n := len(r.Events()); n != 800 {
		t.Fatalf("%d events", n)
	}
}

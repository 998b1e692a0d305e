package events_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/record/metrics"
	"github.com/heraldk8s/herald/sink"
)

// TestMetrics: record/metrics serves an events.k8s.io/v1 broadcaster as it
// serves a core/v1 one: a series of three is one create and one patch (the
// repeats between folded into it), an event without an action is an
// invalid drop.
func TestMetrics(t *testing.T) {
	cs := fake.NewClientset()
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()}, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited})),
		events.WithSeriesInterval(time.Hour))
	defer b.Shutdown()
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := b.NewRecorder(scheme.Scheme, "example.com/ctl")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.Eventf(pod, nil, v1.EventTypeNormal, "Pulled", "Pull", "image")
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	r.Eventf(pod, nil, v1.EventTypeNormal, "Pulled", "Pull", "image")
	r.Eventf(pod, nil, v1.EventTypeNormal, "Pulled", "Pull", "image")
	r.Eventf(pod, nil, v1.EventTypeNormal, "Pulled", "", "no action")
	if err := b.Flush(ctx); err != nil { // the hour-long interval does not hold Flush
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(b, nil))
	want := `
# HELP herald_events_recorded_total Events passed to a recorder (Event, Eventf, AnnotatedEventf).
# TYPE herald_events_recorded_total counter
herald_events_recorded_total 4
# HELP herald_events_written_total Successful event writes to the API server.
# TYPE herald_events_written_total counter
herald_events_written_total{op="create"} 1
herald_events_written_total{op="patch"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "herald_events_recorded_total", "herald_events_written_total"); err != nil {
		t.Fatal(err)
	}
	if s := b.Stats(); s.Coalesced != 1 || s.Dropped.Invalid != 1 {
		t.Fatalf("stats %+v", s)
	}
	l, err := cs.EventsV1().Events("ns").List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 || l.Items[0].Series == nil || l.Items[0].Series.Count != 3 {
		t.Fatalf("stored %+v, %v", l, err)
	}
}

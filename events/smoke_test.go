package events_test

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

func TestSeriesSmoke(t *testing.T) {
	cs := fake.NewClientset()
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()}, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited})))
	defer b.Shutdown()
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := b.NewRecorder(scheme.Scheme, "example.com/ctl")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	for i := 0; i < 5; i++ {
		r.Eventf(pod, nil, v1.EventTypeWarning, "Failed", "Sync", "note %d", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := cs.EventsV1().Events("ns").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 {
		t.Fatalf("got %d events", len(l.Items))
	}
	e := l.Items[0]
	if e.Series == nil || e.Series.Count != 5 || e.Note != "note 0" || e.Action != "Sync" {
		t.Fatalf("got %+v", e)
	}
	t.Logf("%+v", b.Stats())
}

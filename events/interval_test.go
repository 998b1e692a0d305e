package events_test

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// TestSeriesIntervalSpacesWrites: a series repeated every 100 ms for 10 s
// is patched about once per series interval (2 s), not once per repeat,
// and the stored count is exact after Flush.
func TestSeriesIntervalSpacesWrites(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cs := fake.NewClientset()
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()},
		events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{Clock: clk, QPS: sink.Unlimited})))
	defer b.Shutdown()
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := b.NewRecorder(scheme.Scheme, "example.com/ctl")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 100; i++ {
		r.Eventf(pod, nil, v1.EventTypeWarning, "BackOff", "Restart", "crash")
		// Let the pipeline take the event and the engine finish what it
		// may send now, so the clock moves past settled states only.
		settled(t, b, int64(i+1))
		clk.Step(100 * time.Millisecond)
	}
	s := b.Stats()
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	after := b.Stats()
	if s.Patched > 6 {
		t.Fatalf("%d patches during 10 s with a 2 s interval, want at most 6", s.Patched)
	}
	if after.Created != 1 || after.Created+after.Patched+after.Coalesced != 100 {
		t.Fatalf("stats %+v", after)
	}
	l, err := cs.EventsV1().Events("ns").List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 || l.Items[0].Series == nil || l.Items[0].Series.Count != 100 {
		t.Fatalf("stored %+v, %v", l, err)
	}
}

// settled waits until the broadcaster's sink has taken n events and has no
// write under way.
func settled(t *testing.T, b events.EventBroadcaster, n int64) {
	t.Helper()
	check.Eventually(t, "the pipeline to settle", func() error {
		s := b.Stats()
		return check.Errorf(s.Offered >= n && s.Queued == 0 && s.InFlight == 0 && s.Created+s.Patched+s.Coalesced+s.Pending >= n,
			"offered %d, queued %d, in flight %d, written or pending %d; want %d offered, %d written or pending, none queued or in flight; stats %+v",
			s.Offered, s.Queued, s.InFlight, s.Created+s.Patched+s.Coalesced+s.Pending, n, n, s)
	})
}

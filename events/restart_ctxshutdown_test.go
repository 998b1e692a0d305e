package events_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// The broadcaster's context (record.WithContext; the adapter always has
// one) ends while recording restarts: the events held for the new sink,
// recorded after a start that succeeded, are queued once the old sink has
// stopped, and the new sink never starts (the broadcaster is stopping), so
// they reach no sink: not written, not abandoned, not dropped.
func TestContextShutdownDuringRestartLosesHeldEvents(t *testing.T) {
	for round := range 2 { // a round may miss the window: the old sink stopped before the context ended
		t.Run(fmt.Sprint(round), contextShutdownDuringRestart)
		if t.Failed() {
			return
		}
	}
}

func contextShutdownDuringRestart(t *testing.T) {
	s := newMemSink()
	bctx, bcancel := context.WithCancel(context.Background())
	defer bcancel()
	b := events.NewBroadcaster(s, events.WithBroadcasterOptions(
		record.WithContext(bctx),
		record.WithSinkOptions(sink.Options{QPS: sink.Unlimited, Workers: 8, MaxPending: 1 << 20}),
		record.WithQueueLength(1<<20), record.WithShutdownGracePeriod(time.Minute), record.WithLogger(klogDiscard())))
	defer b.Shutdown()
	r := b.NewRecorder(scheme.Scheme, "example.com/ctl")
	for range 32 { // slow the broadcaster's loop: a backlog builds up
		if _, err := b.StartEventWatcher(func(runtime.Object) {}); err != nil {
			t.Fatal(err)
		}
	}
	stop1 := make(chan struct{})
	b.StartRecordingToSink(stop1) // client-go's deprecated form, as leader election uses it
	for i := range 20000 {
		r.Eventf(pod("before", fmt.Sprint("p", i)), nil, v1.EventTypeNormal, "R", "A", "n")
	}
	close(stop1)
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	const after = 100
	for i := range after {
		r.Eventf(pod("after", fmt.Sprint("p", i)), nil, v1.EventTypeNormal, "R", "A", "n")
	}
	bcancel() // the broadcaster's context ends: it shuts down, writing what is pending
	check.Eventually(t, "the shutdown to end", func() error {
		_, err := b.StartEventWatcher(func(runtime.Object) {})
		st := b.Stats()
		return check.Errorf(err != nil && st.Queued+st.Pending+st.InFlight == 0 && st.Unaccounted() == 0, "stats %+v", st)
	})
	st := b.Stats()
	n := 0
	for _, e := range s.all() {
		if e.Namespace == "after" {
			n++
		}
	}
	if int64(n)+st.Dropped.Total()+st.Abandoned != after || st.Broadcast != st.Offered {
		t.Fatalf("of the %d events recorded after the restart %d were stored; %d reached no sink (Broadcast %d - Offered %d); stats %+v",
			after, n, st.Broadcast-st.Offered, st.Broadcast, st.Offered, st)
	}
}

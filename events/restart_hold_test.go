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
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// StartRecordingToSinkWithContext's documentation says that once the
// previous context has ended a new start is accepted at once, "and the
// events recorded meanwhile are held and handed to the new sink, so that
// each event recorded after the call is written once, by one of them". The
// hold keeps at most 4096 events (maxHeld); the later ones are queued
// behind the old sink's stop mark and those the loop passes between the old
// sink's stop and the new sink's start reach no sink: not written, not
// dropped, not logged (only Broadcast - Offered shows them).
func TestRestartHoldsPastFourThousandEvents(t *testing.T) {
	for round := range 3 {
		s := newMemSink()
		b := events.NewBroadcaster(s, events.WithBroadcasterOptions(
			record.WithSinkOptions(sink.Options{QPS: sink.Unlimited, Workers: 8, MaxPending: 1 << 20}),
			record.WithQueueLength(1<<20), record.WithShutdownGracePeriod(time.Minute), record.WithLogger(klogDiscard())))
		r := b.NewRecorder(scheme.Scheme, "example.com/ctl")
		// Watchers slow the broadcaster's loop (one send each per event),
		// so that a backlog builds up in its queue.
		for range 32 {
			if _, err := b.StartEventWatcher(func(runtime.Object) {}); err != nil {
				t.Fatal(err)
			}
		}
		ctx1, cancel1 := context.WithCancel(context.Background())
		if err := b.StartRecordingToSinkWithContext(ctx1); err != nil {
			t.Fatal(err)
		}
		const before, after = 25000, 6000
		for i := range before { // a backlog: the old sink's stop waits for the loop to pass it
			r.Eventf(pod("before", fmt.Sprint("p", i)), nil, v1.EventTypeNormal, "R", "A", "n")
		}
		cancel1()
		if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // the old sink's stop is queued behind the backlog
		for i := range after {
			r.Eventf(pod("after", fmt.Sprint("p", i)), nil, v1.EventTypeNormal, "R", "A", "n")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := b.Flush(ctx)
		cancel()
		st := b.Stats()
		n := 0
		for _, e := range s.all() {
			if e.Namespace == "after" {
				n++
			}
		}
		b.Shutdown()
		if err != nil {
			t.Fatal(err)
		}
		if int64(n)+st.Dropped.Total() != after || st.Broadcast != st.Offered {
			t.Fatalf("round %d: stored %d of the %d events recorded after the restart; %d reached no sink (Broadcast %d - Offered %d), %d dropped",
				round, n, after, st.Broadcast-st.Offered, st.Broadcast, st.Offered, st.Dropped.Total())
		}
	}
}

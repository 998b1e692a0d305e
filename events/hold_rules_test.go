package events

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldk8s/herald/record"
)

// While recording restarts, at most the queue length of events is held;
// later ones are counted queue_full drops (queued, they could reach no
// sink), and the held ones are queued when the hold ends.
func TestHoldKeepsAtMostTheQueueLength(t *testing.T) {
	const queue = 16
	b := newBroadcaster(nil, newOptions([]Option{WithBroadcasterOptions(record.WithQueueLength(queue))}))
	defer b.Shutdown()
	b.mu.Lock()
	b.holdLocked()
	b.mu.Unlock()
	for range queue + 2 {
		b.enqueue(b.logger, &v1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e"}, Reason: "R", Action: "A"})
	}
	b.hold.mu.Lock()
	held := len(b.hold.events)
	b.hold.mu.Unlock()
	if st := b.Stats(); held != queue || st.Broadcast != 0 || st.Dropped.QueueFull != 2 {
		t.Fatalf("%d events held, stats %+v; want %d held, none broadcast, 2 dropped as queue_full", held, st, queue)
	}
	b.mu.Lock()
	b.releaseLocked()
	b.mu.Unlock()
	if got := b.Stats().Broadcast; got != queue {
		t.Errorf("%d events broadcast once the hold ended, want %d", got, queue)
	}
}

// Once the shutdown has begun (close ran, before record refuses new
// events), no start of recording is accepted: a start then could hold the
// recorders' events for a session no sink ever takes.
func TestNoStartOnceTheShutdownBegan(t *testing.T) {
	b := newBroadcaster(newCountSink(), newOptions(nil))
	defer b.Shutdown()
	b.close()
	if err := b.start(context.Background(), nil); err != errStopped {
		t.Fatalf("start after close = %v, want %v", err, errStopped)
	}
	if b.hold.on.Load() {
		t.Fatal("events held after a refused start")
	}
}

package record

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/heraldk8s/herald/watch"
)

// An event refused by the full incoming queue is counted under queue_full,
// not under another reason (after_shutdown is for a broadcaster shut down).
// The loop is held on a watcher that reads nothing (WaitIfChannelFull), so
// that the queue of one fills deterministically.
func TestFullQueueCountedAsQueueFull(t *testing.T) {
	eb := NewBroadcaster(WithQueueLength(1)).(*broadcaster)
	orig := eb.b
	held := watchFuncs.NewPreparing(1, int(watch.WaitIfChannelFull), nameEvent)
	w, err := held.Watch()
	if err != nil {
		t.Fatal(err)
	}
	eb.b = held
	rec := eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: "c"})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	const n = 10
	for i := range n {
		rec.Eventf(pod, v1.EventTypeNormal, "R", "m %d", i)
	}
	st := eb.Stats()
	// One in the watcher's channel, one in the loop's hands, one queued:
	// the others find the queue full.
	if st.Recorded != n || st.Dropped.QueueFull < n-3 || st.Dropped.AfterShutdown != 0 || st.Dropped.Total() != st.Dropped.QueueFull {
		t.Errorf("%d events into a full queue of one: stats %+v; want at least %d counted as queue_full, nothing else dropped",
			n, st, n-3)
	}
	go func() {
		for range w.ResultChan() {
		}
	}()
	held.Shutdown()
	w.Stop()
	eb.b = orig
	eb.Shutdown()
}

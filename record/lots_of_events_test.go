package record

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2/ktesting"
)

// client-go's TestLotsOfEvents at herald's default write rate: 1,000
// distinct events, each refused four times with a plain error before it is
// stored, through a broadcaster made as client-go's test makes it (no
// sleep between retries) but with herald's default write limit (50/s,
// burst 100). Its floor is (1,000-100)/50 = 18 s; it fails if herald needs
// more than twice that. Refusals of single events must not cut the rate
// the others get (before the refused request gave its token back, 40 s).
func TestLotsOfEventsAtDefaultRate(t *testing.T) {
	const floor = 18 * time.Second
	var mu sync.Mutex
	counts := map[int]int{}
	stored := make(chan struct{}, maxQueuedEvents)
	s := testEventSink{OnCreate: func(event *v1.Event) (*v1.Event, error) {
		num, err := strconv.Atoi(event.Message)
		if err != nil {
			t.Error(err)
			return event, nil
		}
		mu.Lock()
		counts[num]++
		n := counts[num]
		mu.Unlock()
		if n < 5 {
			return nil, fmt.Errorf("fake error")
		}
		if n == 5 {
			stored <- struct{}{}
		}
		return event, nil
	}}
	_, ctx := ktesting.NewTestContext(t)
	caster := NewBroadcaster(WithSleepDuration(0), WithContext(ctx))
	t.Cleanup(caster.Shutdown)
	caster.StartRecordingToSink(&s)
	recorder := caster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "eventTest"})
	start := time.Now()
	for i := range maxQueuedEvents {
		ref := &v1.ObjectReference{Kind: "Pod", Name: fmt.Sprintf("foo-%v", i), Namespace: "baz", UID: "bar", APIVersion: "version"}
		go recorder.Eventf(ref, v1.EventTypeNormal, "Reason-"+strconv.Itoa(i), "%s", strconv.Itoa(i))
	}
	deadline := time.After(2 * floor)
	for i := range maxQueuedEvents {
		select {
		case <-stored:
		case <-deadline:
			t.Fatalf("%d of %d events stored after %v, twice the floor", i, maxQueuedEvents, 2*floor)
		}
	}
	t.Logf("all %d events stored in %v (floor %v)", maxQueuedEvents, time.Since(start), floor)
}

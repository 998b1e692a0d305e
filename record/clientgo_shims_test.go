package record

// Herald equivalents of the client-go internals that client-go's own tests
// (clientgo_compat_test.go, clientgo_cache_compat_test.go) use.

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"

	"github.com/heraldk8s/herald/internal/eventkey"
	"github.com/heraldk8s/herald/sink"
)

// client-go's defaults, which herald's correlator shares.
const (
	maxQueuedEvents                   = 1000 // client-go's queue length; herald's is DefaultQueueLength
	defaultAggregateMaxEvents         = 10
	defaultAggregateIntervalInSeconds = 600
	defaultSpamBurst                  = 25
)

// getEventKey is the key under which the tests' fake sinks store events:
// client-go's fields (source, involved object, type, reason, message), in
// herald's unambiguous encoding.
func getEventKey(event *v1.Event) string { return eventkey.Event(event) }

// recorderWithFakeClock returns a recorder of eventBroadcaster whose events
// take their timestamps from clock (client-go builds its recorderImpl with
// that clock; herald's recorder has an optional clock of its own).
func recorderWithFakeClock(t interface{ Helper() }, eventSource v1.EventSource, eventBroadcaster EventBroadcaster, clock clock.Clock) EventRecorder {
	t.Helper()
	r := eventBroadcaster.NewRecorder(scheme.Scheme, eventSource).(*recorder)
	r.clock = clock
	return r
}

// eventBroadcasterImpl stands for client-go's broadcaster in the tests of
// its write loop (recordToSink): herald's delivery engine writes instead.
type eventBroadcasterImpl struct {
	cancelationCtx context.Context
	sleepDuration  time.Duration
}

// recordToSink correlates event and writes it to sink as a broadcaster's
// sink pipeline does, returning when the engine is done with it (written,
// dropped, or given up because cancelationCtx ended). Retries do not wait
// (client-go's sleep, randomized around sleepDuration, is replaced by the
// engine's backoff; these tests count tries, not time).
func (e *eventBroadcasterImpl) recordToSink(s EventSink, event *v1.Event, eventCorrelator *EventCorrelator) {
	res, err := eventCorrelator.EventCorrelate(event)
	if err != nil || res.Skip {
		return
	}
	engine, err := sink.NewEngine(s, sink.Options{Workers: 1, QPS: sink.Unlimited, MaxDelay: sink.NoWait, OnWritten: func(key string, sent, stored *v1.Event) {
		eventCorrelator.UpdateStateForWrite(key, sent.Name, stored)
	}})
	if err != nil {
		panic(err)
	}
	engine.Start(e.cancelationCtx)
	if e.cancelationCtx.Err() != nil {
		// herald: a broadcaster that is shut down writes nothing more; its
		// engine is stopped, so the event is counted as abandoned.
		engine.Stop(e.cancelationCtx)
	}
	engine.Add(res.Key, res.Event, res.Patch)
	_ = engine.Flush(e.cancelationCtx)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	engine.Stop(ctx)
}

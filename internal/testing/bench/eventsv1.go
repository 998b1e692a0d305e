package bench

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	cgevents "k8s.io/client-go/tools/events"
)

// EventsSink is an in-memory events.k8s.io/v1 sink (client-go's
// events.EventSink, which herald's events package takes too) for the
// Events* benchmarks: every call first waits a fixed latency (honouring its
// context), then stores events by namespace and name as the API server
// does: Create of an existing name is AlreadyExists, Patch of a missing one
// NotFound, patches are strategic-merge patches. It returns a copy of the
// stored event. It is safe for concurrent use.
type EventsSink struct {
	latency time.Duration

	creates, patches, updates, failed atomic.Int64

	mu     sync.Mutex
	events map[string]*eventsv1.Event // namespace/name -> stored event
}

var _ cgevents.EventSink = (*EventsSink)(nil)

// NewEventsSink returns an empty EventsSink whose every call takes latency.
func NewEventsSink(latency time.Duration) *EventsSink {
	return &EventsSink{latency: latency, events: map[string]*eventsv1.Event{}}
}

// wait sleeps the sink's latency, or until ctx ends.
func (s *EventsSink) wait(ctx context.Context) error {
	if s.latency <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(s.latency)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *EventsSink) fail(err error) (*eventsv1.Event, error) {
	s.failed.Add(1)
	return nil, err
}

// Create implements events.EventSink.
func (s *EventsSink) Create(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	s.creates.Add(1)
	if err := s.wait(ctx); err != nil {
		return s.fail(err)
	}
	key := ev.Namespace + "/" + ev.Name
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.events[key]; ok {
		return s.fail(apierrors.NewAlreadyExists(eventsv1.Resource("events"), ev.Name))
	}
	stored := ev.DeepCopy()
	stored.ResourceVersion = "1"
	s.events[key] = stored
	return stored.DeepCopy(), nil
}

// Update implements events.EventSink (neither implementation calls it).
func (s *EventsSink) Update(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	s.updates.Add(1)
	if err := s.wait(ctx); err != nil {
		return s.fail(err)
	}
	key := ev.Namespace + "/" + ev.Name
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.events[key]; !ok {
		return s.fail(apierrors.NewNotFound(eventsv1.Resource("events"), ev.Name))
	}
	s.events[key] = ev.DeepCopy()
	return ev.DeepCopy(), nil
}

// Patch implements events.EventSink: a strategic-merge patch of the event
// named as ev.
func (s *EventsSink) Patch(ctx context.Context, ev *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	s.patches.Add(1)
	if err := s.wait(ctx); err != nil {
		return s.fail(err)
	}
	key := ev.Namespace + "/" + ev.Name
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.events[key]
	if !ok {
		return s.fail(apierrors.NewNotFound(eventsv1.Resource("events"), ev.Name))
	}
	orig, err := json.Marshal(old)
	if err != nil {
		return s.fail(err)
	}
	patched, err := strategicpatch.StrategicMergePatch(orig, data, &eventsv1.Event{})
	if err != nil {
		return s.fail(apierrors.NewBadRequest(err.Error()))
	}
	out := &eventsv1.Event{}
	if err := json.Unmarshal(patched, out); err != nil {
		return s.fail(apierrors.NewBadRequest(err.Error()))
	}
	s.events[key] = out
	return out.DeepCopy(), nil
}

// Writes returns the Create and Patch calls received (failed ones included).
func (s *EventsSink) Writes() int64 { return s.creates.Load() + s.patches.Load() }

// Creates returns the Create calls received so far.
func (s *EventsSink) Creates() int64 { return s.creates.Load() }

// Patches returns the Patch calls received so far.
func (s *EventsSink) Patches() int64 { return s.patches.Load() }

// Failed returns the calls that failed so far.
func (s *EventsSink) Failed() int64 { return s.failed.Load() }

// Stored returns how many events the sink holds.
func (s *EventsSink) Stored() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events)
}

// Counts returns, for each regarding object (namespace/name), the sum of
// the stored counts of its events: a series counts series.count, a single
// event 1.
func (s *EventsSink) Counts() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int64{}
	for _, ev := range s.events {
		n := int64(1)
		if ev.Series != nil {
			n = int64(ev.Series.Count)
		}
		out[ev.Regarding.Namespace+"/"+ev.Regarding.Name] += n
	}
	return out
}

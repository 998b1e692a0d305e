package events

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/golang/groupcache/lru"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedeventsv1 "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	cgevents "k8s.io/client-go/tools/events"

	"github.com/heraldk8s/herald/internal/hook"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// EventSinkImpl writes events.k8s.io/v1 Events through a typed client:
//
//	&events.EventSinkImpl{Interface: clientset.EventsV1()}
//
// or [NewForConfig], which gives herald a client of its own. Each request
// goes to the namespace of the event it writes; an event without one is
// refused, as client-go's sink refuses it. It is safe for concurrent use.
//
// Like record's sink, it sends each request with no retries inside
// client-go's REST client, so that a 429 or a 5xx reaches herald's engine,
// which retries with its own policy (shared server health, Retry-After, the
// adaptive write rate). client-go's own *events.EventSinkImpl, given to
// NewBroadcaster, is written the same way.
type EventSinkImpl struct {
	Interface typedeventsv1.EventsV1Interface
}

var (
	_ EventSink = (*EventSinkImpl)(nil)
	_ EventSink = (*cgevents.EventSinkImpl)(nil)
)

// NewForConfig returns an EventSinkImpl with an events client of its own,
// built from a copy of cfg by sink.EventsConfig (no client-side rate
// limiter: herald's write limit is the budget; the user agent suffix
// " herald-events"), so that event writes never spend the controller's API
// budget. cfg is not modified.
func NewForConfig(cfg *rest.Config) (*EventSinkImpl, error) {
	if cfg == nil {
		return nil, errors.New("events: NewForConfig: nil rest.Config")
	}
	cs, err := kubernetes.NewForConfig(sink.EventsConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("events: NewForConfig: %w", err)
	}
	return &EventSinkImpl{Interface: cs.EventsV1()}, nil
}

// restClient returns the REST client of s.Interface, or nil when it has
// none (a fake clientset's, for example).
func (s *EventSinkImpl) restClient() rest.Interface {
	rc := s.Interface.RESTClient()
	if r, ok := rc.(*rest.RESTClient); rc == nil || (ok && r == nil) {
		return nil
	}
	return rc
}

// Create stores a new event in the event's namespace. An event without a
// namespace is refused, as client-go's sink refuses it, with a BadRequest
// status error (which the delivery engine drops as rejected instead of
// retrying).
func (s *EventSinkImpl) Create(ctx context.Context, event *eventsv1.Event) (*eventsv1.Event, error) {
	if event.Namespace == "" {
		return nil, apierrors.NewBadRequest("can't create an event with empty namespace")
	}
	rc := s.restClient()
	if rc == nil {
		return s.Interface.Events(event.Namespace).Create(ctx, event, metav1.CreateOptions{})
	}
	out := &eventsv1.Event{}
	err := rc.Post().Namespace(event.Namespace).Resource("events").Body(event).MaxRetries(0).Do(ctx).Into(out)
	return out, err
}

// Update replaces an event. The broadcaster never calls it; it exists for
// client-go's EventSink.
func (s *EventSinkImpl) Update(ctx context.Context, event *eventsv1.Event) (*eventsv1.Event, error) {
	if event.Namespace == "" {
		return nil, apierrors.NewBadRequest("can't update an event with empty namespace")
	}
	return s.Interface.Events(event.Namespace).Update(ctx, event, metav1.UpdateOptions{})
}

// Patch applies a strategic-merge patch to the event named as oldEvent in
// its namespace.
func (s *EventSinkImpl) Patch(ctx context.Context, oldEvent *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	if oldEvent.Namespace == "" {
		return nil, apierrors.NewBadRequest("can't patch an event with empty namespace")
	}
	rc := s.restClient()
	if rc == nil {
		return s.Interface.Events(oldEvent.Namespace).Patch(ctx, oldEvent.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
	}
	out := &eventsv1.Event{}
	err := rc.Patch(types.StrategicMergePatchType).Namespace(oldEvent.Namespace).Resource("events").
		Name(oldEvent.Name).Body(data).MaxRetries(0).Do(ctx).Into(out)
	return out, err
}

// coreSink is an events.k8s.io/v1 sink as record's pipeline sees it: a
// core/v1 sink converting each event (the conversion is lossless).
type coreSink struct{ s EventSink }

var _ sink.ContextEventSink = coreSink{}

// eventsSink returns the sink to write through: client-go's EventSinkImpl
// becomes herald's, so that the engine sees 429s and 5xx.
func eventsSink(s EventSink) EventSink {
	if cs, ok := s.(*cgevents.EventSinkImpl); ok && cs != nil {
		return &EventSinkImpl{Interface: cs.Interface}
	}
	return s
}

func (c coreSink) Create(ev *v1.Event) (*v1.Event, error) {
	return c.CreateContext(context.Background(), ev)
}

func (c coreSink) Update(ev *v1.Event) (*v1.Event, error) {
	return toCore(c.s.Update(context.Background(), toEventsV1(ev)))
}

func (c coreSink) Patch(ev *v1.Event, data []byte) (*v1.Event, error) {
	return c.PatchContext(context.Background(), ev, data)
}

func (c coreSink) CreateContext(ctx context.Context, ev *v1.Event) (*v1.Event, error) {
	return toCore(c.s.Create(ctx, toEventsV1(ev)))
}

func (c coreSink) PatchContext(ctx context.Context, ev *v1.Event, data []byte) (*v1.Event, error) {
	return toCore(c.s.Patch(ctx, toEventsV1(ev), data))
}

// toCore converts a sink's answer.
func toCore(ev *eventsv1.Event, err error) (*v1.Event, error) {
	if ev == nil {
		return nil, err
	}
	return fromEventsV1(ev), err
}

// toEventsV1 returns e as an events.k8s.io/v1 Event, as the API server
// converts it. The result shares e's maps and pointers.
func toEventsV1(e *v1.Event) *eventsv1.Event {
	out := &eventsv1.Event{
		ObjectMeta:               e.ObjectMeta,
		EventTime:                e.EventTime,
		ReportingController:      e.ReportingController,
		ReportingInstance:        e.ReportingInstance,
		Action:                   e.Action,
		Reason:                   e.Reason,
		Regarding:                e.InvolvedObject,
		Related:                  e.Related,
		Note:                     e.Message,
		Type:                     e.Type,
		DeprecatedSource:         e.Source,
		DeprecatedFirstTimestamp: e.FirstTimestamp,
		DeprecatedLastTimestamp:  e.LastTimestamp,
		DeprecatedCount:          e.Count,
	}
	if e.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out
}

// fromEventsV1 is the inverse of toEventsV1.
func fromEventsV1(e *eventsv1.Event) *v1.Event {
	out := &v1.Event{
		ObjectMeta:          e.ObjectMeta,
		EventTime:           e.EventTime,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
		Action:              e.Action,
		Reason:              e.Reason,
		InvolvedObject:      e.Regarding,
		Related:             e.Related,
		Message:             e.Note,
		Type:                e.Type,
		Source:              e.DeprecatedSource,
		FirstTimestamp:      e.DeprecatedFirstTimestamp,
		LastTimestamp:       e.DeprecatedLastTimestamp,
		Count:               e.DeprecatedCount,
	}
	if e.Series != nil {
		out.Series = &v1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out
}

// seriesOrder is the broadcaster's sink as its sessions' engines see it: the
// writes of one event are serialised across the engines, and a series count
// not above the one already stored (or below one sent whose answer was
// lost) is not sent: the engine counts it written, with no request
// (hook.ErrNotSent). Each recording session has an engine of its own, and a
// retiring one may still write a count of a series the next session already
// wrote further (the series are the broadcaster's); sent, that count would
// overwrite the higher one. It remembers the last defaultCacheSize events
// written (and any whose lock is in use): a retiring sink's count of an
// event that more than that many others were written after is sent.
type seriesOrder struct {
	s record.EventSink

	mu     sync.Mutex
	names  *lru.Cache               // event name -> *seriesStored
	pinned map[string]*seriesStored // evicted while a write held or awaited them
}

type seriesStored struct {
	lock  chan struct{} // one slot: held during a write of the event
	count int32         // the highest series count stored; guarded by lock
	// tried is the highest count sent whose answer was lost (it may be
	// stored); guarded by lock.
	tried int32
	users int // writes holding or waiting for lock; guarded by o.mu
}

func newSeriesOrder(s record.EventSink) *seriesOrder {
	o := &seriesOrder{s: s, names: lru.New(defaultCacheSize), pinned: map[string]*seriesStored{}}
	o.names.OnEvicted = func(k lru.Key, v any) {
		if st := v.(*seriesStored); st.users > 0 {
			o.pinned[k.(string)] = st // its lock is in use: keep it until released
		}
	}
	return o
}

var _ sink.ContextEventSink = (*seriesOrder)(nil)

func (o *seriesOrder) acquire(name string) *seriesStored {
	o.mu.Lock()
	defer o.mu.Unlock()
	st := o.pinned[name]
	if st == nil {
		if v, ok := o.names.Get(name); ok {
			st = v.(*seriesStored)
		} else {
			st = &seriesStored{lock: make(chan struct{}, 1)}
			o.names.Add(name, st)
		}
	}
	st.users++
	return st
}

func (o *seriesOrder) release(name string, st *seriesStored) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if st.users--; st.users == 0 && o.pinned[name] == st {
		delete(o.pinned, name)
	}
}

// write runs w for ev under its name's lock (waiting for it at most until
// ctx ends), unless ev's series count is not above the stored one, or below
// one sent whose answer was lost: then ev stands for the stored state.
func (o *seriesOrder) write(ctx context.Context, ev *v1.Event, w func() (*v1.Event, error)) (*v1.Event, error) {
	if ev.Series == nil || ev.Name == "" {
		return w()
	}
	st := o.acquire(ev.Name)
	defer o.release(ev.Name, st)
	select {
	case st.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-st.lock }()
	if ev.Series.Count <= st.count || ev.Series.Count < st.tried {
		return nil, hook.ErrNotSent
	}
	out, err := w()
	switch {
	case err == nil:
		st.count = ev.Series.Count
		if st.tried <= st.count {
			st.tried = 0
		}
	case mayBeStored(err):
		st.tried = max(st.tried, ev.Series.Count)
	}
	return out, err
}

// mayBeStored reports whether a write that failed with err may still have
// been stored: no answer, or a 5xx (a 4xx, a 429 included, was refused
// before anything was stored).
func mayBeStored(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	return status.Status().Code >= 500
}

func (o *seriesOrder) Create(ev *v1.Event) (*v1.Event, error) {
	return o.CreateContext(context.Background(), ev)
}

func (o *seriesOrder) Update(ev *v1.Event) (*v1.Event, error) { return o.s.Update(ev) }

func (o *seriesOrder) Patch(ev *v1.Event, data []byte) (*v1.Event, error) {
	return o.PatchContext(context.Background(), ev, data)
}

func (o *seriesOrder) CreateContext(ctx context.Context, ev *v1.Event) (*v1.Event, error) {
	return o.write(ctx, ev, func() (*v1.Event, error) {
		if cs, ok := o.s.(sink.ContextEventSink); ok {
			return cs.CreateContext(ctx, ev)
		}
		return o.s.Create(ev)
	})
}

func (o *seriesOrder) PatchContext(ctx context.Context, ev *v1.Event, data []byte) (*v1.Event, error) {
	return o.write(ctx, ev, func() (*v1.Event, error) {
		if cs, ok := o.s.(sink.ContextEventSink); ok {
			return cs.PatchContext(ctx, ev, data)
		}
		return o.s.Patch(ev, data)
	})
}

package sink

import (
	"context"

	v1 "k8s.io/api/core/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// EventSink knows how to store events. It has exactly the method set of
// client-go's record.EventSink, so any client-go sink (including client-go's
// *typedcorev1.EventSinkImpl) can be used with herald unchanged.
//
// The engine may call the methods of one EventSink from several goroutines at
// once, but never for the same event at the same time. On success a sink must
// return the stored event; a nil event with a nil error is counted as a bad
// response and dropped, never dereferenced. Update is never called.
type EventSink interface {
	Create(event *v1.Event) (*v1.Event, error)
	Update(event *v1.Event) (*v1.Event, error)
	Patch(oldEvent *v1.Event, data []byte) (*v1.Event, error)
}

// ContextEventSink is an EventSink whose writes take a context. The engine
// prefers these methods when a sink has them: each request then carries the
// engine's request timeout and is cancelled when the engine stops. A sink
// without them is called through the plain methods, which cannot be
// cancelled; the engine then waits for a call in flight to return.
type ContextEventSink interface {
	EventSink
	CreateContext(ctx context.Context, event *v1.Event) (*v1.Event, error)
	PatchContext(ctx context.Context, oldEvent *v1.Event, data []byte) (*v1.Event, error)
}

// EventSinkImpl writes events through a typed core/v1 Events client. Build it
// with the namespace-less client so it can write to every namespace:
//
//	&sink.EventSinkImpl{Interface: clientset.CoreV1().Events("")}
//
// Each request goes to the namespace of the event it writes. It is safe for
// concurrent use.
type EventSinkImpl struct {
	Interface typedcorev1.EventInterface
}

var (
	_ EventSink        = (*EventSinkImpl)(nil)
	_ ContextEventSink = (*EventSinkImpl)(nil)
	_ EventSink        = (*typedcorev1.EventSinkImpl)(nil)
)

// Create stores a new event in the event's namespace.
func (s *EventSinkImpl) Create(event *v1.Event) (*v1.Event, error) {
	return s.CreateContext(context.Background(), event)
}

// Update replaces an event. The engine never calls it; it exists for
// compatibility with client-go's EventSink.
func (s *EventSinkImpl) Update(event *v1.Event) (*v1.Event, error) {
	return s.Interface.UpdateWithEventNamespaceWithContext(context.Background(), event)
}

// Patch applies a strategic-merge patch to the named event in its namespace.
func (s *EventSinkImpl) Patch(event *v1.Event, data []byte) (*v1.Event, error) {
	return s.PatchContext(context.Background(), event, data)
}

// CreateContext is Create with a context that can cancel the request.
func (s *EventSinkImpl) CreateContext(ctx context.Context, event *v1.Event) (*v1.Event, error) {
	return s.Interface.CreateWithEventNamespaceWithContext(ctx, event)
}

// PatchContext is Patch with a context that can cancel the request.
func (s *EventSinkImpl) PatchContext(ctx context.Context, event *v1.Event, data []byte) (*v1.Event, error) {
	return s.Interface.PatchWithEventNamespaceWithContext(ctx, event, data)
}

// create calls the context variant when the sink has one.
func create(ctx context.Context, s EventSink, ev *v1.Event) (*v1.Event, error) {
	if cs, ok := s.(ContextEventSink); ok {
		return cs.CreateContext(ctx, ev)
	}
	return s.Create(ev)
}

// patch calls the context variant when the sink has one.
func patch(ctx context.Context, s EventSink, ev *v1.Event, data []byte) (*v1.Event, error) {
	if cs, ok := s.(ContextEventSink); ok {
		return cs.PatchContext(ctx, ev, data)
	}
	return s.Patch(ev, data)
}

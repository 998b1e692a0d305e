package sink

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	clientrecord "k8s.io/client-go/tools/record"
)

// EventSink knows how to store events. It is client-go's record.EventSink
// itself (a type alias), so any client-go sink (including client-go's
// *typedcorev1.EventSinkImpl) can be used with herald unchanged, and
// herald's broadcaster, whose StartRecordingToSink takes it, is a client-go
// record.EventBroadcaster (controller-runtime's manager takes it).
//
// The engine may call the methods of one EventSink from several goroutines at
// once, but never for the same event at the same time. On success a sink must
// return the stored event; a nil event (or one without a name) with a nil
// error is counted as a bad response and dropped, never dereferenced. Update
// is never called. A panic in a sink method is recovered and the event
// counted as dropped (sink_panicked).
type EventSink = clientrecord.EventSink

// ContextEventSink is an EventSink whose writes take a context. The engine
// prefers these methods when a sink has them: each request then carries the
// engine's request timeout and is cancelled when the engine stops. A sink
// without them (client-go's *typedcorev1.EventSinkImpl excepted, which the
// engine writes through its client as an [EventSinkImpl]) is called
// through the plain methods, which cannot be cancelled: Stop then counts a
// write still under way as abandoned and leaves its goroutine to end when
// the call returns.
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
// or with [NewForConfig], which gives herald a client of its own. Each
// request goes to the namespace of the event it writes. It is safe for
// concurrent use.
//
// When the client is client-go's generated one (it has GetClient), each
// request is sent with no retries inside client-go's REST client: a 429 or
// a 5xx reaches the engine, which retries with its own policy (shared
// server health, Retry-After, the adaptive write rate) instead of having it
// hidden by up to ten retries inside one request. client-go's own
// *typedcorev1.EventSinkImpl, given to the engine, is written the same way.
type EventSinkImpl struct {
	Interface typedcorev1.EventInterface
}

var (
	_ EventSink        = (*EventSinkImpl)(nil)
	_ ContextEventSink = (*EventSinkImpl)(nil)
	_ EventSink        = (*typedcorev1.EventSinkImpl)(nil)
)

// NewForConfig returns an EventSinkImpl with an events client of its own,
// built from a copy of cfg (the controller's rest.Config) by EventsConfig:
// herald's writes then never spend the budget of the controller's API
// calls, and rest.Config's default 5 QPS does not cap an event burst. The
// kubelet does the same for its events. cfg is not modified.
func NewForConfig(cfg *rest.Config) (*EventSinkImpl, error) {
	if cfg == nil {
		return nil, errorf("NewForConfig: nil rest.Config")
	}
	cs, err := kubernetes.NewForConfig(EventsConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("sink: NewForConfig: %w", err)
	}
	return &EventSinkImpl{Interface: cs.CoreV1().Events("")}, nil
}

// EventsConfig returns the configuration of an events client of herald's
// own: a copy of cfg with no client-side rate limiter (the engine's write
// limit, Options.QPS and Burst, 50 writes/s and a burst of 100 by default
// and adaptive, is the one budget of herald's writes, so raising it is not
// capped by the client) and the user agent suffix
// " herald-events". NewForConfig, and events.NewForConfig for
// events.k8s.io/v1, build their clients with it.
func EventsConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = -1, 0 // client-go: a negative QPS means no rate limiter
	c.RateLimiter = nil
	ua := c.UserAgent
	if ua == "" {
		ua = rest.DefaultKubernetesUserAgent()
	}
	c.UserAgent = ua + " herald-events"
	return c
}

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

// restClient is what client-go's generated typed clients have besides their
// interface: the REST client and the namespace they were made for.
type restClient interface {
	GetClient() rest.Interface
	GetNamespace() string
}

// CreateContext is Create with a context that can cancel the request.
func (s *EventSinkImpl) CreateContext(ctx context.Context, event *v1.Event) (*v1.Event, error) {
	rc, ok := s.Interface.(restClient)
	if !ok {
		return s.Interface.CreateWithEventNamespaceWithContext(ctx, event)
	}
	if err := checkNamespace(rc, event); err != nil {
		return nil, err
	}
	out := &v1.Event{}
	err := rc.GetClient().Post().
		NamespaceIfScoped(event.Namespace, event.Namespace != "").
		Resource("events").
		Body(event).
		MaxRetries(0).
		Do(ctx).
		Into(out)
	return out, err
}

// PatchContext is Patch with a context that can cancel the request.
func (s *EventSinkImpl) PatchContext(ctx context.Context, event *v1.Event, data []byte) (*v1.Event, error) {
	rc, ok := s.Interface.(restClient)
	if !ok {
		return s.Interface.PatchWithEventNamespaceWithContext(ctx, event, data)
	}
	if err := checkNamespace(rc, event); err != nil {
		return nil, err
	}
	out := &v1.Event{}
	err := rc.GetClient().Patch(types.StrategicMergePatchType).
		NamespaceIfScoped(event.Namespace, event.Namespace != "").
		Resource("events").
		Name(event.Name).
		Body(data).
		MaxRetries(0).
		Do(ctx).
		Into(out)
	return out, err
}

// checkNamespace refuses, as client-go does, an event of another namespace
// than the one a namespaced client was made for.
func checkNamespace(rc restClient, event *v1.Event) error {
	if ns := rc.GetNamespace(); ns != "" && event.Namespace != ns {
		return &errBadRequest{fmt.Sprintf("event namespace %q differs from the client's %q", event.Namespace, ns)}
	}
	return nil
}

// create calls the context variant when the sink has one; client-go's
// EventSinkImpl is written through its client like herald's.
func create(ctx context.Context, s EventSink, ev *v1.Event) (*v1.Event, error) {
	switch cs := s.(type) {
	case ContextEventSink:
		return cs.CreateContext(ctx, ev)
	case *typedcorev1.EventSinkImpl:
		return (&EventSinkImpl{Interface: cs.Interface}).CreateContext(ctx, ev)
	}
	return s.Create(ev)
}

// patch calls the context variant when the sink has one.
func patch(ctx context.Context, s EventSink, ev *v1.Event, data []byte) (*v1.Event, error) {
	switch cs := s.(type) {
	case ContextEventSink:
		return cs.PatchContext(ctx, ev, data)
	case *typedcorev1.EventSinkImpl:
		return (&EventSinkImpl{Interface: cs.Interface}).PatchContext(ctx, ev, data)
	}
	return s.Patch(ev, data)
}

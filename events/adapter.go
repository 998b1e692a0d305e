package events

import (
	"context"
	"errors"
	"net/http"
	"sync"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	cgevents "k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// EventBroadcasterAdapter is client-go's (deprecated) interface of a
// broadcaster that writes through events.k8s.io/v1 when the API server
// serves it and through core/v1 otherwise.
//
//lint:ignore SA1019 herald is a drop-in for client-go's tools/events: it keeps its deprecated API
type EventBroadcasterAdapter = cgevents.EventBroadcasterAdapter

// NewEventBroadcasterAdapter is NewEventBroadcasterAdapterWithContext with
// context.Background().
func NewEventBroadcasterAdapter(client kubernetes.Interface) EventBroadcasterAdapter {
	return NewEventBroadcasterAdapterWithContext(context.Background(), client)
}

// NewEventBroadcasterAdapterWithContext returns client-go's adapter without
// its weaknesses:
//
//   - The API is chosen at the first write, not at construction, and a
//     transient discovery error (transport, 5xx, 429, timeout) is retried
//     as a failed write, with the engine's backoff, instead of choosing
//     core/v1 for good; a 401 is the write's, tried once more at once (the
//     credentials refreshed) and then dropped, as a write's 401 is. The
//     discovery request is bounded by the engine's RequestTimeout as a
//     write is. A clear answer (events.k8s.io/v1 is not served, or
//     discovery is refused) chooses core/v1.
//   - Recorders from NewRecorder write the same events either way: on
//     core/v1 they keep action, related, reportingController,
//     reportingInstance and the series, which the API server accepts there
//     (client-go's core/v1 path drops action and related).
//   - Shutdown writes what is pending first.
//
// ctx ending shuts the adapter down, as client-go's does for its core/v1
// broadcaster; its logger is the adapter's. The record options of opts
// (WithBroadcasterOptions) apply to both broadcasters, WithSeriesInterval to
// the events.k8s.io/v1 one. The returned value also has Flush(ctx) error,
// ShutdownWithContext(ctx) error, Stats() Stats and LegacyStats() Stats.
func NewEventBroadcasterAdapterWithContext(ctx context.Context, client kubernetes.Interface, opts ...Option) EventBroadcasterAdapter {
	all := append([]Option{WithBroadcasterOptions(record.WithContext(ctx))}, opts...)
	coreEvents := &sink.EventSinkImpl{Interface: client.CoreV1().Events("")}
	ds := &discoverySink{
		client: client,
		v1:     coreSink{&EventSinkImpl{Interface: client.EventsV1()}},
		core:   coreEvents,
	}
	// ctx ending shuts both broadcasters down (record.WithContext), and with
	// them the goroutine of a deprecated StartRecordingToSink.
	o := newOptions(all)
	eb := newBroadcaster(ds, o)
	ds.logger = eb.logger // the broadcasters' (record.WithLogger if given)
	return &adapter{
		events:     eb,
		legacy:     record.NewBroadcaster(o.record...),
		legacySink: coreEvents,
	}
}

type adapter struct {
	events     *broadcaster
	legacy     record.EventBroadcaster
	legacySink record.EventSink

	once sync.Once
}

func (a *adapter) StartRecordingToSink(stopCh <-chan struct{}) {
	a.events.StartRecordingToSink(stopCh)
	// client-go starts the core/v1 sink every time; once is enough.
	a.once.Do(func() { a.legacy.StartRecordingToSink(a.legacySink) })
}

func (a *adapter) NewRecorder(name string) EventRecorderLogger {
	return a.events.NewRecorder(scheme.Scheme, name)
}

func (a *adapter) DeprecatedNewLegacyRecorder(name string) record.EventRecorderLogger {
	return a.legacy.NewRecorder(scheme.Scheme, v1.EventSource{Component: name})
}

// Shutdown gives both broadcasters one grace period together, as
// ShutdownWithContext with that deadline: both sinks write meanwhile, so
// neither loses time to the other, and Shutdown takes one grace period at
// most, not one for each.
func (a *adapter) Shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), a.events.core.GracePeriod())
	defer cancel()
	_ = a.ShutdownWithContext(ctx)
}

// Flush flushes both broadcasters (the second even if the first's flush
// failed) and returns both errors.
func (a *adapter) Flush(ctx context.Context) error {
	return errors.Join(a.events.Flush(ctx), a.legacy.Flush(ctx))
}

// ShutdownWithContext shuts both broadcasters down within ctx and returns
// both errors.
func (a *adapter) ShutdownWithContext(ctx context.Context) error {
	return errors.Join(a.legacy.ShutdownWithContext(ctx), a.events.ShutdownWithContext(ctx))
}

// Stats returns the counters of the events.k8s.io/v1 broadcaster (the one
// NewRecorder's recorders feed); LegacyStats those of the core/v1 one.
func (a *adapter) Stats() Stats { return a.events.Stats() }

// LegacyStats returns the counters of the core/v1 broadcaster, the one
// DeprecatedNewLegacyRecorder's recorders feed.
func (a *adapter) LegacyStats() Stats { return a.legacy.Stats() }

// discoverySink writes through events.k8s.io/v1 when the API server serves
// it and through core/v1 otherwise, deciding at the first write.
type discoverySink struct {
	client kubernetes.Interface
	v1     coreSink
	core   *sink.EventSinkImpl
	logger klog.Logger

	mu     sync.Mutex
	chosen sink.ContextEventSink
}

var _ sink.ContextEventSink = (*discoverySink)(nil)

// pick returns the sink to write through, asking discovery until it
// answers clearly; a transient error is returned, so the engine retries.
func (d *discoverySink) pick(ctx context.Context) (sink.ContextEventSink, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.chosen != nil {
		return d.chosen, nil
	}
	_, err := serverResourcesForGroupVersion(ctx, d.client.Discovery(), eventsv1.SchemeGroupVersion.String())
	switch {
	case err == nil:
		d.chosen = d.v1
		d.logger.V(2).Info("Writing events through events.k8s.io/v1")
	case apierrors.IsNotFound(err) || refused(err):
		d.chosen = d.core
		d.logger.Info("The API server does not serve events.k8s.io/v1, writing events through core/v1", "err", err)
	default:
		return nil, err
	}
	return d.chosen, nil
}

func (d *discoverySink) Create(ev *v1.Event) (*v1.Event, error) {
	return d.CreateContext(context.Background(), ev)
}

func (d *discoverySink) Update(ev *v1.Event) (*v1.Event, error) {
	s, err := d.pick(context.Background())
	if err != nil {
		return nil, err
	}
	return s.Update(ev)
}

func (d *discoverySink) Patch(ev *v1.Event, data []byte) (*v1.Event, error) {
	return d.PatchContext(context.Background(), ev, data)
}

func (d *discoverySink) CreateContext(ctx context.Context, ev *v1.Event) (*v1.Event, error) {
	s, err := d.pick(ctx)
	if err != nil {
		return nil, err
	}
	return s.CreateContext(ctx, ev)
}

func (d *discoverySink) PatchContext(ctx context.Context, ev *v1.Event, data []byte) (*v1.Event, error) {
	s, err := d.pick(ctx)
	if err != nil {
		return nil, err
	}
	return s.PatchContext(ctx, ev, data)
}

// refused reports an answer of the API server that asking again will not
// change: a 4xx other than 401, 408 and 429 (or a status without a code).
// A 401 is the write's (the engine tries it once more at once: client-go's
// transport refreshes its credentials on one), not a choice of core/v1.
func refused(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false // a transport error or a timeout: ask again
	}
	code := status.Status().Code
	return code < 500 && code != http.StatusTooManyRequests && code != http.StatusRequestTimeout && code != http.StatusUnauthorized
}

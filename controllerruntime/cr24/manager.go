package cr24

import (
	"context"

	"k8s.io/client-go/rest"
	clientevents "k8s.io/client-go/tools/events"
	clientrecord "k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/heraldk8s/herald/controllerruntime/internal/core"
	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/record"
)

// Every name below is that of package
// github.com/heraldk8s/herald/controllerruntime, whose doc tells what it
// does; the code behind both is one (controllerruntime/internal/core).

// Option configures the broadcasters behind the manager.
type Option func(*options)

type options = core.Options

// WithBroadcasterOptions gives options of package record to both
// broadcasters (controllerruntime.WithBroadcasterOptions).
func WithBroadcasterOptions(opts ...record.BroadcasterOption) Option {
	return func(o *options) { o.Record = append(o.Record, opts...) }
}

// WithEventsOptions gives options of package events to the
// events.k8s.io/v1 broadcaster only (controllerruntime.WithEventsOptions).
func WithEventsOptions(opts ...events.Option) Option {
	return func(o *options) { o.Events = append(o.Events, opts...) }
}

// Manager is a controller-runtime v0.23 or v0.24 manager whose event
// recorders are herald's (controllerruntime.Manager). It embeds the manager
// built by manager.New, so it is a manager.Manager.
type Manager struct {
	manager.Manager

	c *core.Manager
}

var (
	_ manager.Manager   = (*Manager)(nil)
	_ recorder.Provider = (*Manager)(nil)
)

// NewManager is manager.New (ctrl.NewManager) with herald recording every
// event the manager's recorders record (controllerruntime.NewManager).
// Call Start, or Shutdown when the manager is dropped without being
// started.
func NewManager(cfg *rest.Config, opts manager.Options, heraldOpts ...Option) (*Manager, error) {
	m := new(Manager)
	c, err := core.New(cfg, opts, core.Collect(heraldOpts), func(c *core.Manager) recorder.Provider {
		m.c = c
		return m
	})
	if err != nil {
		return nil, err
	}
	m.Manager = c.Manager
	return m, nil
}

// GetEventRecorder returns a herald events.k8s.io/v1 recorder whose events
// name reportingController name (a qualified name), as client-go's
// events.EventRecorder, the type controller-runtime v0.23 and v0.24 ask
// for; it is also an events.EventRecorderLogger.
func (m *Manager) GetEventRecorder(name string) clientevents.EventRecorder {
	return m.c.EventsRecorder(name)
}

// GetEventRecorderFor returns a herald core/v1 recorder with source
// component name.
//
// Deprecated: as controller-runtime's, it records through the old events
// API; use GetEventRecorder.
func (m *Manager) GetEventRecorderFor(name string) clientrecord.EventRecorder {
	return m.c.CoreRecorder(name)
}

// Start starts the manager and, once it has stopped, writes what herald
// still holds within what is left of the manager's GracefulShutdownTimeout,
// then stops herald (controllerruntime.Manager.Start).
func (m *Manager) Start(ctx context.Context) error {
	return m.c.Start(ctx)
}

// Flush waits until every event recorded so far has been written (or
// dropped, counted), or ctx ends.
func (m *Manager) Flush(ctx context.Context) error {
	return m.c.Flush(ctx)
}

// Shutdown writes what is pending until ctx ends and stops herald's
// goroutines; Start calls it.
func (m *Manager) Shutdown(ctx context.Context) error {
	return m.c.Shutdown(ctx)
}

// Broadcasters returns herald's broadcasters behind the manager.
func (m *Manager) Broadcasters() (core record.EventBroadcaster, eventsV1 events.EventBroadcaster) {
	return m.c.Broadcasters()
}

package controllerruntime

import (
	"context"

	"k8s.io/client-go/rest"
	clientrecord "k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/heraldk8s/herald/controllerruntime/internal/core"
	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/record"
)

// Option configures the broadcasters behind the manager.
type Option func(*options)

type options = core.Options

// WithBroadcasterOptions gives options of package record to both the
// core/v1 and the events.k8s.io/v1 broadcaster (record.WithSinkOptions,
// record.WithQueueLength, ...): a write limit thus applies to each API.
func WithBroadcasterOptions(opts ...record.BroadcasterOption) Option {
	return func(o *options) { o.Record = append(o.Record, opts...) }
}

// WithEventsOptions gives options of package events to the
// events.k8s.io/v1 broadcaster only (events.WithSeriesInterval).
func WithEventsOptions(opts ...events.Option) Option {
	return func(o *options) { o.Events = append(o.Events, opts...) }
}

// Manager is a controller-runtime manager whose event recorders are
// herald's. It embeds the manager built by manager.New, so it is a
// manager.Manager and passes everywhere one is expected.
type Manager struct {
	manager.Manager

	c *core.Manager
}

var (
	_ manager.Manager   = (*Manager)(nil)
	_ recorder.Provider = (*Manager)(nil)
)

// NewManager is manager.New (ctrl.NewManager) with herald recording every
// event the manager's recorders record. opts is used as manager.New uses
// it, except:
//
//   - EventBroadcaster must be nil: herald provides the broadcasters.
//   - With LeaderElection on and no LeaderElectionResourceLockInterface,
//     NewManager builds the resource lock as controller-runtime would
//     (leaderelection.NewResourceLock, with LeaderElectionConfig if set),
//     with herald's core/v1 recorder, so leader election's events go
//     through herald too. They are written with cfg, like every herald
//     event, even when LeaderElectionConfig points elsewhere
//     (controller-runtime writes them with LeaderElectionConfig).
//
// herald writes with clients of its own made from cfg
// (sink.NewForConfig and events.NewForConfig: no client-side rate limit,
// herald's write limit being the budget, and a " herald-events" user
// agent), and logs through opts.Logger (by default
// controller-runtime's log.Log, as the manager does); while V(1) is enabled
// there, every event is also logged, as controller-runtime's recorders do
// (the level is read at each event).
//
// NewManager starts herald's goroutines at once: call Start, or Shutdown
// when the manager is dropped without being started.
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
// name reportingController name (a qualified name). Objects' kinds are
// resolved with the manager's scheme.
func (m *Manager) GetEventRecorder(name string) recorder.EventRecorder {
	// herald's recorders also implement AnnotatedEventRecorder.
	return m.c.EventsRecorder(name).(recorder.EventRecorder)
}

// GetEventRecorderFor returns a herald core/v1 recorder with source
// component name.
//
// Deprecated: as controller-runtime's, it records through the old events
// API; use GetEventRecorder.
func (m *Manager) GetEventRecorderFor(name string) clientrecord.EventRecorder {
	return m.c.CoreRecorder(name)
}

// Start starts the manager (manager.Manager's Start) and, once it has
// stopped, writes what herald still holds within what is left of the
// manager's GracefulShutdownTimeout, counted from when ctx ended, then stops
// herald's goroutines. Events recorded after that are dropped and counted
// (Stats().Dropped.AfterShutdown). It returns the manager's error, or
// else the shutdown's (events abandoned at the deadline, counted).
//
// A manager starts once: a second call returns an error at once, and does
// not stop herald under the running manager.
//
// When the manager stops on its own (an error, leader election lost)
// rather than because ctx ended, the flush gets the whole
// GracefulShutdownTimeout from that moment.
func (m *Manager) Start(ctx context.Context) error {
	return m.c.Start(ctx)
}

// Flush waits until every event recorded so far, through either API, has
// been written (or dropped, counted), or ctx ends.
func (m *Manager) Flush(ctx context.Context) error {
	return m.c.Flush(ctx)
}

// Shutdown writes what is pending until ctx ends and stops herald's
// goroutines. Start calls it; call it yourself only if you never call
// Start. It may be called from a watcher's handler (see Broadcasters), as
// the broadcasters' own ShutdownWithContext may: the broadcasters are shut
// down one after the other on the caller's goroutine, while both keep
// writing.
func (m *Manager) Shutdown(ctx context.Context) error {
	return m.c.Shutdown(ctx)
}

// Broadcasters returns herald's broadcasters behind the manager, for
// watchers (StartEventWatcher, StartLogging) and metrics
// (record/metrics.NewCollector takes either).
func (m *Manager) Broadcasters() (core record.EventBroadcaster, eventsV1 events.EventBroadcaster) {
	return m.c.Broadcasters()
}

package controllerruntime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clientrecord "k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// Option configures the broadcasters behind the manager.
type Option func(*options)

type options struct {
	record []record.BroadcasterOption
	events []events.Option
}

// WithBroadcasterOptions gives options of package record to both the
// core/v1 and the events.k8s.io/v1 broadcaster (record.WithSinkOptions,
// record.WithQueueLength, ...): a write limit thus applies to each API.
func WithBroadcasterOptions(opts ...record.BroadcasterOption) Option {
	return func(o *options) { o.record = append(o.record, opts...) }
}

// WithEventsOptions gives options of package events to the
// events.k8s.io/v1 broadcaster only (events.WithSeriesInterval).
func WithEventsOptions(opts ...events.Option) Option {
	return func(o *options) { o.events = append(o.events, opts...) }
}

// Defaults controller-runtime applies, which NewManager needs before
// manager.New applies them.
const (
	defaultGracefulShutdownTimeout = 30 * time.Second
	defaultRenewDeadline           = 10 * time.Second
)

// Manager is a controller-runtime manager whose event recorders are
// herald's. It embeds the manager built by manager.New, so it is a
// manager.Manager and passes everywhere one is expected.
type Manager struct {
	manager.Manager

	core    record.EventBroadcaster
	events  events.EventBroadcaster
	scheme  *runtime.Scheme // the manager's, known before manager.New returns
	grace   time.Duration   // < 0: no limit
	started sync.Once
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
// controller-runtime's log.Log, as the manager does); with V(1) enabled
// there, every event is also logged, as controller-runtime's recorders do.
//
// NewManager starts herald's goroutines at once: call Start, or Shutdown
// when the manager is dropped without being started.
func NewManager(cfg *rest.Config, opts manager.Options, heraldOpts ...Option) (*Manager, error) {
	if cfg == nil {
		return nil, errors.New("heraldcr: NewManager: nil rest.Config")
	}
	//lint:ignore SA1019 refusing the deprecated option is what NewManager documents
	if opts.EventBroadcaster != nil {
		return nil, errors.New("heraldcr: NewManager: Options.EventBroadcaster is set; herald provides the broadcasters")
	}
	coreSink, err := sink.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("heraldcr: %w", err)
	}
	eventsSink, err := events.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("heraldcr: %w", err)
	}
	// As cluster.New defaults it. Known here because leader election's
	// resource lock asks for its recorder (GetEventRecorderFor) before
	// manager.New has returned, when m.Manager is still nil.
	if opts.Scheme == nil {
		opts.Scheme = clientgoscheme.Scheme
	}
	logger := opts.Logger
	if logger.GetSink() == nil {
		logger = ctrllog.Log // as manager.New defaults it
	}
	logger = logger.WithName("events")
	var o options
	for _, opt := range heraldOpts {
		if opt != nil {
			opt(&o)
		}
	}
	recordOpts := append([]record.BroadcasterOption{record.WithLogger(logger)}, o.record...)
	m := &Manager{
		core:   record.NewBroadcaster(recordOpts...),
		events: events.NewBroadcaster(eventsSink, append([]events.Option{events.WithBroadcasterOptions(recordOpts...)}, o.events...)...),
		scheme: opts.Scheme,
		grace:  defaultGracefulShutdownTimeout,
	}
	if opts.GracefulShutdownTimeout != nil {
		m.grace = *opts.GracefulShutdownTimeout
	}
	fail := func(err error) (*Manager, error) {
		m.core.Shutdown()
		m.events.Shutdown()
		return nil, err
	}
	if opts.LeaderElection && opts.LeaderElectionResourceLockInterface == nil {
		leaderCfg := cfg
		if opts.LeaderElectionConfig != nil {
			leaderCfg = opts.LeaderElectionConfig
		}
		renew := defaultRenewDeadline
		if opts.RenewDeadline != nil {
			renew = *opts.RenewDeadline
		}
		lock, err := leaderelection.NewResourceLock(rest.CopyConfig(leaderCfg), m, leaderelection.Options{
			LeaderElection:             true,
			LeaderElectionResourceLock: opts.LeaderElectionResourceLock,
			LeaderElectionID:           opts.LeaderElectionID,
			LeaderElectionNamespace:    opts.LeaderElectionNamespace,
			RenewDeadline:              renew,
			LeaderLabels:               opts.LeaderElectionLabels,
		})
		if err != nil {
			return fail(err)
		}
		opts.LeaderElectionResourceLockInterface = lock
	}
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		return fail(err)
	}
	m.Manager = mgr
	m.core.StartRecordingToSink(coreSink)
	if err := m.events.StartRecordingToSinkWithContext(context.Background()); err != nil {
		return fail(err)
	}
	if logger.V(1).Enabled() {
		// As controller-runtime's recorder provider does.
		m.core.StartStructuredLogging(1)
		m.events.StartStructuredLogging(1)
	}
	return m, nil
}

// GetEventRecorder returns a herald events.k8s.io/v1 recorder whose events
// name reportingController name (a qualified name). Objects' kinds are
// resolved with the manager's scheme.
func (m *Manager) GetEventRecorder(name string) recorder.EventRecorder {
	// herald's recorders also implement AnnotatedEventRecorder.
	return m.events.NewRecorder(m.scheme, name).(recorder.EventRecorder)
}

// GetEventRecorderFor returns a herald core/v1 recorder with source
// component name.
//
// Deprecated: as controller-runtime's, it records through the old events
// API; use GetEventRecorder.
func (m *Manager) GetEventRecorderFor(name string) clientrecord.EventRecorder {
	return m.core.NewRecorder(m.scheme, corev1.EventSource{Component: name})
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
	first := false
	m.started.Do(func() { first = true })
	if !first {
		return errors.New("heraldcr: manager already started")
	}
	var stoppedAt atomic.Pointer[time.Time]
	stop := context.AfterFunc(ctx, func() { t := time.Now(); stoppedAt.Store(&t) })
	err := m.Manager.Start(ctx)
	stop()
	at := time.Now() // the manager stopped before ctx ended
	if t := stoppedAt.Load(); t != nil {
		at = *t
	}
	sctx := context.Background()
	if m.grace >= 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithDeadline(sctx, at.Add(m.grace))
		defer cancel()
	}
	serr := m.Shutdown(sctx)
	if err != nil {
		return err
	}
	return serr
}

// Flush waits until every event recorded so far, through either API, has
// been written (or dropped, counted), or ctx ends.
func (m *Manager) Flush(ctx context.Context) error {
	return errors.Join(m.core.Flush(ctx), m.events.Flush(ctx))
}

// Shutdown writes what is pending until ctx ends and stops herald's
// goroutines. Start calls it; call it yourself only if you never call
// Start. It may be called from a watcher's handler (see Broadcasters), as
// the broadcasters' own ShutdownWithContext may: the broadcasters are shut
// down one after the other on the caller's goroutine, while both keep
// writing.
func (m *Manager) Shutdown(ctx context.Context) error {
	return errors.Join(m.core.ShutdownWithContext(ctx), m.events.ShutdownWithContext(ctx))
}

// Stats returns the counters of the core/v1 broadcaster (GetEventRecorderFor
// and leader election) and of the events.k8s.io/v1 one (GetEventRecorder).
func (m *Manager) Stats() (core, eventsV1 record.Stats) {
	return m.core.Stats(), m.events.Stats()
}

// Broadcasters returns herald's broadcasters behind the manager, for
// watchers (StartEventWatcher, StartLogging) and metrics
// (record/metrics.NewCollector takes either).
func (m *Manager) Broadcasters() (core record.EventBroadcaster, eventsV1 events.EventBroadcaster) {
	return m.core, m.events
}

// Package core is what herald's controller-runtime modules share: the
// manager behind heraldcr.NewManager, built on herald's public API and on
// the part of controller-runtime's API that v0.23 to v0.25 have in common.
// It never names the type GetEventRecorder returns (client-go's
// events.EventRecorder up to v0.24, controller-runtime's
// recorder.EventRecorder from v0.25): each module's Manager adds that
// method, so that one source builds against every controller-runtime this
// module's go.mod allows.
package core

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
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// Options are herald's options of a manager (each module's Option sets
// them).
type Options struct {
	Record []record.BroadcasterOption
	Events []events.Option
}

// Collect applies a module's options.
func Collect[O ~func(*Options)](opts []O) Options {
	var o Options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// Defaults controller-runtime applies, which New needs before manager.New
// applies them.
const (
	defaultGracefulShutdownTimeout = 30 * time.Second
	defaultRenewDeadline           = 10 * time.Second
)

// Manager holds herald's broadcasters behind a controller-runtime manager.
type Manager struct {
	// Manager is the manager manager.New built.
	Manager manager.Manager

	core    record.EventBroadcaster
	events  events.EventBroadcaster
	scheme  *runtime.Scheme // the manager's, known before manager.New returns
	grace   time.Duration   // < 0: no limit
	started sync.Once
}

// New is heraldcr.NewManager (see its doc). provider is called once the
// broadcasters exist and before leader election's resource lock is built:
// it returns the module's Manager (which wraps the core it is given), the
// recorder.Provider the lock takes its core/v1 recorder from.
func New(cfg *rest.Config, opts manager.Options, o Options, provider func(*Manager) recorder.Provider) (*Manager, error) {
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
	// manager.New has returned.
	if opts.Scheme == nil {
		opts.Scheme = clientgoscheme.Scheme
	}
	logger := opts.Logger
	if logger.GetSink() == nil {
		logger = ctrllog.Log // as manager.New defaults it
	}
	logger = logger.WithName("events")
	recordOpts := append([]record.BroadcasterOption{record.WithLogger(logger)}, o.Record...)
	m := &Manager{
		core:   record.NewBroadcaster(recordOpts...),
		events: events.NewBroadcaster(eventsSink, append([]events.Option{events.WithBroadcasterOptions(recordOpts...)}, o.Events...)...),
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
	p := provider(m)
	if opts.LeaderElection && opts.LeaderElectionResourceLockInterface == nil {
		leaderCfg := cfg
		if opts.LeaderElectionConfig != nil {
			leaderCfg = opts.LeaderElectionConfig
		}
		renew := defaultRenewDeadline
		if opts.RenewDeadline != nil {
			renew = *opts.RenewDeadline
		}
		lock, err := leaderelection.NewResourceLock(rest.CopyConfig(leaderCfg), p, leaderelection.Options{
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
	// As controller-runtime's recorder provider does: always, the level
	// read at each event, so that a V(1) enabled later (a logger whose
	// level changes at run time, or ctrl.SetLogger called after
	// NewManager) logs the events from then on.
	m.core.StartStructuredLogging(1)
	m.events.StartStructuredLogging(1)
	return m, nil
}

// EventsRecorder returns a herald events.k8s.io/v1 recorder whose events
// name reportingController name; each module's GetEventRecorder returns it
// as the type its controller-runtime asks for.
func (m *Manager) EventsRecorder(name string) events.EventRecorderLogger {
	return m.events.NewRecorder(m.scheme, name)
}

// CoreRecorder returns a herald core/v1 recorder with source component
// name (GetEventRecorderFor).
func (m *Manager) CoreRecorder(name string) clientrecord.EventRecorder {
	return m.core.NewRecorder(m.scheme, corev1.EventSource{Component: name})
}

// Start is heraldcr's Manager.Start (see its doc).
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

// Flush is heraldcr's Manager.Flush.
func (m *Manager) Flush(ctx context.Context) error {
	return errors.Join(m.core.Flush(ctx), m.events.Flush(ctx))
}

// Shutdown is heraldcr's Manager.Shutdown.
func (m *Manager) Shutdown(ctx context.Context) error {
	return errors.Join(m.core.ShutdownWithContext(ctx), m.events.ShutdownWithContext(ctx))
}

// Stats is heraldcr's Manager.Stats.
func (m *Manager) Stats() (core, eventsV1 record.Stats) {
	return m.core.Stats(), m.events.Stats()
}

// Broadcasters is heraldcr's Manager.Broadcasters.
func (m *Manager) Broadcasters() (core record.EventBroadcaster, eventsV1 events.EventBroadcaster) {
	return m.core, m.events
}

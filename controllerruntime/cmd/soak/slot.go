package main

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	heraldcr "github.com/heraldk8s/herald/controllerruntime"
	"github.com/heraldk8s/herald/internal/testing/soak"
	heraldrecord "github.com/heraldk8s/herald/record"
)

// managerSlots are the soak's slots of controller-runtime managers
// (heraldcr.NewManager), one per event API: each incarnation is a manager
// of its own that records through the recorder a reconciler would get from
// it (GetEventRecorder, and the deprecated GetEventRecorderFor of core/v1),
// runs (Start) until the schedule restarts it or the soak ends, and stops as
// a controller does: Start's context cancelled, herald writing what it
// holds within the manager's GracefulShutdownTimeout.
func managerSlots() []soak.Extra {
	return []soak.Extra{
		{Name: "heraldcr.Manager GetEventRecorder (events.k8s.io/v1)", EventsAPI: true, Start: startManager(true)},
		{Name: "heraldcr.Manager GetEventRecorderFor (core/v1)", Start: startManager(false)},
	}
}

// managerRecorder is one incarnation of a manager slot.
type managerRecorder struct {
	mgr      *heraldcr.Manager
	eventsV1 bool
	events   recorder.EventRecorder // eventsV1
	core     record.EventRecorder   // !eventsV1
	stop     context.CancelFunc
	done     chan error // Start's error
}

// startManager returns the Start of a manager slot recording
// events.k8s.io/v1 events (eventsV1) or core/v1 events. It builds a manager
// that writes with the soak's configuration (the fault proxy, the tap),
// with the incarnation's Shutdown deadline as its GracefulShutdownTimeout,
// and starts it.
func startManager(eventsV1 bool) func(soak.ExtraStart) (soak.ExtraRecorder, error) {
	return func(in soak.ExtraStart) (soak.ExtraRecorder, error) {
		return newManagerRecorder(in, eventsV1)
	}
}

func newManagerRecorder(in soak.ExtraStart, eventsV1 bool) (*managerRecorder, error) {
	grace := in.ShutdownWithin
	mgr, err := heraldcr.NewManager(in.Config, manager.Options{
		Logger:                  in.Logger,
		Metrics:                 metricsserver.Options{BindAddress: "0"}, // no metrics server
		GracefulShutdownTimeout: &grace,
	}, heraldcr.WithBroadcasterOptions(in.Options...))
	if err != nil {
		return nil, err
	}
	m := &managerRecorder{mgr: mgr, eventsV1: eventsV1, done: make(chan error, 1)}
	if eventsV1 {
		m.events = mgr.GetEventRecorder(in.Component)
	} else {
		//lint:ignore SA1019 the core/v1 recorder is what many controllers still use
		m.core = mgr.GetEventRecorderFor(in.Component)
	}
	var ctx context.Context
	ctx, m.stop = context.WithCancel(context.Background())
	go func() { m.done <- mgr.Start(ctx) }()
	return m, nil
}

func (m *managerRecorder) Record(obj *corev1.ObjectReference, reason, msg string) {
	if m.eventsV1 {
		m.events.Eventf(obj, nil, corev1.EventTypeNormal, reason, "Soak", "%s", msg)
		return
	}
	m.core.Eventf(obj, corev1.EventTypeNormal, reason, "%s", msg)
}

func (m *managerRecorder) Stats() heraldrecord.Stats {
	core, eventsV1 := m.mgr.Broadcasters()
	if m.eventsV1 {
		return eventsV1.Stats()
	}
	return core.Stats()
}

func (m *managerRecorder) Flush(ctx context.Context) error { return m.mgr.Flush(ctx) }

// Shutdown cancels Start's context and waits for Start to return: herald
// has then written what it held within the GracefulShutdownTimeout, which
// is ctx's deadline.
func (m *managerRecorder) Shutdown(ctx context.Context) error {
	m.stop()
	select {
	case err := <-m.done:
		return err
	case <-ctx.Done():
	}
	// Late: the ledger says by how much.
	select {
	case err := <-m.done:
		return err
	case <-time.After(time.Minute):
		return errors.New("the manager's Start had not returned a minute after its deadline")
	}
}

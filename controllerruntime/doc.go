// Package controllerruntime puts herald behind a controller-runtime
// manager in one call: replace
//
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{...})
//
// with
//
//	mgr, err := heraldcr.NewManager(cfg, ctrl.Options{...})
//
// (import heraldcr "github.com/heraldk8s/herald/controllerruntime"). Every
// recorder the manager hands out then records through herald:
// GetEventRecorder (events.k8s.io/v1, herald's events package),
// GetEventRecorderFor (core/v1, herald's record package) and leader
// election's. Each API has one sink, with an events client of its own, so
// leader election does not make events be written twice. When the manager
// stops, after its runnables (the reconcilers among them) have stopped,
// herald writes what is still pending within what is left of the manager's
// GracefulShutdownTimeout, counted from the moment Start's context ended.
//
// It is a module of its own, so that herald's core users do not inherit
// controller-runtime.
package controllerruntime

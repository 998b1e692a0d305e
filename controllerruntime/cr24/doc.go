// Package cr24 is herald's controllerruntime package for controller-runtime
// v0.23 and v0.24 (with k8s.io v0.35 and v0.36): replace
//
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{...})
//
// with
//
//	mgr, err := heraldcr.NewManager(cfg, ctrl.Options{...})
//
// (import heraldcr "github.com/heraldk8s/herald/controllerruntime/cr24").
// It is github.com/heraldk8s/herald/controllerruntime, name for name and
// behaviour for behaviour (see that package's doc), except the type
// GetEventRecorder returns: client-go's events.EventRecorder, as
// recorder.Provider asks up to v0.24 (v0.25 asks for its own
// recorder.EventRecorder, so one Manager type cannot serve both). Moving a
// controller to controller-runtime v0.25 is changing this import to
// github.com/heraldk8s/herald/controllerruntime.
//
// It is a module of its own, which requires controller-runtime v0.23.
package cr24

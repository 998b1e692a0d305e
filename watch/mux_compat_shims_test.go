package watch

import apiwatch "k8s.io/apimachinery/pkg/watch"

// The apimachinery watch names that mux_compat_test.go (apimachinery's own
// mux_test.go) uses unqualified: herald's Broadcaster hands out
// apimachinery's events and watches.
type (
	Event     = apiwatch.Event
	Interface = apiwatch.Interface
)

const (
	Added    = apiwatch.Added
	Modified = apiwatch.Modified
	Deleted  = apiwatch.Deleted
)

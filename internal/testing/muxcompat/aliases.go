// Package watch is apimachinery's own test of its watch mux (mux_test.go),
// run against herald's watch.Broadcaster from a module of its own, so that
// it sees only herald's public API, as a user's code does. `make test` runs
// it; so does `go test ./...` here (the root module's ./... does not descend
// into this module).
//
// The package keeps the test file's package name, watch, so that the file
// changes only in its imports.
package watch

import apiwatch "k8s.io/apimachinery/pkg/watch"

// The apimachinery watch names that mux_test.go uses unqualified: herald's
// Broadcaster hands out apimachinery's events and watches, and does not
// re-export their types.
type (
	Event     = apiwatch.Event
	Interface = apiwatch.Interface
)

// The event types of apimachinery that mux_test.go uses unqualified.
const (
	Added    = apiwatch.Added
	Modified = apiwatch.Modified
	Deleted  = apiwatch.Deleted
)

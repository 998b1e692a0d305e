// Package controller is a small but real Kubernetes controller that records
// Events with herald. It is the logic of the examples/controller program, as
// an importable package so that the demo (make demo) and the integration
// tests run it in-process.
//
// The controller watches ConfigMaps labelled herald.example/managed=true
// through a shared informer, feeds their keys to a rate-limited workqueue, and
// reconciles each one: a ConfigMap is valid when its data holds the key
// "mode" with one of the values "fast", "safe" or "off". A valid ConfigMap
// gets a Normal event with reason Synced, an invalid one a Warning event with
// reason InvalidSpec whose message says what is wrong. Every informer resync
// reconciles every ConfigMap again and repeats its event, so the counts of
// the events stored in the API server grow, as they do for a real controller
// that keeps reporting the same problem.
//
// [Run] starts everything and, when its context ends, stops the workers and
// the informer, then shuts the event broadcaster down with
// ShutdownWithContext, which writes the events still pending before it
// returns. The controller needs list and watch on configmaps, and create and
// patch on events (core group), in the namespaces it watches.
package controller

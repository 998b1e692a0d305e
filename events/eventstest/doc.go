// Package eventstest provides a structured in-memory recorder for tests of
// code that records events.k8s.io/v1 events through herald's (or
// client-go's) events.EventRecorderLogger.
//
// Unlike events.FakeRecorder, which formats each event as a string, a
// Recorder keeps every field, so tests can assert on them directly:
//
//	rec := eventstest.New()
//	reconcile(rec)
//	if got := rec.WithReason("Failed"); len(got) != 1 || got[0].Action != "Sync" {
//		t.Errorf("events: %v", rec.Events())
//	}
package eventstest

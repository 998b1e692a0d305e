// Package record records Kubernetes Events, with the API of client-go's
// k8s.io/client-go/tools/record and without its faults.
//
// # Switching from client-go
//
// Change the import path and keep the code:
//
//	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
//	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
//	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "my-controller"})
//	recorder.Eventf(obj, v1.EventTypeWarning, "InvalidSpec", "field %s: %v", path, err)
//	defer broadcaster.Shutdown() // flushes, then stops
//
// [EventRecorder] and [EventRecorderLogger] are client-go's interfaces
// (type aliases), so a herald recorder goes wherever a client-go recorder
// goes. [EventBroadcaster] has client-go's methods plus Flush,
// ShutdownWithContext and Stats. StartRecordingToSink takes client-go's
// *typedcorev1.EventSinkImpl unchanged and writes through its client as
// through herald's sink.EventSinkImpl: no retries inside client-go, and a
// shutdown cancels the requests in flight.
//
// # What is different
//
//   - Recording never blocks and never loses an event silently. Every event
//     ends in exactly one bucket of [Stats]: written (created or patched),
//     folded into another write's count (coalesced), filtered by the spam
//     filter, dropped with a reason, or abandoned at shutdown, with any
//     number of sinks (see [Stats] for the identity). Drops are logged at a
//     bounded rate through the contextual logger.
//   - A slow or stuck watcher fills only its own channel: Flush, Stats,
//     Shutdown and Start* never wait for it past their context.
//   - Events are written by a delivery engine (package sink): several
//     workers, oldest events first. A failure is judged by evidence (see
//     package sink): when the server fails for everyone, every event waits
//     behind one probe at a time (with backoff or after Retry-After, and
//     the first success releases them all); an event refused while the
//     server writes the others (a webhook failing its namespace, a
//     per-object limit) backs off alone, charged to its tries; a 429 with
//     Retry-After cuts an adaptive write rate and holds the refused event
//     for its Retry-After (it goes after the events recorded within that
//     time after it, and before younger ones) while the others go on;
//     Patch NotFound falls back to Create; permanent errors are dropped
//     and counted by reason. An event the server refuses never
//     holds up the others, and repeats of an event that is still waiting
//     become one write with the latest count.
//   - Shutdown flushes for a grace period (default 10 s) before it stops;
//     Flush waits for everything recorded so far.
//   - The correlator builds patches directly instead of diffing JSON,
//     aggregates deterministically, and by default keeps reasons apart in
//     the spam filter, so one noisy reason cannot silence another.
//     CorrelatorOptions.SpamKeyWithoutReason restores client-go's key.
//   - Every event written is valid: names are valid for any object name
//     and unique in the process even with a clock that stands still,
//     combined events' included; messages (combined ones too) are cut to
//     the message limit (WithMessageLimit, 1024 bytes by default), reason,
//     source and reporting fields to 128, on a UTF-8 boundary; an involved
//     object with an impossible namespace or an oversized field, an unknown
//     event type or invalid annotations are refused with a counted drop
//     (see "Valid events" in docs/options.md).
//   - A panic in a correlator option function (KeyFunc, MessageFunc,
//     SpamKeyFunc) drops that event instead of crashing the process.
//   - NewBroadcasterForTests(0) and WithSleepDuration(0) retry at once, as
//     in client-go; NewBroadcasterForTests also has no write limit.
//
// # Goroutines
//
// NewBroadcaster starts one goroutine (two with a cancellable [WithContext]
// context); each StartEventWatcher, StartLogging, StartStructuredLogging and
// StartRecordingToSink starts one more, and each sink also its engine's
// workers (4 by default) and dispatcher. Stop on the watch a
// Start* call returned stops that watcher's goroutines (a sink's once it
// has written, for at most the grace period, every event recorded before
// the Stop, those still queued included); Shutdown, or cancelling the
// WithContext context, stops them all. A watcher whose channel is full
// while Flush waits for it has, for that while, one more goroutine that
// hands it the flush mark. A handler that never returns keeps its own
// goroutine, which nothing waits for.
//
// # Tests
//
// [FakeRecorder] is client-go's fake recorder, except that it never blocks;
// package record/recordtest keeps structured events for assertions, and
// package sink/sinktest is an in-memory sink with fault injection.
package record

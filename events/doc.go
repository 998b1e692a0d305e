// Package events records events.k8s.io/v1 Events for controllers. It is
// client-go's k8s.io/client-go/tools/events API, so a user switches by
// changing the import path, on herald's pipeline: the queue, watchers,
// delivery engine, Flush, ShutdownWithContext, Stats and drop accounting
// of package record (see record's documentation for how they work).
//
//	s, err := events.NewForConfig(restConfig)
//	...
//	broadcaster := events.NewBroadcaster(s)
//	defer broadcaster.Shutdown() // writes what is pending, then stops
//	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil { ... }
//	recorder := broadcaster.NewRecorder(scheme.Scheme, "example.com/my-controller")
//	recorder.Eventf(pod, nil, corev1.EventTypeWarning, "BackOff", "Restart", "container %s crashed", name)
//
// # Series
//
// Events are keyed as client-go keys them: type, action, reason, reporting
// controller and instance, and the whole regarding and related references
// (not the note or the annotations: the first occurrence's are kept). The
// first occurrence of a key is created; each later one, within 6 minutes
// of the previous, makes the event a series: the event named as the first
// occurrence, with Series.Count the number of occurrences and
// Series.LastObservedTime the last one, written with client-go's patch
// ({"series":{"count":N,"lastObservedTime":T}}), or created with its series
// if the server no longer has it. Every occurrence is handed to the delivery
// engine, which writes the newest state of each series at most every
// WithSeriesInterval and folds the occurrences in between into that write
// (Stats().Coalesced), so the stored count lags by seconds, never by the 30
// minutes of client-go's refresh, and Flush and Shutdown write every count.
// At most 4096 series are open; the least recently seen is
// forgotten first, and its next occurrence starts a new event.
//
// # Validity
//
// The recorder makes the checks the API server makes, so that an event is
// refused once, at Eventf, with a counted drop (Stats().Dropped.Invalid) and
// a log line at a bounded rate, rather than sent and refused: the regarding
// object needs a reference, the type is Normal or Warning, the reason and
// the action are not empty, the reporting controller is a qualified name,
// annotations are valid. Fields longer than the server accepts are cut on a
// UTF-8 boundary: the note to the message limit (record.WithMessageLimit,
// at most 1024 bytes), the reason, action and reporting instance to 128.
//
// Events travel through the pipeline as core/v1 Events, which have every
// field of an events.k8s.io/v1 Event; the sink and the watchers convert
// them, as the API server does.
package events

// Package sink writes Events to the Kubernetes API server.
//
// It holds three things:
//
//   - [EventSink], the interface client-go's tools/record writes through. Its
//     method set is client-go's, so client-go's own *typedcorev1.EventSinkImpl
//     satisfies it. [ContextEventSink] adds context-taking variants that let a
//     deadline or a shutdown cancel a request in flight; herald's [EventSinkImpl]
//     implements both.
//   - [Classify], which sorts the errors a sink returns into the classes the
//     delivery engine acts on: retried (transport errors, 5xx, 429), Create on
//     Patch NotFound, and permanent drops (AlreadyExists, namespace terminating,
//     Forbidden, other 4xx, a sink that returns nonsense).
//   - [Engine], the delivery engine. It keeps the latest state of every
//     correlation key, hands keys to several workers through a typed
//     rate-limited workqueue, and retries per key with exponential backoff and
//     jitter, so one failing object or one slow request never holds up the
//     others. Repeats of a key that is still waiting are coalesced into one
//     write that carries the latest count. Every event it is given ends counted
//     in exactly one of [Stats]' buckets.
//
// Most users never touch this package directly: record.EventBroadcaster's
// StartRecordingToSink builds an Engine around the sink it is given.
//
// # Engine contract
//
// Add never blocks: when MaxPending distinct keys are already waiting, a new key
// is dropped and counted (an existing key still coalesces). One key is never
// written by two workers at once, so the count stored in the API server only
// grows. Writes pass through the engine's own token bucket so an event storm
// cannot use up the controller's API budget.
package sink

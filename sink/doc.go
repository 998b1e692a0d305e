// Package sink writes Events to the Kubernetes API server.
//
// It holds three things:
//
//   - [EventSink], the interface client-go's tools/record writes through. Its
//     method set is client-go's, so client-go's own *typedcorev1.EventSinkImpl
//     satisfies it. [ContextEventSink] adds context-taking variants that let a
//     deadline or a shutdown cancel a request in flight; herald's [EventSinkImpl]
//     implements both, and [NewForConfig] builds one with an events client of
//     its own.
//   - [Classify], which sorts the errors a sink returns into the classes the
//     delivery engine acts on: retried (transport errors, timeouts, 5xx,
//     429), Create on Patch NotFound, and permanent drops (AlreadyExists,
//     namespace terminating, Forbidden, other 4xx, a request that cannot be
//     built, a sink that panics or returns nonsense).
//   - [Engine], the delivery engine.
//
// Most users never touch this package directly: record.EventBroadcaster's
// StartRecordingToSink builds an Engine around the sink it is given. What
// they choose is the sink: [NewForConfig] (recommended: herald's writes get
// a client and a budget of their own) or an [EventSinkImpl] over the
// controller's clientset.
//
// # The engine
//
// The engine keeps, per correlation key, the writes waiting (the newest
// state of each event: repeats of an event that is still waiting are
// coalesced into one write carrying the latest count; a new event of the
// same key waits behind as a write of its own, so no count is lost). A
// dispatcher hands keys to several workers, oldest first, never one key to
// two workers at once, so the count stored in the API server only grows.
//
// Failures of the server (transport errors, timeouts, 5xx) are shared:
// after one, every key waits and one probe at a time goes, after an
// exponential backoff with jitter (Options.BaseDelay, MaxDelay) or the
// server's Retry-After (capped at MaxDelay); its first success releases
// every key at once. A 429 is the server shedding load: while it accepts
// other writes (one succeeded within the Retry-After, at least a second),
// the write rate is cut, the other keys go on at that rate, and the
// refused key waits for the Retry-After unless it is the oldest waiting
// (then it goes first at the cut rate, as the oldest always does; an
// engine with nothing else to write waits out the Retry-After). With
// nothing accepted lately a 429 is an outage answered 429, handled as
// above. Answers about one event stay with
// that key: 404 on a patch creates it, AlreadyExists, Forbidden, Invalid
// and namespace terminating drop it. A key whose writes fail while the
// server answers the others is dropped after MaxTries of its own failures
// (a 429 included: a key refused again and again while the others are
// accepted meets a limit of its own); failed probes, and 429s when nothing
// is accepted, are not charged to a key, so during an outage events wait,
// however long it lasts (MaxPending bounds them).
//
// Writes go through a token bucket (Options.QPS and Burst, 50/s and 100 by
// default) whose rate adapts to the server, as TCP's congestion window
// does to losses, with the 429 as the loss and the Retry-After as the
// round: a 429 cuts the rate to 0.7 times the rate of recent successful
// writes (once per Retry-After), it grows back by 0.5 writes/s plus 10% per
// second while writes wait for it, an engine back from a Retry-After pause
// slow-starts, and one that idles within a minute of trouble restarts
// gently instead of with its full burst. The growth and the restart are
// scaled by how much waiting the engine carries (the summed ages of its
// pending events), so that a fleet serves old events first; engines whose
// events have waited longest also come back first after a Retry-After.
// In-flight writes are bounded by a window that starts at one and falls
// back to one after a server-wide failure. Many engines writing to one
// server then converge to its capacity instead of offering a multiple of
// it, drain a shared backlog about oldest first, and send about one probe
// each per backoff step while it is down. [Stats] shows the server state
// (healthy, shedding, probing), the current rate, the events held back and
// the age of the oldest pending event.
//
// Options.KeyInterval (off by default) spaces the writes of each key: a hot
// series (one event repeated many times a second) is then written at most
// once per interval, counted from when the key's previous write was sent,
// its newest state carrying the repeats in between. Other keys are not
// delayed, a retry after a server-wide failure is timed by the backoff
// alone, and a Flush writes what it waits for at once.
//
// # Contract
//
// Add never blocks: when MaxPending writes are already waiting, a new one is
// dropped and counted (a repeat of a waiting event still coalesces). Every
// event given to Add ends counted in exactly one of Stats' buckets. Stop
// returns by its context's deadline (plus 100 ms) whatever the sink does;
// a write still stuck then is counted as abandoned, and only its goroutine
// stays until the sink call returns.
package sink

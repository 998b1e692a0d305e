// Package watch fans events out from producers to watchers. It has the API
// and meaning of apimachinery's watch mux, the Broadcaster of
// k8s.io/apimachinery/pkg/watch ([NewBroadcaster], [NewLongQueueBroadcaster],
// [WaitIfChannelFull], [DropIfChannelFull], Action, ActionOrDrop, Watch,
// WatchWithPrefix, Shutdown), so code written for that mux switches by
// changing its import path, and it hands out apimachinery's types: every
// event is an apimachinery watch.Event and every watcher an apimachinery
// watch.Interface, so anything that consumes an apimachinery watch
// (watch.Filter, a range over ResultChan, code written for client-go's record
// package) consumes ours unchanged. apimachinery's own mux tests pass against
// it from another module with only the import changed
// (internal/testing/muxcompat), but for TestBroadcasterShutdownRace, which
// drives apimachinery's internals and is rewritten there.
//
// herald's record package produces its events through a Broadcaster.
//
// # Model
//
// A [Broadcaster] has one incoming queue and one loop goroutine. Producers
// put events on the queue with [Broadcaster.Action] (which waits while the
// queue is full) or [Broadcaster.ActionOrDrop] (which never waits and drops
// instead). The loop takes the events off the queue in order and hands each
// to every registered watcher through the watcher's buffered channel. What
// happens when a watcher's channel is full is chosen per broadcaster with a
// [FullChannelBehavior]: [WaitIfChannelFull] waits for the watcher, and so
// delays every other watcher and eventually the producers, while
// [DropIfChannelFull] skips the event for that watcher and counts the drop.
//
// A new watcher is registered through the same incoming queue, so it sees
// exactly the events queued after its registration and none queued before,
// however far the loop lags behind the producers. [Broadcaster.WatchWithPrefix]
// lets a watcher start with some events of its own choosing.
//
// # Shutdown and ownership
//
// The constructors start the loop goroutine; [Broadcaster.Shutdown] stops it,
// and a Broadcaster that is never shut down leaks it. Shutdown first hands
// everything already queued to the watchers, then closes every watcher's
// channel and returns once the loop has exited. Under [WaitIfChannelFull] a
// watcher that is neither read nor stopped holds Shutdown up for ever;
// [Broadcaster.ShutdownWithContext] keeps a deadline: when its context ends,
// the loop stops waiting, counts what the full watchers miss as dropped,
// closes every channel and exits. After Shutdown every method that would
// queue something returns [ErrShutdown]; none of them panics, however they
// race with Shutdown.
//
// A consumer ends its watch with the watcher's Stop, which closes the
// watcher's channel at once, wakes the loop if it is waiting for that
// watcher, and is safe to call any number of times, before, during or after
// Shutdown.
//
// # Differences from apimachinery
//
//   - ActionOrDrop never waits: apimachinery's takes a mutex that Watch,
//     a watcher's Stop and Shutdown hold while they wait for room in the
//     queue.
//   - Watch and WatchWithPrefix return as soon as the registration is queued,
//     and a watcher's Stop returns at once; apimachinery's wait for the loop.
//   - [Broadcaster.ShutdownWithContext] bounds the shutdown; apimachinery's
//     Shutdown can wait for a stuck watcher for ever.
//   - Drops are counted: [Broadcaster.Stats].
//   - Errors after Shutdown are [ErrShutdown], usable with errors.Is (its
//     text is apimachinery's).
//   - An Action, Watch or WatchWithPrefix waiting for room in the incoming
//     queue when Shutdown starts returns ErrShutdown with nothing queued:
//     Shutdown does not wait for the callers a full queue holds.
//     apimachinery's Shutdown waits for them and delivers their events.
//   - The loop offers each event to the watchers in the order they registered
//     (apimachinery's order is unspecified).
//   - herald's record package also queues marks, markers that reach every
//     watcher even when its channel is full, behind everything queued
//     before them; its Flush is built on them. They are not public API.
package watch

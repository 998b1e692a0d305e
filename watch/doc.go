// Package watch fans events out from producers to watchers. It is herald's
// own implementation of the broadcaster found in apimachinery's
// k8s.io/apimachinery/pkg/watch, and it hands out apimachinery's types: every
// event is an apimachinery watch.Event and every [Watcher] is an
// apimachinery watch.Interface, so anything that consumes an apimachinery
// watch (watch.Filter, a range over ResultChan, code written for
// client-go's record package) consumes ours unchanged.
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
// channel and returns once the loop has exited. After Shutdown every method
// that would queue something returns [ErrShutdown]; none of them panics,
// however they race with Shutdown.
//
// A consumer ends its watch with [Watcher.Stop], which closes the watcher's
// channel at once, wakes the loop if it is waiting for that watcher, and is
// safe to call any number of times, before, during or after Shutdown.
//
// # Marks
//
// [Broadcaster.Mark] is a herald extension with no counterpart in
// apimachinery: it queues a marker object behind everything already queued,
// and every watcher gets it, even one whose channel is full under
// [DropIfChannelFull]: such a watcher gets it from a goroutine of its own as
// soon as it has room, and the loop goes on with the others at once, so a
// stuck watcher fills only its own channel. A consumer that receives its
// mark knows it has been offered every event queued before it. herald's
// record package builds Flush on it.
//
// # Differences from apimachinery
//
//   - ActionOrDrop never waits: apimachinery's takes a mutex that Watch,
//     Watcher.Stop and Shutdown hold while they wait for room in the queue.
//   - Watch and WatchWithPrefix return as soon as the registration is queued,
//     and Watcher.Stop returns at once; apimachinery's wait for the loop.
//   - Drops are counted: [Watcher.Dropped] and [Broadcaster.Stats].
//   - Errors after Shutdown are [ErrShutdown], usable with errors.Is.
//   - The loop offers each event to the watchers in the order they registered
//     (apimachinery's order is unspecified).
package watch

// Package watchext is what herald's record package uses of package watch
// beyond watch's public API: marks (the primitive record's Flush is built
// on), a broadcaster whose loop prepares each event, and the counters of
// each watcher. Package watch fills it in when it is initialized.
//
// Everything here means what it did when it was exported from watch; see
// the comments of watch's broadcaster.go for the details of marks.
package watchext

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	apiwatch "k8s.io/apimachinery/pkg/watch"
)

// Watcher is the dynamic type of every watch.Interface a watch.Broadcaster
// hands out, as its in-module users see it.
type Watcher interface {
	apiwatch.Interface
	// Stopped returns a channel that is closed when Stop is called (not
	// when Shutdown closes the watcher's channel).
	Stopped() <-chan struct{}
	// Dropped returns how many events this watcher missed because its
	// channel was full when the loop offered them (under DropIfChannelFull,
	// or once ShutdownWithContext gave up waiting; marks are never
	// dropped).
	Dropped() uint64
	// Offered returns how many events the loop offered this watcher: those
	// it put in the channel plus those counted in Dropped; marks are not
	// counted. Once the watcher is stopped or closed the count no longer
	// changes, so Offered minus Dropped is then exactly the number of events
	// the channel received.
	Offered() uint64
}

// MarkNotifier is implemented by a mark object that wants to know when the
// loop has passed it: see Funcs.Mark.
type MarkNotifier interface {
	// MarkDistributed is called by the loop goroutine once it has offered
	// the mark to every watcher (delivered it, or left it to a watcher's
	// own goroutine). It must return at once.
	MarkDistributed()
}

// Funcs are the functions of package watch that are not public API. B is
// watch.Broadcaster, which this package cannot name.
type Funcs[B any] struct {
	// NewPreparing is watch.NewLongQueueBroadcaster(queueLength, behavior)
	// with a function the loop goroutine calls on each event (not on marks)
	// before offering it to the watchers, when there are any: work that the
	// producers need not wait for, such as naming the event. prepare must
	// not block, and must not call the broadcaster. behavior is a
	// watch.FullChannelBehavior.
	NewPreparing func(queueLength, behavior int, prepare func(runtime.Object)) *B
	// Mark queues obj behind everything already queued, as an event of type
	// watch.Added, and returns once it is queued; it waits for room in the
	// incoming queue until ctx ends (ctx.Err()) or Shutdown is called
	// (watch.ErrShutdown). The loop delivers the mark to every watcher
	// registered at that point, whatever the FullChannelBehavior (a full
	// watcher gets it as soon as it has room, until it is stopped, Shutdown
	// is called or ctx ends), so a consumer that receives it has been
	// offered every event queued before it. If obj implements MarkNotifier,
	// the loop calls MarkDistributed once it has offered the mark to every
	// watcher.
	Mark func(b *B, ctx context.Context, obj runtime.Object) error
}

var funcs any

// Set is called by package watch, once, when it is initialized.
func Set[B any](f Funcs[B]) { funcs = f }

// Get returns the functions package watch set. It is valid from the
// initialization of any package that imports watch.
func Get[B any]() Funcs[B] { return funcs.(Funcs[B]) }

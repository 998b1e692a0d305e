//go:build !race

package watch_test

import (
	"testing"

	apiwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/heraldk8s/herald/watch"
)

// The race detector allocates on its own, hence the build constraint.

func TestActionOrDropDoesNotAllocate(t *testing.T) {
	obj := &num{1}
	t.Run("drop", func(t *testing.T) {
		b, w := stuck(t) // every call drops
		defer b.Shutdown()
		defer w.Stop()
		if n := testing.AllocsPerRun(1000, func() {
			if ok, _ := b.ActionOrDrop(apiwatch.Added, obj); ok {
				t.Fatal("queued while the loop is stuck")
			}
		}); n != 0 {
			t.Errorf("ActionOrDrop (drop) allocates %v times per call, want 0", n)
		}
	})
	t.Run("queue", func(t *testing.T) {
		b := watch.NewLongQueueBroadcaster(2000, watch.DropIfChannelFull)
		defer b.Shutdown()
		if n := testing.AllocsPerRun(1000, func() {
			_, _ = b.ActionOrDrop(apiwatch.Added, obj)
		}); n != 0 {
			t.Errorf("ActionOrDrop (queue) allocates %v times per call, want 0", n)
		}
	})
}

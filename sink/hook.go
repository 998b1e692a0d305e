package sink

import (
	"time"

	"github.com/heraldk8s/herald/internal/hook"
)

// The events package spaces the writes of one series (its series interval)
// through the engine's key interval, which is not an option of its own.
func init() {
	hook.SetKeyInterval = func(opts any, d time.Duration) any {
		o := opts.(Options)
		o.keyInterval = d
		return o
	}
}

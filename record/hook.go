package record

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/correlator"
	"github.com/heraldk8s/herald/internal/hook"
)

// The events package runs on this package's broadcaster through the hook
// (see internal/hook).
func init() {
	hook.WithCorrelator = func(f hook.NewCorrelator) any {
		return BroadcasterOption(func(c *config) { c.newCorrelator = f })
	}
	hook.WithKeyInterval = func(d time.Duration) any {
		return BroadcasterOption(func(c *config) {
			if d >= 0 {
				c.keyInterval = d
			}
		})
	}
	hook.WithBeforeShutdown = func(f func()) any {
		return BroadcasterOption(func(c *config) { c.beforeShutdown = f })
	}
	hook.CoreOf = func(b any) (hook.Core, bool) {
		eb, ok := b.(*broadcaster)
		if !ok {
			return nil, false
		}
		return hookCore{eb}, true
	}
}

// hookCore is the broadcaster as the events package sees it.
type hookCore struct{ eb *broadcaster }

func (h hookCore) Begin(logger klog.Logger, scheme *runtime.Scheme, object runtime.Object, annotations map[string]string,
	eventtype, reason string, ref *v1.ObjectReference) (map[string]string, bool) {
	return h.eb.begin(logger, scheme, object, annotations, eventtype, reason, ref)
}

func (h hookCore) Related(logger klog.Logger, scheme *runtime.Scheme, related runtime.Object, ev *v1.Event) *v1.ObjectReference {
	return h.eb.related(logger, scheme, related, ev)
}

func (h hookCore) DropInvalid(logger klog.Logger, err error, msg string, kv func() []any) {
	h.eb.drop(logger, slotInvalid, err, msg, kv)
}

func (h hookCore) Enqueue(logger klog.Logger, ev *v1.Event) { h.eb.enqueue(logger, ev) }
func (h hookCore) DropQueueFull(logger klog.Logger, ev *v1.Event) {
	h.eb.drop(logger, slotQueueFull, nil, "Unable to record event: too many events held while recording restarts, dropped event",
		func() []any {
			return []any{"object", klog.KRef(ev.InvolvedObject.Namespace, ev.InvolvedObject.Name), "reason", ev.Reason}
		})
}
func (h hookCore) QueueLength() int           { return h.eb.cfg.queueLength }
func (h hookCore) Now() time.Time             { return h.eb.cfg.clock.Now() }
func (h hookCore) MessageLimit() int          { return h.eb.cfg.messageLimit }
func (h hookCore) GracePeriod() time.Duration { return h.eb.cfg.gracePeriod }
func (h hookCore) ShutDown() <-chan struct{}  { return h.eb.shutdownDone }
func (h hookCore) Logger() klog.Logger        { return h.eb.logger }
func (h hookCore) Stopping() bool             { return h.eb.stopping.Load() }

// newCorrelator makes the correlator of a new sink: the one given through
// the hook, else record's own.
func (eb *broadcaster) newCorrelator() hook.Correlator {
	if f := eb.cfg.newCorrelator; f != nil {
		return f(eb.cfg.clock)
	}
	return correlator.NewWithMessageLimit(eb.cfg.correlator, eb.cfg.messageLimit)
}

var (
	_ hook.Core       = hookCore{}
	_ hook.Correlator = (*correlator.EventCorrelator)(nil)
)

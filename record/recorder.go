package record

import (
	"fmt"
	"maps"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/heraldk8s/herald/internal/eventname"
)

// recorder is herald's EventRecorderLogger. It is a small value: WithLogger
// copies it.
type recorder struct {
	eb     *broadcaster
	scheme *runtime.Scheme
	source v1.EventSource
	logger klog.Logger
	clock  clock.PassiveClock // timestamps; nil: the broadcaster's (tests set it, as client-go's recorderImpl.clock)
}

var _ EventRecorderLogger = (*recorder)(nil)

func (r *recorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.generate(object, nil, eventtype, reason, message)
}

func (r *recorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	r.generate(object, nil, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

func (r *recorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...interface{}) {
	r.generate(object, annotations, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

func (r *recorder) WithLogger(logger klog.Logger) EventRecorderLogger {
	c := *r
	c.logger = logger
	return &c
}

// generate builds the event and queues it. It never blocks.
//
// Every field it writes is bounded (see names.go): the involved object's
// namespace must be a DNS-1123 label and its other fields at most 1024
// bytes, else the event is refused (a counted drop with a log line at a
// bounded rate), because a cut reference would name another object; the
// reason, source and reporting fields are cut to 128 bytes and the message
// to the message limit, on a UTF-8 boundary; the name is always a valid
// DNS-1123 subdomain, unique in the process. The checks cost no allocation.
func (r *recorder) generate(object runtime.Object, annotations map[string]string, eventtype, reason, message string) {
	eb := r.eb
	eb.c.recorded.Add(1)
	if eb.stopping.Load() {
		r.drop(slotAfterShutdown, nil, "Unable to record event: the broadcaster is shut down",
			func() []any { return []any{"objectType", fmt.Sprintf("%T", object), "reason", reason} })
		return
	}
	ref, err := eb.kinds.reference(r.scheme, object)
	if err != nil {
		r.drop(slotInvalid, err, "Could not construct reference, will not report event",
			func() []any {
				return []any{"objectType", fmt.Sprintf("%T", object), "eventType", eventtype, "reason", reason}
			})
		return
	}
	if problem := refProblem(ref); problem != "" {
		r.drop(slotInvalid, nil, "Invalid involved object reference, will not report event",
			func() []any {
				return []any{"problem", problem, "namespace", eventname.Truncate(ref.Namespace, 256),
					"name", eventname.Truncate(ref.Name, 256), "reason", eventname.Truncate(reason, maxReasonLength)}
			})
		return
	}
	if eventtype != v1.EventTypeNormal && eventtype != v1.EventTypeWarning {
		r.drop(slotInvalid, nil, "Unsupported event type, will not report event",
			func() []any {
				return []any{"object", klog.KRef(ref.Namespace, ref.Name), "eventType", eventtype, "reason", reason}
			})
		return
	}
	if len(annotations) > 0 {
		if errs := apivalidation.ValidateAnnotations(annotations, field.NewPath("metadata", "annotations")); len(errs) > 0 {
			r.drop(slotInvalid, errs.ToAggregate(), "Invalid event annotations, will not report event",
				func() []any { return []any{"object", klog.KRef(ref.Namespace, ref.Name), "reason", reason} })
			return
		}
		annotations = maps.Clone(annotations)
	}
	clk := r.clock
	if clk == nil {
		clk = eb.cfg.clock
	}
	now := clk.Now()
	t := metav1.Time{Time: now}
	namespace := ref.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	source := boundSource(r.source)
	ev := &v1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:        eventname.New(ref.Name, now),
			Namespace:   namespace,
			Annotations: annotations,
		},
		InvolvedObject:      *ref,
		Reason:              eventname.Truncate(reason, maxReasonLength),
		Message:             eventname.Truncate(message, eb.cfg.messageLimit),
		FirstTimestamp:      t,
		LastTimestamp:       t,
		Count:               1,
		Type:                eventtype,
		Source:              source,
		ReportingController: source.Component,
		ReportingInstance:   source.Host,
	}
	sent, err := eb.b.ActionOrDrop(apiwatch.Added, ev)
	switch {
	case err != nil:
		r.drop(slotAfterShutdown, err, "Unable to record event: the broadcaster is shut down",
			func() []any { return []any{"object", klog.KRef(ref.Namespace, ref.Name), "reason", reason} })
	case !sent:
		r.drop(slotQueueFull, nil, "Unable to record event: too many queued events, dropped event",
			func() []any { return []any{"object", klog.KRef(ref.Namespace, ref.Name), "reason", reason} })
	}
}

// drop counts one dropped event and logs it at a bounded rate: at error
// level at most once per reason and ratelog.Interval, else at V(4). It builds
// nothing when it does not log, so a drop costs no allocation.
func (r *recorder) drop(slot int, err error, msg string, kv func() []any) {
	n := r.eb.c.dropped[slot].Add(1)
	reason := slotReasons[slot]
	if r.eb.drops.Allow(slot, r.eb.cfg.clock.Now()) {
		r.logger.Error(err, msg, append(kv(), "dropReason", reason.String(), "droppedForReason", n)...)
	} else if v := r.logger.V(4); v.Enabled() {
		v.Info(msg, append(kv(), "dropReason", reason.String(), "droppedForReason", n, "err", err)...)
	}
}

// The drop reasons counted by the broadcaster itself (not by a watcher or an
// engine), as slots of its counters and of its drop-log limiter.
const (
	slotInvalid = iota
	slotQueueFull
	slotAfterShutdown
	slotCorrelatorPanicked
	numSlots
)

// slotReasons gives each slot its reason.
var slotReasons = [numSlots]DropReason{DropInvalid, DropQueueFull, DropAfterShutdown, DropCorrelatorPanicked}

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
	source v1.EventSource // cut to the bounds (boundSource)
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
// reason, source and reporting fields are made valid UTF-8 (each run of
// invalid bytes becomes one U+FFFD; the JSON encoder would write one per
// byte) and cut to 128 bytes, and the message to the message limit, on a
// rune boundary, so that they arrive as long as they were cut
// (eventname.Valid); the name is
// always a valid DNS-1123 subdomain, unique in the process. The checks cost
// no allocation for valid strings.
func (r *recorder) generate(object runtime.Object, annotations map[string]string, eventtype, reason, message string) {
	r.generateFull(object, nil, annotations, eventtype, reason, "", message)
}

// generateFull is generate with the fields events.k8s.io/v1 adds, which
// the API server keeps on a core/v1 event too: the related object and the
// action (cut to 128 bytes). A related object without a reference is left
// out, as client-go's events recorder does.
func (r *recorder) generateFull(object, related runtime.Object, annotations map[string]string, eventtype, reason, action, message string) {
	eb := r.eb
	if !eb.admit(r.logger, object, reason) {
		return // nothing allocated on the drop path
	}
	ev := &v1.Event{}
	annotations, ok := eb.check(r.logger, r.scheme, object, annotations, eventtype, reason, &ev.InvolvedObject)
	if !ok {
		return
	}
	ev.Reason = eventname.Valid(reason, maxReasonLength)
	ev.Related = eb.related(r.logger, r.scheme, related, ev)
	ev.Action = eventname.Valid(action, maxReasonLength)
	clk := r.clock
	if clk == nil {
		clk = eb.cfg.clock
	}
	t := metav1.Time{Time: clk.Now()}
	ev.Namespace = ev.InvolvedObject.Namespace
	if ev.Namespace == "" {
		ev.Namespace = metav1.NamespaceDefault
	}
	// The name is made by the broadcaster's loop, off the caller's path
	// (see nameEvent).
	ev.Annotations = annotations
	ev.Message = eventname.Valid(message, eb.cfg.messageLimit)
	ev.FirstTimestamp, ev.LastTimestamp = t, t
	ev.Count = 1
	ev.Type = eventtype
	ev.Source = r.source // bounded by NewRecorder
	ev.ReportingController = ev.Source.Component
	ev.ReportingInstance = ev.Source.Host
	eb.enqueue(r.logger, ev)
}

// nameEvent gives an event without a name its name, made from its
// involved object's name and its time (EventTime, else FirstTimestamp) by
// the process-wide stamp source, so that it is unique. The broadcaster's
// loop calls it before offering the event to the watchers: the name is made
// off the caller's path, and only when someone watches.
func nameEvent(obj runtime.Object) {
	ev, ok := obj.(*v1.Event)
	if !ok || ev.Name != "" {
		return
	}
	t := ev.EventTime.Time
	if t.IsZero() {
		t = ev.FirstTimestamp.Time
	}
	ev.Name = eventname.New(ev.InvolvedObject.Name, t)
}

// begin counts one recorded event and checks what every recorder checks
// (see hook.Core.Begin), writing the reference to object into *ref. It
// returns the annotations to store, or ok false when it dropped the event.
func (eb *broadcaster) begin(logger klog.Logger, scheme *runtime.Scheme, object runtime.Object, annotations map[string]string,
	eventtype, reason string, ref *v1.ObjectReference) (ann map[string]string, ok bool) {
	if !eb.admit(logger, object, reason) {
		return nil, false
	}
	return eb.check(logger, scheme, object, annotations, eventtype, reason, ref)
}

// admit counts one recorded event and drops it if the broadcaster is shut
// down. It allocates nothing.
func (eb *broadcaster) admit(logger klog.Logger, object runtime.Object, reason string) bool {
	eb.c.recorded.Add(1)
	if eb.stopping.Load() {
		eb.drop(logger, slotAfterShutdown, nil, "Unable to record event: the broadcaster is shut down",
			func() []any {
				return []any{"objectType", fmt.Sprintf("%T", object), "reason", eventname.Truncate(reason, maxReasonLength)}
			})
		return false
	}
	return true
}

// check is begin after admit.
func (eb *broadcaster) check(logger klog.Logger, scheme *runtime.Scheme, object runtime.Object, annotations map[string]string,
	eventtype, reason string, ref *v1.ObjectReference) (ann map[string]string, ok bool) {
	if err := eb.referenceInto(ref, scheme, object); err != nil {
		msg := "Could not construct reference, will not report event"
		if _, bad := err.(*invalidRefError); bad {
			msg = "Invalid involved object reference, will not report event"
		}
		eb.drop(logger, slotInvalid, err, msg,
			func() []any {
				return []any{"objectType", fmt.Sprintf("%T", object), "eventType", eventtype, "reason", eventname.Truncate(reason, maxReasonLength)}
			})
		return nil, false
	}
	if eventtype != v1.EventTypeNormal && eventtype != v1.EventTypeWarning {
		eb.drop(logger, slotInvalid, nil, "Unsupported event type, will not report event",
			func() []any {
				return []any{"object", klog.KRef(ref.Namespace, ref.Name), "eventType", eventname.Truncate(eventtype, maxReasonLength), "reason", eventname.Truncate(reason, maxReasonLength)}
			})
		return nil, false
	}
	if len(annotations) > 0 {
		if errs := apivalidation.ValidateAnnotations(annotations, field.NewPath("metadata", "annotations")); len(errs) > 0 {
			eb.drop(logger, slotInvalid, errs.ToAggregate(), "Invalid event annotations, will not report event",
				func() []any {
					return []any{"object", klog.KRef(ref.Namespace, ref.Name), "reason", eventname.Truncate(reason, maxReasonLength)}
				})
			return nil, false
		}
		annotations = maps.Clone(annotations)
	}
	return annotations, true
}

// reference returns the reference to object, or an error if there is none
// or it cannot be written as it is (refProblem).
func (eb *broadcaster) reference(scheme *runtime.Scheme, object runtime.Object) (*v1.ObjectReference, error) {
	ref := new(v1.ObjectReference)
	if err := eb.referenceInto(ref, scheme, object); err != nil {
		return nil, err
	}
	return ref, nil
}

// related returns the reference to the related object of ev (nil for
// none). One that cannot be referenced is left out, as client-go's events
// recorder leaves it out, and logged at V(2): the event is still reported.
func (eb *broadcaster) related(logger klog.Logger, scheme *runtime.Scheme, related runtime.Object, ev *v1.Event) *v1.ObjectReference {
	if related == nil {
		return nil
	}
	ref, err := eb.reference(scheme, related)
	if err != nil {
		logger.V(2).Info("Could not construct reference to the related object, reporting the event without it",
			"object", klog.KRef(ev.InvolvedObject.Namespace, ev.InvolvedObject.Name), "reason", eventname.Truncate(ev.Reason, maxReasonLength), "err", err)
	}
	return ref
}

// referenceInto is reference writing into *ref.
func (eb *broadcaster) referenceInto(ref *v1.ObjectReference, scheme *runtime.Scheme, object runtime.Object) error {
	if err := eb.kinds.referenceInto(ref, scheme, object); err != nil {
		return err
	}
	if problem := refProblem(ref); problem != "" {
		err := &invalidRefError{problem: problem, namespace: ref.Namespace, name: ref.Name}
		*ref = v1.ObjectReference{}
		return err
	}
	return nil
}

// invalidRefError is a reference that cannot be written as it is.
type invalidRefError struct{ problem, namespace, name string }

func (e *invalidRefError) Error() string {
	return fmt.Sprintf("invalid object reference (namespace %q, name %q): %s",
		eventname.Truncate(e.namespace, 256), eventname.Truncate(e.name, 256), e.problem)
}

// enqueue queues ev for every watcher. It never blocks; a full queue or a
// shutdown is a counted drop.
func (eb *broadcaster) enqueue(logger klog.Logger, ev *v1.Event) {
	sent, err := eb.b.ActionOrDrop(apiwatch.Added, ev)
	switch {
	case err != nil:
		eb.drop(logger, slotAfterShutdown, err, "Unable to record event: the broadcaster is shut down",
			func() []any {
				return []any{"object", klog.KRef(ev.InvolvedObject.Namespace, ev.InvolvedObject.Name), "reason", ev.Reason}
			})
	case !sent:
		eb.drop(logger, slotQueueFull, nil, "Unable to record event: too many queued events, dropped event",
			func() []any {
				return []any{"object", klog.KRef(ev.InvolvedObject.Namespace, ev.InvolvedObject.Name), "reason", ev.Reason}
			})
	}
}

// drop counts one dropped event and logs it at a bounded rate: at error
// level at most once per reason and ratelog.Interval, else at V(4). It builds
// nothing when it does not log, so a drop costs no allocation.
func (eb *broadcaster) drop(logger klog.Logger, slot int, err error, msg string, kv func() []any) {
	n := eb.c.dropped[slot].Add(1)
	reason := slotLabels[slot]
	if eb.drops.Allow(slot, eb.cfg.clock.Now()) {
		logger.Error(err, msg, append(kv(), "dropReason", reason, "droppedForReason", n)...)
	} else if v := logger.V(4); v.Enabled() {
		v.Info(msg, append(kv(), "dropReason", reason, "droppedForReason", n, "err", err)...)
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

// slotLabels gives each slot its reason's label (see sink.Drops).
var slotLabels = [numSlots]string{"invalid", "queue_full", "after_shutdown", "correlator_panicked"}

package recordtest

import (
	"fmt"
	"maps"
	"reflect"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/internal/eventlog"
	"github.com/heraldk8s/herald/record"
)

// Event is one recorded event.
type Event struct {
	// Object is the object the event is about, as passed.
	Object runtime.Object
	// Namespace and Name are the object's, when it has metadata.
	Namespace, Name       string
	Type, Reason, Message string
	Annotations           map[string]string
}

// String formats the event as record.FakeRecorder does without IncludeObject
// and annotations: "<type> <reason> <message>".
func (e Event) String() string { return e.Type + " " + e.Reason + " " + e.Message }

// Recorder is a record.EventRecorderLogger that keeps events in memory. The
// zero value is ready to use; it is safe for concurrent use.
type Recorder struct {
	log eventlog.Log[Event]
}

var _ record.EventRecorderLogger = (*Recorder)(nil)

// New returns an empty Recorder.
func New() *Recorder { return &Recorder{} }

// Event implements record.EventRecorder.
func (r *Recorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.add(object, nil, eventtype, reason, message)
}

// Eventf implements record.EventRecorder.
func (r *Recorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	r.add(object, nil, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

// AnnotatedEventf implements record.EventRecorder.
func (r *Recorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...interface{}) {
	r.add(object, annotations, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

// WithLogger returns r itself.
func (r *Recorder) WithLogger(klog.Logger) record.EventRecorderLogger { return r }

func (r *Recorder) add(object runtime.Object, annotations map[string]string, eventtype, reason, message string) {
	ev := Event{Object: object, Type: eventtype, Reason: reason, Message: message, Annotations: maps.Clone(annotations)}
	if rv := reflect.ValueOf(object); object != nil && !(rv.Kind() == reflect.Pointer && rv.IsNil()) {
		if ref, ok := object.(*v1.ObjectReference); ok {
			ev.Namespace, ev.Name = ref.Namespace, ref.Name
		} else if m, err := meta.Accessor(object); err == nil {
			ev.Namespace, ev.Name = m.GetNamespace(), m.GetName()
		}
	}
	r.log.Add(ev)
}

// Events returns a copy of the events recorded so far, in order.
func (r *Recorder) Events() []Event { return r.log.All() }

// WithReason returns the recorded events with the given reason.
func (r *Recorder) WithReason(reason string) []Event {
	return r.log.Filter(func(e Event) bool { return e.Reason == reason })
}

// Reset forgets every recorded event.
func (r *Recorder) Reset() { r.log.Reset() }

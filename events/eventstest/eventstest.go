package eventstest

import (
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/internal/eventlog"
)

// Event is one recorded event, as passed to the recorder (the note
// formatted with its arguments).
type Event struct {
	// Regarding and Related are the objects as passed (Related may be nil).
	Regarding, Related runtime.Object
	Type, Reason       string
	Action, Note       string
	// Annotations is a copy of the annotations passed (nil for Eventf).
	Annotations map[string]string
}

// String formats the event like events.FakeRecorder does (not verbose).
func (e Event) String() string { return e.Type + " " + e.Reason + " " + e.Note }

// Recorder is an events.EventRecorderLogger and
// events.AnnotatedEventRecorder that keeps events in memory. The zero value
// is ready to use; it is safe for concurrent use. It makes none of a real
// recorder's checks: every call is kept.
type Recorder struct {
	log eventlog.Log[Event]
}

var (
	_ events.EventRecorderLogger    = (*Recorder)(nil)
	_ events.AnnotatedEventRecorder = (*Recorder)(nil)
)

// New returns an empty Recorder.
func New() *Recorder { return &Recorder{} }

// Eventf implements events.EventRecorder.
func (r *Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	r.add(Event{Regarding: regarding, Related: related, Type: eventtype, Reason: reason, Action: action,
		Note: fmt.Sprintf(note, args...)})
}

// AnnotatedEventf implements events.AnnotatedEventRecorder.
func (r *Recorder) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...interface{}) {
	r.add(Event{Regarding: regarding, Related: related, Annotations: maps.Clone(annotations), Type: eventtype,
		Reason: reason, Action: action, Note: fmt.Sprintf(note, args...)})
}

// WithLogger returns r itself.
func (r *Recorder) WithLogger(klog.Logger) events.EventRecorderLogger { return r }

func (r *Recorder) add(e Event) {
	r.log.Add(e)
}

// Events returns a copy of the events recorded so far, in order.
func (r *Recorder) Events() []Event { return r.log.All() }

// WithReason returns the recorded events with the given reason, in order.
func (r *Recorder) WithReason(reason string) []Event {
	return r.log.Filter(func(e Event) bool { return e.Reason == reason })
}

// Reset forgets every recorded event.
func (r *Recorder) Reset() { r.log.Reset() }

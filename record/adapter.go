package record

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	cgevents "k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
)

// EventRecorderAdapter is client-go's: it lets a core/v1 recorder stand
// where an events.k8s.io/v1 recorder (client-go's events.EventRecorder) is
// expected. Around a herald recorder it keeps the action and the related
// object, which the API server stores on core/v1 events too; around another
// recorder it drops them, as client-go's does.
type EventRecorderAdapter struct {
	recorder EventRecorderLogger
}

// The adapter also has client-go's AnnotatedEventf (client-go v0.37 and
// later); it is not asserted here because herald builds with client-go v0.35
// too, which has no AnnotatedEventRecorder (see events/annotated.go).
var _ cgevents.EventRecorderLogger = (*EventRecorderAdapter)(nil)

// NewEventRecorderAdapter returns an adapter around recorder.
func NewEventRecorderAdapter(recorder EventRecorderLogger) *EventRecorderAdapter {
	return &EventRecorderAdapter{recorder: recorder}
}

// Eventf records an event about regarding with the message
// fmt.Sprintf(note, args...).
func (a *EventRecorderAdapter) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	if r, ok := a.recorder.(*recorder); ok {
		r.generateFull(regarding, related, nil, eventtype, reason, action, fmt.Sprintf(note, args...))
		return
	}
	a.recorder.Eventf(regarding, eventtype, reason, note, args...)
}

// AnnotatedEventf is Eventf with annotations.
func (a *EventRecorderAdapter) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...interface{}) {
	if r, ok := a.recorder.(*recorder); ok {
		r.generateFull(regarding, related, annotations, eventtype, reason, action, fmt.Sprintf(note, args...))
		return
	}
	a.recorder.AnnotatedEventf(regarding, annotations, eventtype, reason, note, args...)
}

// WithLogger returns an adapter around the recorder's WithLogger.
func (a *EventRecorderAdapter) WithLogger(logger klog.Logger) cgevents.EventRecorderLogger {
	return &EventRecorderAdapter{recorder: a.recorder.WithLogger(logger)}
}

package events

import (
	"fmt"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/internal/eventname"
	"github.com/heraldk8s/herald/internal/hook"
)

// Bounds the API server validates for events.k8s.io/v1 (and core/v1 events
// with an eventTime), in bytes of the string it decoded (k8s.io/kubernetes
// pkg/apis/core/validation/events.go). Values are made valid UTF-8 first
// (each run of invalid bytes becomes U+FFFD, as JSON would make each
// invalid byte), then cut on a rune boundary to the bound, so that no event
// is refused for its size.
const (
	maxReasonLength            = 128
	maxActionLength            = 128
	maxReportingInstanceLength = 128
	maxNoteLength              = 1024
)

// hostname is the host part of every recorder's reportingInstance, read
// once (client-go reads it in each NewRecorder and ignores an error too).
var hostname = func() string {
	h, _ := os.Hostname()
	return h
}()

// recorder is herald's events.k8s.io/v1 EventRecorderLogger. It is a small
// value: WithLogger copies it.
type recorder struct {
	core       hook.Core
	scheme     *runtime.Scheme
	controller string
	instance   string
	badCtl     string // why controller is refused by the API server, if it is
	logger     klog.Logger
}

var (
	_ EventRecorderLogger    = (*recorder)(nil)
	_ AnnotatedEventRecorder = (*recorder)(nil)
)

func newRecorder(core hook.Core, scheme *runtime.Scheme, controller string, logger klog.Logger) *recorder {
	r := &recorder{
		core:       core,
		scheme:     scheme,
		controller: controller,
		instance:   eventname.Valid(controller+"-"+hostname, maxReportingInstanceLength),
		logger:     logger,
	}
	if errs := validation.IsQualifiedName(controller); len(errs) > 0 {
		// The API server refuses every event of such a recorder; say so
		// once here, and drop each event with a counted drop.
		r.badCtl = strings.Join(errs, "; ")
		logger.Error(nil, "Invalid reportingController: the API server refuses its events, so they are dropped",
			"reportingController", eventname.Truncate(controller, 256), "problem", r.badCtl)
	}
	return r
}

// Eventf records an event about regarding (see EventRecorder).
func (r *recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	r.emit(regarding, related, nil, eventtype, reason, action, note, args)
}

// AnnotatedEventf is Eventf with annotations on the event.
func (r *recorder) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...interface{}) {
	r.emit(regarding, related, annotations, eventtype, reason, action, note, args)
}

// WithLogger returns a recorder that logs through logger.
func (r *recorder) WithLogger(logger klog.Logger) EventRecorderLogger {
	c := *r
	c.logger = logger
	return &c
}

// noteLimit is the longest note kept: the broadcaster's message limit, at
// most the server's maxNoteLength.
func (r *recorder) noteLimit() int {
	if l := r.core.MessageLimit(); l > 0 && l < maxNoteLength {
		return l
	}
	return maxNoteLength
}

// emit builds the event and queues it. It never blocks. The checks are
// client-go's (a reference for regarding, type Normal or Warning) and the
// API server's (valid annotations, a reason, an action and a reporting
// controller that is a qualified name), so that an event is refused here,
// counted and logged, rather than by the server; fields are made valid
// UTF-8, and those longer than the server accepts are cut.
func (r *recorder) emit(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args []interface{}) {
	ev := &v1.Event{}
	ann, ok := r.core.Begin(r.logger, r.scheme, regarding, annotations, eventtype, reason, &ev.InvolvedObject)
	if !ok {
		return
	}
	ref := &ev.InvolvedObject
	switch {
	case r.badCtl != "":
		r.core.DropInvalid(r.logger, nil, "Invalid reportingController, will not report event", func() []any {
			return []any{"reportingController", eventname.Truncate(r.controller, 256), "problem", r.badCtl,
				"object", klog.KRef(ref.Namespace, ref.Name), "reason", eventname.Truncate(reason, maxReasonLength)}
		})
		return
	case reason == "" || action == "":
		r.core.DropInvalid(r.logger, nil, "An events.k8s.io/v1 event needs a reason and an action, will not report event", func() []any {
			return []any{"object", klog.KRef(ref.Namespace, ref.Name), "reason", eventname.Truncate(reason, maxReasonLength),
				"action", eventname.Truncate(action, maxActionLength)}
		})
		return
	}
	ev.Reason = eventname.Valid(reason, maxReasonLength)
	ev.Related = r.core.Related(r.logger, r.scheme, related, ev)
	ev.Namespace = ref.Namespace
	if ev.Namespace == "" {
		ev.Namespace = metav1.NamespaceDefault
	}
	// The name is made by the broadcaster's loop, off the caller's path,
	// from the object's name and EventTime.
	ev.Annotations = ann
	ev.EventTime = metav1.NewMicroTime(r.core.Now())
	ev.Action = eventname.Valid(action, maxActionLength)
	ev.Message = eventname.Valid(fmt.Sprintf(note, args...), r.noteLimit())
	ev.Type = eventtype
	ev.ReportingController = r.controller
	ev.ReportingInstance = r.instance
	r.core.Enqueue(r.logger, ev)
}

package record

import (
	"fmt"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/internal/fakeoverflow"
	"github.com/heraldk8s/herald/internal/nilcheck"
)

// FakeRecorder is client-go's FakeRecorder: it formats each event as a
// string and sends it on Events. Unlike client-go's it never blocks a test:
// when Events is full (or nil) the event is counted in Overflow instead of
// blocking forever (or vanishing), and a nil object (or a typed nil, such
// as a nil *v1.Pod) with IncludeObject set does not panic. The string
// format is client-go's:
//
//	"<type> <reason> <message>[ involvedObject{kind=K,apiVersion=G/V}][ map[annotations]]"
//
// It is safe for concurrent use and, as client-go's, may be copied by value
// (copies share the overflow count; so do recorders built as struct
// literals with the same Events channel, NewFakeRecorder's included). A
// test that reads Events to assert what was not recorded should also check
// that Overflow is 0: an event that did not fit is not on the channel (a
// reader goroutine on an unbuffered channel misses the events sent while
// it is not receiving, where client-go's recorder waits for it). The zero value counts every event
// as overflow, in a count shared by all zero-value recorders; use
// NewFakeRecorder. For structured assertions see package record/recordtest.
type FakeRecorder struct {
	Events        chan string
	IncludeObject bool

	overflow *atomic.Int64 // nil in a zero FakeRecorder: zeroOverflow
}

// zeroOverflow is the overflow count of zero-value FakeRecorders (no
// Events channel, no count of their own).
var zeroOverflow atomic.Int64

// counter returns f's overflow counter: its own (NewFakeRecorder), or its
// Events channel's (a struct literal, see internal/fakeoverflow), or the one
// of zero-value recorders; create makes the channel's at the first
// overflow.
func (f *FakeRecorder) counter(create bool) *atomic.Int64 {
	if f.overflow == nil && f.Events == nil {
		return &zeroOverflow
	}
	return fakeoverflow.Counter(f.overflow, f.Events, create)
}

var _ EventRecorderLogger = (*FakeRecorder)(nil)

// NewFakeRecorder returns a FakeRecorder whose Events channel holds
// bufferSize events.
func NewFakeRecorder(bufferSize int) *FakeRecorder {
	ch := make(chan string, max(bufferSize, 0))
	// The channel's count, so that a literal FakeRecorder given this
	// channel shares it.
	return &FakeRecorder{Events: ch, overflow: fakeoverflow.Counter(nil, ch, true)}
}

// Overflow returns how many events did not fit in Events.
func (f *FakeRecorder) Overflow() int64 {
	if c := f.counter(false); c != nil {
		return c.Load()
	}
	return 0
}

// Event implements EventRecorder.
func (f *FakeRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	f.write(object, nil, eventtype, reason, message)
}

// Eventf implements EventRecorder.
func (f *FakeRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	f.write(object, nil, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

// AnnotatedEventf implements EventRecorder.
func (f *FakeRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...interface{}) {
	f.write(object, annotations, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

// WithLogger returns f itself.
func (f *FakeRecorder) WithLogger(klog.Logger) EventRecorderLogger { return f }

func (f *FakeRecorder) write(object runtime.Object, annotations map[string]string, eventtype, reason, message string) {
	s := eventtype + " " + reason + " " + message
	if f.IncludeObject {
		var kind, apiVersion string
		if !nilcheck.IsNil(object) { // a nil *Pod too
			gvk := object.GetObjectKind().GroupVersionKind()
			kind, apiVersion = gvk.Kind, gvk.GroupVersion().String()
		}
		s += " involvedObject{kind=" + kind + ",apiVersion=" + apiVersion + "}"
	}
	if len(annotations) > 0 {
		s += " " + fmt.Sprint(annotations)
	}
	select {
	case f.Events <- s:
	default:
		f.counter(true).Add(1)
	}
}

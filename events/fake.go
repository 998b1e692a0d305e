package events

import (
	"fmt"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/internal/fakeoverflow"
)

// FakeRecorder is client-go's events.FakeRecorder: it formats each event as
// a string and sends it on Events, with client-go's strings:
//
//	Verbose false: fmt.Sprintf(eventtype+" "+reason+" "+note, args...)
//	Verbose true:  "<type> <reason> <action> <note>[ {kind=K,apiVersion=G/V}][ {kind=…} of related][ map[annotations]]"
//
// Unlike client-go's it never blocks a test: when Events is full the event
// is counted in Overflow instead of blocking forever. It is safe for
// concurrent use and may be copied (copies share the overflow count, also
// for a FakeRecorder built as a struct literal with an Events channel:
// recorders with one channel, NewFakeRecorder's included, share one count).
// A test that reads Events to assert what was not recorded should also
// check that Overflow is 0: an event that did not fit is not on the
// channel. A zero FakeRecorder, as client-go's, throws every event away. For
// structured assertions see package events/eventstest.
type FakeRecorder struct {
	Events  chan string
	Verbose bool

	overflow *atomic.Int64 // nil in a FakeRecorder not made by NewFakeRecorder
}

// counter returns f's overflow counter; create makes one for a literal
// FakeRecorder that has none yet (see internal/fakeoverflow).
func (f *FakeRecorder) counter(create bool) *atomic.Int64 {
	if f.overflow == nil && f.Events == nil {
		return nil
	}
	return fakeoverflow.Counter(f.overflow, f.Events, create)
}

var (
	_ EventRecorderLogger    = (*FakeRecorder)(nil)
	_ AnnotatedEventRecorder = (*FakeRecorder)(nil)
)

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
	c := f.counter(false)
	if c == nil {
		return 0
	}
	return c.Load()
}

// Eventf implements EventRecorder.
func (f *FakeRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	f.write(regarding, related, nil, eventtype, reason, action, note, args)
}

// AnnotatedEventf implements AnnotatedEventRecorder.
func (f *FakeRecorder) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...interface{}) {
	f.write(regarding, related, annotations, eventtype, reason, action, note, args)
}

// WithLogger returns f itself.
func (f *FakeRecorder) WithLogger(klog.Logger) EventRecorderLogger { return f }

func (f *FakeRecorder) write(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args []interface{}) {
	if f.Events == nil {
		return
	}
	var s string
	if f.Verbose {
		s = eventtype + " " + reason + " " + action + " " + fmt.Sprintf(note, args...) +
			objectString(regarding) + objectString(related)
		if len(annotations) > 0 {
			s += " " + fmt.Sprint(annotations)
		}
	} else {
		s = fmt.Sprintf(eventtype+" "+reason+" "+note, args...)
	}
	select {
	case f.Events <- s:
	default:
		f.counter(true).Add(1)
	}
}

// objectString is " {kind=K,apiVersion=G/V}" for an object with a kind in
// its TypeMeta, else "".
func objectString(obj runtime.Object) (s string) {
	defer func() {
		if recover() != nil { // a typed nil pointer
			s = ""
		}
	}()
	if obj == nil {
		return ""
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		return ""
	}
	return " {kind=" + gvk.Kind + ",apiVersion=" + gvk.GroupVersion().String() + "}"
}

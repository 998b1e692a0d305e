package events_test

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	cgevents "k8s.io/client-go/tools/events"

	"github.com/heraldk8s/herald/events"
)

func TestFakeRecorderMatchesClientGo(t *testing.T) {
	typed := &v1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	deploy := &v1.ObjectReference{Kind: "Deployment", APIVersion: "apps/v1", Name: "d"}
	untyped := pod("ns", "q")
	onlyVersion := &v1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1"}}
	type call struct {
		regarding, related        runtime.Object
		ann                       map[string]string
		typ, reason, action, note string
		args                      []any
	}
	calls := []call{
		{typed, nil, nil, "Normal", "Started", "Start", "started %s", []any{"x"}},
		{untyped, deploy, nil, "Warning", "Failed", "Sync", "no args", nil},
		{typed, typed, map[string]string{"b": "2", "a": "1"}, "Normal", "R", "A", "%d%%", []any{5}},
		{untyped, nil, map[string]string{}, "Warning", "100%", "A", "note", nil},
		{nil, nil, nil, "", "", "", "", nil},
		{onlyVersion, untyped, map[string]string{"k": "v"}, "Normal", "R", "A", "100%", nil},
	}
	for _, verbose := range []bool{false, true} {
		h := events.NewFakeRecorder(len(calls) * 2)
		h.Verbose = verbose
		c := cgevents.NewFakeRecorder(len(calls) * 2)
		// client-go's FakeRecorder has Verbose from v0.37 on; herald
		// builds with older client-go too (annotated.go): the verbose
		// form is compared only where client-go has it.
		if f := reflect.ValueOf(c).Elem().FieldByName("Verbose"); f.IsValid() {
			f.SetBool(verbose)
		} else if verbose {
			continue
		}
		for _, x := range calls {
			if _, ok := any(c).(events.AnnotatedEventRecorder); !ok && x.ann != nil {
				// client-go before v0.37 has no AnnotatedEventf: nothing
				// to compare with (events/annotated.go).
				continue
			}
			for _, r := range []events.EventRecorder{h, c} {
				if x.ann == nil {
					r.Eventf(x.regarding, x.related, x.typ, x.reason, x.action, x.note, x.args...)
				} else {
					r.(events.AnnotatedEventRecorder).AnnotatedEventf(x.regarding, x.related, x.ann, x.typ, x.reason, x.action, x.note, x.args...)
				}
			}
			got, want := <-h.Events, <-c.Events
			if got != want {
				t.Errorf("verbose %v: herald %q, client-go %q", verbose, got, want)
			}
		}
		if h.WithLogger(klogDiscard()) != events.EventRecorderLogger(h) {
			t.Error("WithLogger does not return the fake itself")
		}
	}
}

func TestFakeRecorderNeverBlocks(t *testing.T) {
	f := events.NewFakeRecorder(2)
	for i := 0; i < 5; i++ {
		f.Eventf(pod("ns", "p"), nil, "Normal", "R", "A", "n %d", i)
	}
	if len(f.Events) != 2 || f.Overflow() != 3 {
		t.Errorf("buffered %d, overflow %d", len(f.Events), f.Overflow())
	}
	// A copy shares the channel and the overflow count.
	c := *f
	c.Eventf(nil, nil, "Normal", "R", "A", "n")
	if f.Overflow() != 4 || c.Overflow() != 4 {
		t.Errorf("overflow %d / %d", f.Overflow(), c.Overflow())
	}
	z := events.NewFakeRecorder(0)
	z.Eventf(nil, nil, "Normal", "R", "A", "n")
	if z.Overflow() != 1 {
		t.Errorf("unbuffered overflow %d", z.Overflow())
	}
	neg := events.NewFakeRecorder(-1)
	neg.Eventf(nil, nil, "Normal", "R", "A", "n")
}

// A FakeRecorder built as a struct literal, as client-go's tests do,
// never blocks either, and counts what did not fit.
func TestFakeRecorderLiteral(t *testing.T) {
	f := &events.FakeRecorder{Events: make(chan string, 1)}
	for i := 0; i < 3; i++ {
		f.Eventf(nil, nil, "Normal", "R", "A", "n")
	}
	if len(f.Events) != 1 || f.Overflow() != 2 {
		t.Errorf("buffered %d, overflow %d", len(f.Events), f.Overflow())
	}
}

func TestFakeRecorderZeroValue(t *testing.T) {
	var f events.FakeRecorder
	f.Eventf(pod("ns", "p"), nil, "Normal", "R", "A", "n")
	f.AnnotatedEventf(nil, nil, map[string]string{"a": "b"}, "Normal", "R", "A", "n")
	if f.Overflow() != 0 {
		t.Errorf("overflow %d", f.Overflow())
	}
	f2 := f // copyable by value; go vet is clean
	f2.Verbose = true
	f2.Eventf(nil, nil, "Normal", "R", "A", "n")
	var typedNil *v1.Pod
	v := events.NewFakeRecorder(1)
	v.Verbose = true
	v.Eventf(typedNil, typedNil, "Normal", "R", "A", "n")
	if got := <-v.Events; got != "Normal R A n" {
		t.Errorf("typed nil: %q", got)
	}
}

// A literal FakeRecorder given the Events channel of one NewFakeRecorder
// made counts its overflow with it.
func TestFakeRecorderLiteralSharesNewFakeRecordersCount(t *testing.T) {
	fake := events.NewFakeRecorder(1)
	verbose := &events.FakeRecorder{Events: fake.Events, Verbose: true}
	verbose.Eventf(nil, nil, "Normal", "R", "A", "fits")
	verbose.Eventf(nil, nil, "Normal", "R", "A", "overflows")
	if fake.Overflow() != 1 || verbose.Overflow() != 1 {
		t.Errorf("Overflow: NewFakeRecorder's %d, the literal's %d; one Events channel, want 1 and 1", fake.Overflow(), verbose.Overflow())
	}
}

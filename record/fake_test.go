package record_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientrecord "k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/record"
)

func TestFakeRecorderMatchesClientGo(t *testing.T) {
	typed := &v1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	for _, includeObject := range []bool{false, true} {
		ours := record.NewFakeRecorder(10)
		theirs := clientrecord.NewFakeRecorder(10)
		ours.IncludeObject, theirs.IncludeObject = includeObject, includeObject
		for _, r := range []clientrecord.EventRecorder{ours, theirs} {
			r.Event(typed, v1.EventTypeNormal, "Started", "plain 100%")
			r.Eventf(typed, v1.EventTypeWarning, "Failed", "code %d", 42)
			r.AnnotatedEventf(typed, map[string]string{"k": "v"}, v1.EventTypeNormal, "Ann", "with %s", "annotations")
			r.Event(&v1.Pod{}, v1.EventTypeNormal, "NoMeta", "no type meta")
		}
		for range 4 {
			if a, b := <-ours.Events, <-theirs.Events; a != b {
				t.Errorf("includeObject=%v: herald %q, client-go %q", includeObject, a, b)
			}
		}
	}
}

func TestFakeRecorderNeverBlocks(t *testing.T) {
	f := record.NewFakeRecorder(1)
	f.IncludeObject = true
	var nilObj runtime.Object
	f.Event(nilObj, v1.EventTypeNormal, "A", "fits") // nil object: no panic
	f.Event(nilObj, v1.EventTypeNormal, "B", "overflows")
	if got := <-f.Events; got != "Normal A fits involvedObject{kind=,apiVersion=}" {
		t.Fatalf("got %q", got)
	}
	var nilPod *v1.Pod
	f.Event(nilPod, v1.EventTypeNormal, "T", "typed nil") // no panic either
	if got := <-f.Events; got != "Normal T typed nil involvedObject{kind=,apiVersion=}" {
		t.Fatalf("typed nil object: got %q", got)
	}
	if f.Overflow() != 1 {
		t.Fatalf("overflow %d", f.Overflow())
	}
	var zero record.FakeRecorder
	before := zero.Overflow()
	zero.Event(nil, v1.EventTypeNormal, "C", "nil channel")
	if zero.Overflow() != before+1 {
		t.Fatal("zero-value FakeRecorder lost an event silently")
	}
	if f.WithLogger(klog.Background()) != clientrecord.EventRecorderLogger(f) {
		t.Fatal("WithLogger did not return the recorder itself")
	}
}

// TestFakeRecorderCopiedByValue: as client-go's, a FakeRecorder can be
// copied (go vet reports no copied lock); the copy shares the channel and
// the overflow count.
func TestFakeRecorderCopiedByValue(t *testing.T) {
	f := record.NewFakeRecorder(1)
	c := *f
	c.Event(nil, v1.EventTypeNormal, "A", "fits")
	c.Event(nil, v1.EventTypeNormal, "B", "overflows")
	if got := <-f.Events; got != "Normal A fits" {
		t.Fatalf("got %q", got)
	}
	if f.Overflow() != 1 || c.Overflow() != 1 {
		t.Fatalf("overflow %d and %d", f.Overflow(), c.Overflow())
	}
}

// FakeRecorders built as struct literals count their overflow by their
// channel: each its own, copies together, none another's.
func TestFakeRecorderLiteralsCountApart(t *testing.T) {
	a := record.FakeRecorder{Events: make(chan string)} // unbuffered: every event overflows
	b := &record.FakeRecorder{Events: make(chan string)}
	if a.Overflow() != 0 || b.Overflow() != 0 {
		t.Fatalf("fresh literals: %d and %d", a.Overflow(), b.Overflow())
	}
	a.Event(nil, v1.EventTypeNormal, "A", "overflows")
	c := a
	c.Event(nil, v1.EventTypeNormal, "A", "overflows")
	b.Event(nil, v1.EventTypeNormal, "B", "overflows")
	if a.Overflow() != 2 || c.Overflow() != 2 || b.Overflow() != 1 {
		t.Fatalf("overflow: a %d, its copy %d, b %d; want 2, 2, 1", a.Overflow(), c.Overflow(), b.Overflow())
	}
}

// A literal FakeRecorder given the Events channel of one NewFakeRecorder
// made (IncludeObject set, say) counts its overflow with it: a test that
// checks the first recorder's Overflow sees the events the second lost.
func TestFakeRecorderLiteralSharesNewFakeRecordersCount(t *testing.T) {
	fake := record.NewFakeRecorder(1)
	withObject := &record.FakeRecorder{Events: fake.Events, IncludeObject: true}
	withObject.Event(&v1.Pod{}, v1.EventTypeNormal, "A", "fits")
	withObject.Event(&v1.Pod{}, v1.EventTypeNormal, "B", "overflows")
	if fake.Overflow() != 1 || withObject.Overflow() != 1 {
		t.Errorf("Overflow: NewFakeRecorder's %d, the literal's %d; one Events channel, want 1 and 1", fake.Overflow(), withObject.Overflow())
	}
}

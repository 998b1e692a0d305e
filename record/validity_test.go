package record_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
)

// aggregatePrefix starts the message of a combined event (client-go's and
// herald's default MessageFunc).
const aggregatePrefix = "(combined from similar events): "

// Contract 7: every event herald writes, combined events included, has a
// valid name, unique even with a clock that stands still, and bounded
// fields. These tests run the whole pipeline into the fake sink, which
// refuses a second create of one name (AlreadyExists) like the API server.

// recordDistinct records n distinct messages about obj, enough to make the
// correlator combine them (its default is 10), with the clock frozen.
func recordDistinct(e *env, obj *v1.Pod, n int) {
	for i := range n {
		e.rec.Eventf(obj, v1.EventTypeWarning, "Failed", "attempt %d failed", i)
	}
	e.flush()
}

// checkWritten asserts that every stored event has a valid name and that
// nothing was dropped or overwritten: each create got a name of its own.
func checkWritten(t *testing.T, e *env, wantEvents int) []v1.Event {
	t.Helper()
	s := e.eb.Stats()
	check.Settled(t, s)
	if s.Dropped.Total() != 0 {
		t.Fatalf("dropped %+v; logs:\n%s", s.Dropped, e.logs())
	}
	evs := e.sink.Events()
	if len(evs) != wantEvents {
		t.Fatalf("stored %d events, want %d: %+v", len(evs), wantEvents, evs)
	}
	for _, ev := range evs {
		if errs := validation.IsDNS1123Subdomain(ev.Name); len(errs) > 0 {
			t.Errorf("invalid event name %q: %v", ev.Name, errs)
		}
	}
	return evs
}

func TestCombinedEventNameIsValid(t *testing.T) {
	for _, name := range []string{"My_Pod", "system:controller:x", strings.Repeat("x", 250), strings.Repeat("Ab_", 90)} {
		t.Run(name[:min(len(name), 20)], func(t *testing.T) {
			e := newEnv(t)
			recordDistinct(e, pod("ns", name), 12)
			// 9 events of their own, then one combined event patched twice.
			evs := checkWritten(t, e, 10)
			combined := 0
			for _, ev := range evs {
				if strings.HasPrefix(ev.Message, aggregatePrefix) {
					combined++
				}
			}
			if combined != 1 {
				t.Fatalf("%d combined events", combined)
			}
		})
	}
}

// With a frozen clock client-go gives the combined event the name of the
// object's first event: its create fails (AlreadyExists) and its patches
// overwrite the first event's message and count.
func TestCombinedEventNameUniqueWithFrozenClock(t *testing.T) {
	e := newEnv(t)
	recordDistinct(e, pod("ns", "web-0"), 12)
	evs := checkWritten(t, e, 10)
	s := e.eb.Stats()
	if s.Created != 10 || s.Patched+s.Coalesced != 2 {
		t.Fatalf("created %d, patched or coalesced %d; want 10 and 2: %+v", s.Created, s.Patched+s.Coalesced, s)
	}
	for _, ev := range evs {
		combined := strings.HasPrefix(ev.Message, aggregatePrefix)
		switch {
		case combined && (ev.Count != 3 || ev.Message != aggregatePrefix+"attempt 11 failed"):
			t.Errorf("combined event %s: count %d, message %q", ev.Name, ev.Count, ev.Message)
		case !combined && ev.Count != 1:
			t.Errorf("event %s (%q) has count %d: another event's write landed on it", ev.Name, ev.Message, ev.Count)
		}
	}
}

func TestCombinedMessageRespectsLimit(t *testing.T) {
	e := newEnv(t)
	long := strings.Repeat("é", 600) // 1,200 bytes, cut to 1,024 by the recorder
	for i := range 10 {
		e.rec.Eventf(pod("ns", "p"), v1.EventTypeWarning, "Failed", "%d %s", i, long)
	}
	e.flush()
	evs := checkWritten(t, e, 10)
	for _, ev := range evs {
		if len(ev.Message) > 1024 || !utf8.ValidString(ev.Message) {
			t.Errorf("message of %s: %d bytes, valid UTF-8 %v", ev.Name, len(ev.Message), utf8.ValidString(ev.Message))
		}
	}
}

// The API server checks few fields of a core/v1 Event; herald bounds each
// one it writes: short identifiers are cut to 128 bytes on a UTF-8
// boundary, references that cannot be written are refused and counted.
func TestFieldsAreBounded(t *testing.T) {
	e := newEnv(t)
	huge := strings.Repeat("ü", 1<<19) // 1 MB
	rec := e.eb.NewRecorder(nil, v1.EventSource{Component: "c" + huge, Host: "h" + huge})
	rec.Event(&v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "p"}, v1.EventTypeNormal, "R"+huge, "m")
	e.flush()
	evs := checkWritten(t, e, 1)
	ev := evs[0]
	for field, v := range map[string]string{
		"reason": ev.Reason, "source.component": ev.Source.Component, "source.host": ev.Source.Host,
		"reportingController": ev.ReportingController, "reportingInstance": ev.ReportingInstance,
	} {
		if len(v) > 128 || len(v) < 125 || !utf8.ValidString(v) {
			t.Errorf("%s: %d bytes, valid UTF-8 %v", field, len(v), utf8.ValidString(v))
		}
	}
	if ev.ReportingController != ev.Source.Component || ev.ReportingInstance != ev.Source.Host {
		t.Errorf("reporting fields %q %q differ from the source %+v", ev.ReportingController, ev.ReportingInstance, ev.Source)
	}
}

func TestInvalidReferenceIsRefused(t *testing.T) {
	long := strings.Repeat("n", 1025)
	refs := []*v1.ObjectReference{
		{Kind: "Pod", APIVersion: "v1", Namespace: "a/b", Name: "p"},
		{Kind: "Pod", APIVersion: "v1", Namespace: "UPPER", Name: "p"},
		{Kind: "Pod", APIVersion: "v1", Namespace: "-ns", Name: "p"},
		{Kind: "Pod", APIVersion: "v1", Namespace: strings.Repeat("a", 64), Name: "p"},
		{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: long},
		{Kind: long, APIVersion: "v1", Namespace: "ns", Name: "p"},
		{Kind: "Pod", APIVersion: long, Namespace: "ns", Name: "p"},
		{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "p", FieldPath: long},
		{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "p", UID: types.UID(long)},
		{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "p", ResourceVersion: long},
	}
	e := newEnv(t)
	for _, ref := range refs {
		e.rec.Event(ref, v1.EventTypeNormal, "R", "refused")
	}
	// Valid references at the limits are written.
	e.rec.Event(&v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: strings.Repeat("a", 63), Name: long[:1024]}, v1.EventTypeNormal, "R", "ok")
	e.rec.Event(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, v1.EventTypeNormal, "R", "ok")
	e.flush()
	s := e.eb.Stats()
	check.Settled(t, s)
	if s.Created != 2 || s.Dropped.Total() != int64(len(refs)) || s.Dropped.Invalid != int64(len(refs)) {
		t.Fatalf("created %d, dropped %+v; want 2 created and %d invalid", s.Created, s.Dropped, len(refs))
	}
	if logs := e.logs(); !strings.Contains(logs, "Invalid involved object reference") {
		t.Errorf("no log line for the refused events:\n%s", logs)
	}
	for _, ev := range e.sink.Events() {
		if ev.Message != "ok" {
			t.Errorf("refused event written: %+v", ev.InvolvedObject)
		}
	}
}

func FuzzRecordedFieldsAreBounded(f *testing.F) {
	f.Add("ns", "My_Pod", "Reason", "ctrl", "host")
	f.Add("a/b", "system:controller:x", strings.Repeat("R", 200), "", "")
	f.Add("", "", "", strings.Repeat("é", 100), "\xff\xfe")
	f.Fuzz(func(t *testing.T, ns, name, reason, component, host string) {
		e := newEnv(t, record.WithCorrelatorOptions(record.CorrelatorOptions{DisableSpamFilter: true}))
		rec := e.eb.NewRecorder(nil, v1.EventSource{Component: component, Host: host})
		ref := &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: name}
		for i := range 11 {
			rec.Event(ref, v1.EventTypeNormal, reason, fmt.Sprint(i))
		}
		e.flush()
		s := e.eb.Stats()
		check.Settled(t, s)
		if s.Dropped.Total() != s.Dropped.Invalid || s.Dropped.Invalid%11 != 0 {
			t.Fatalf("dropped %+v", s.Dropped)
		}
		for _, ev := range e.sink.Events() {
			if errs := validation.IsDNS1123Subdomain(ev.Name); len(errs) > 0 {
				t.Fatalf("invalid name %q: %v", ev.Name, errs)
			}
			if errs := validation.IsDNS1123Label(ev.Namespace); len(errs) > 0 {
				t.Fatalf("invalid namespace %q: %v", ev.Namespace, errs)
			}
			if len(ev.Reason) > 128 || len(ev.Source.Component) > 128 || len(ev.Source.Host) > 128 || len(ev.Message) > 1024 {
				t.Fatalf("unbounded field: %+v", ev)
			}
		}
	})
}

package events_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// bufferLogger returns a logger whose output the test can read.
func bufferLogger(t *testing.T) (klog.Logger, func() string) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	u := logger.GetSink().(ktesting.Underlier)
	return logger, func() string { return u.GetBuffer().String() }
}

// recordOne records with rec on a fresh broadcaster writing to a memSink
// and returns the stored events and the stats after Flush.
func recordWith(t *testing.T, controller string, emit func(r events.EventRecorderLogger)) ([]*eventsv1.Event, events.Stats, string) {
	t.Helper()
	logger, logs := bufferLogger(t)
	s := newMemSink()
	b := events.NewBroadcaster(s, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited}), record.WithLogger(logger)))
	defer b.Shutdown()
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	emit(b.NewRecorder(scheme.Scheme, controller))
	flush(t, b)
	st := b.Stats()
	check.Settled(t, st)
	return s.all(), st, logs()
}

func TestRecorderInvalidReportingController(t *testing.T) {
	for _, ctl := range []string{"", "Not A Name", "a/b/c", strings.Repeat("x", 64), "-bad"} {
		t.Run(ctl, func(t *testing.T) {
			evs, st, logs := recordWith(t, ctl, func(r events.EventRecorderLogger) {
				for i := 0; i < 3; i++ {
					r.Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "Reason", "Action", "note %d", i)
				}
			})
			if len(evs) != 0 {
				t.Errorf("stored %d events", len(evs))
			}
			if st.Recorded != 3 || st.Dropped.Invalid != 3 {
				t.Errorf("stats %+v", st)
			}
			if !strings.Contains(logs, "Invalid reportingController") || !strings.Contains(logs, "ERROR") {
				t.Errorf("no error log: %s", logs)
			}
		})
	}
}

func TestRecorderValidReportingControllers(t *testing.T) {
	for _, ctl := range []string{"ctl", "example.com/ctl", "kubelet", strings.Repeat("x", 63)} {
		evs, st, _ := recordWith(t, ctl, func(r events.EventRecorderLogger) {
			r.Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "Reason", "Action", "note")
		})
		if len(evs) != 1 || st.Created != 1 {
			t.Fatalf("%q: stored %d, stats %+v", ctl, len(evs), st)
		}
		if evs[0].ReportingController != ctl || !strings.HasPrefix(evs[0].ReportingInstance, ctl+"-") {
			t.Errorf("%q: controller %q instance %q", ctl, evs[0].ReportingController, evs[0].ReportingInstance)
		}
	}
}

func TestRecorderEmptyReasonOrAction(t *testing.T) {
	evs, st, logs := recordWith(t, "ctl", func(r events.EventRecorderLogger) {
		r.Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "", "Action", "note")
		r.Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "Reason", "", "note")
		r.Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "Reason", "Action", "note")
	})
	if len(evs) != 1 || st.Dropped.Invalid != 2 || st.Created != 1 || st.Recorded != 3 {
		t.Fatalf("stored %d, stats %+v", len(evs), st)
	}
	if !strings.Contains(logs, "needs a reason and an action") {
		t.Errorf("logs: %s", logs)
	}
}

// badRelated has no metadata and no kind the scheme knows.
type badRelated struct{ metav1.TypeMeta }

func (b *badRelated) DeepCopyObject() runtime.Object { c := *b; return &c }

func TestRecorderUnreferenceableRelated(t *testing.T) {
	evs, st, _ := recordWith(t, "ctl", func(r events.EventRecorderLogger) {
		r.Eventf(pod("ns", "p"), &badRelated{}, v1.EventTypeNormal, "Reason", "Action", "note")
	})
	if len(evs) != 1 || st.Created != 1 {
		t.Fatalf("stored %d, stats %+v", len(evs), st)
	}
	if evs[0].Related != nil {
		t.Errorf("related %+v", evs[0].Related)
	}
}

func TestRecorderRelatedKept(t *testing.T) {
	evs, _, _ := recordWith(t, "ctl", func(r events.EventRecorderLogger) {
		r.Eventf(pod("ns", "p"), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "nu"}}, v1.EventTypeNormal, "Reason", "Action", "note")
	})
	if len(evs) != 1 || evs[0].Related == nil || evs[0].Related.Kind != "Node" || evs[0].Related.Name != "n1" || evs[0].Related.APIVersion != "v1" {
		t.Fatalf("got %+v", evs)
	}
	if evs[0].Regarding.Kind != "Pod" || evs[0].Regarding.Name != "p" || evs[0].Regarding.UID != "uid-p" {
		t.Errorf("regarding %+v", evs[0].Regarding)
	}
}

func TestRecorderCutsLongFields(t *testing.T) {
	note := strings.Repeat("é", 700)                                                                           // 1400 bytes, 2 bytes a rune
	ctl := strings.Repeat("a", 60) + "." + strings.Repeat("b", 60) + ".example.com/" + strings.Repeat("c", 63) // instance > 128 bytes
	var long string
	evs, st, _ := recordWith(t, ctl, func(r events.EventRecorderLogger) {
		long = strings.Repeat("R", 300)
		r.Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, long, long, "%s", note)
	})
	if len(evs) != 1 || st.Created != 1 {
		t.Fatalf("stored %d, stats %+v", len(evs), st)
	}
	e := evs[0]
	if len(e.Note) > events.MaxNoteLength || !utf8.ValidString(e.Note) || !strings.HasPrefix(note, e.Note) || len(e.Note) < events.MaxNoteLength-4 {
		t.Errorf("note: %d bytes, valid %v", len(e.Note), utf8.ValidString(e.Note))
	}
	if len(e.Reason) > events.MaxReasonLength || len(e.Action) > events.MaxActionLength {
		t.Errorf("reason %d action %d bytes", len(e.Reason), len(e.Action))
	}
	if len(e.ReportingInstance) > events.MaxReportingInstanceLength || e.ReportingInstance == "" {
		t.Errorf("instance %d bytes", len(e.ReportingInstance))
	}
	if e.ReportingController != ctl {
		t.Errorf("controller %q", e.ReportingController)
	}
}

func TestRecorderNilAndTypedNilRegarding(t *testing.T) {
	evs, st, _ := recordWith(t, "ctl", func(r events.EventRecorderLogger) {
		r.Eventf(nil, nil, v1.EventTypeNormal, "Reason", "Action", "note")
		var p *v1.Pod
		r.Eventf(p, nil, v1.EventTypeNormal, "Reason", "Action", "note")
		var ref *v1.ObjectReference
		r.Eventf(ref, nil, v1.EventTypeNormal, "Reason", "Action", "note")
		r.(events.AnnotatedEventRecorder).AnnotatedEventf(p, p, nil, v1.EventTypeNormal, "Reason", "Action", "note")
		// A typed-nil related is ignored like an unreferenceable one.
		r.Eventf(pod("ns", "p"), p, v1.EventTypeNormal, "Reason", "Action", "note")
	})
	if len(evs) != 1 || st.Dropped.Invalid != 4 || st.Recorded != 5 {
		t.Fatalf("stored %d, stats %+v", len(evs), st)
	}
	if evs[0].Related != nil {
		t.Errorf("related %+v", evs[0].Related)
	}
}

func TestRecorderUnsupportedType(t *testing.T) {
	evs, st, logs := recordWith(t, "ctl", func(r events.EventRecorderLogger) {
		r.Eventf(pod("ns", "p"), nil, "Bogus", "Reason", "Action", "note")
		r.Eventf(pod("ns", "p"), nil, "", "Reason", "Action", "note")
	})
	if len(evs) != 0 || st.Dropped.Invalid != 2 {
		t.Fatalf("stored %d, stats %+v", len(evs), st)
	}
	if !strings.Contains(logs, "Unsupported event type") {
		t.Errorf("logs: %s", logs)
	}
}

func TestRecorderAnnotations(t *testing.T) {
	ann := map[string]string{"example.com/k": "v"}
	evs, st, _ := recordWith(t, "ctl", func(r events.EventRecorderLogger) {
		ar := r.(events.AnnotatedEventRecorder)
		ar.AnnotatedEventf(pod("ns", "bad"), nil, map[string]string{"bad key!": "v"}, v1.EventTypeNormal, "Reason", "Action", "note")
		ar.AnnotatedEventf(pod("ns", "p"), nil, ann, v1.EventTypeNormal, "Reason", "Action", "note")
		ann["example.com/k"] = "changed"
		ann["other"] = "x"
	})
	if len(evs) != 1 || st.Dropped.Invalid != 1 || st.Created != 1 {
		t.Fatalf("stored %d, stats %+v", len(evs), st)
	}
	if got := evs[0].Annotations; len(got) != 1 || got["example.com/k"] != "v" {
		t.Errorf("annotations %v", got)
	}
}

func TestRecorderSprintfAlwaysApplied(t *testing.T) {
	evs, _, _ := recordWith(t, "ctl", func(r events.EventRecorderLogger) {
		r.Eventf(pod("ns", "a"), nil, v1.EventTypeNormal, "Reason", "Action", "100%")
		r.Eventf(pod("ns", "b"), nil, v1.EventTypeNormal, "Reason", "Action", "%d items", 3)
	})
	notes := map[string]string{}
	for _, e := range evs {
		notes[e.Regarding.Name] = e.Note
	}
	if notes["a"] != "100%!(NOVERB)" || notes["b"] != "3 items" {
		t.Errorf("notes %q", notes)
	}
}

func TestRecorderClusterScopedNamespace(t *testing.T) {
	evs, _, _ := recordWith(t, "ctl", func(r events.EventRecorderLogger) {
		r.Eventf(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, nil, v1.EventTypeNormal, "Reason", "Action", "note")
	})
	if len(evs) != 1 || evs[0].Namespace != "default" || evs[0].Regarding.Namespace != "" {
		t.Fatalf("got %+v", evs)
	}
	if !strings.HasPrefix(evs[0].Name, "node-1.") {
		t.Errorf("name %q", evs[0].Name)
	}
	if evs[0].EventTime.IsZero() || evs[0].Series != nil {
		t.Errorf("eventTime %v series %v", evs[0].EventTime, evs[0].Series)
	}
}

func TestRecorderWithLoggerSharesBroadcaster(t *testing.T) {
	logger, logs := bufferLogger(t)
	evs, st, _ := recordWith(t, "ctl", func(r events.EventRecorderLogger) {
		r2 := r.WithLogger(logger)
		r2.Eventf(pod("ns", "p"), nil, "Bogus", "Reason", "Action", "note")
		r2.Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "Reason", "Action", "note")
	})
	if len(evs) != 1 || st.Dropped.Invalid != 1 {
		t.Fatalf("stored %d, stats %+v", len(evs), st)
	}
	if !strings.Contains(logs(), "Unsupported event type") {
		t.Errorf("WithLogger's logger not used: %q", logs())
	}
}

// record.WithMessageLimit(math.MaxInt) keeps core/v1 messages whole; an
// events.k8s.io/v1 note must still fit the server's 1024 bytes.
func TestNoteLimitWithUnlimitedMessages(t *testing.T) {
	for _, limit := range []int{math.MaxInt, 4096, 10} {
		s := newMemSink()
		b := events.NewBroadcaster(s, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited}), record.WithMessageLimit(limit)))
		if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		b.NewRecorder(scheme.Scheme, "ctl").Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "%s", strings.Repeat("x", 3000))
		b.Shutdown()
		evs := s.all()
		want := min(limit, events.MaxNoteLength)
		if len(evs) != 1 || len(evs[0].Note) != want {
			t.Errorf("WithMessageLimit(%d): %d events, note %d bytes, want %d", limit, len(evs), len(evs[0].Note), want)
		}
	}
}

// References passed as regarding or related are copied: the caller may
// change them after Eventf.
func TestReferencesCopied(t *testing.T) {
	s := newMemSink()
	b := events.NewBroadcaster(s, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited})))
	defer b.Shutdown()
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	reg := &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "p"}
	rel := &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "q"}
	b.NewRecorder(scheme.Scheme, "ctl").Eventf(reg, rel, v1.EventTypeNormal, "R", "A", "n")
	reg.Name, rel.Name = "changed", "changed"
	flush(t, b)
	evs := s.all()
	if len(evs) != 1 || evs[0].Regarding.Name != "p" || evs[0].Related == nil || evs[0].Related.Name != "q" {
		t.Errorf("stored %+v", evs)
	}
}

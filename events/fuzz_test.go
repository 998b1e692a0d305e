package events_test

import (
	"context"
	"testing"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

func FuzzRecorderFields(f *testing.F) {
	f.Add("Reason", "Action", "note %d", "example.com/ctl", "ns", "p")
	f.Add("", "", "", "", "", "")
	f.Add("R\xff\xfe", "Ä\x00", "%!%%%s%v", "a/b", "NS", "Upper")
	f.Add(string(make([]byte, 300)), "é", "ééééé", "x", "ns", "a.b")
	f.Fuzz(func(t *testing.T, reason, action, note, controller, ns, name string) {
		s := newMemSink()
		b := events.NewBroadcaster(s, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited}), record.WithLogger(klogDiscard())))
		defer b.Shutdown()
		if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		r := b.NewRecorder(scheme.Scheme, controller)
		p := pod(ns, name)
		for _, typ := range []string{v1.EventTypeNormal, v1.EventTypeWarning} {
			r.Eventf(p, p, typ, reason, action, note, 1, "x")
			r.(events.AnnotatedEventRecorder).AnnotatedEventf(p, nil, map[string]string{"k": note}, typ, reason, action, note)
		}
		flush(t, b)
		st := b.Stats()
		check.Settled(t, st)
		if st.Recorded != 4 {
			t.Fatalf("Recorded %d", st.Recorded)
		}
		var occ int64
		for _, e := range s.all() {
			if e.Series != nil {
				occ += int64(e.Series.Count)
			} else {
				occ++
			}
			if len(e.Note) > events.MaxNoteLength || len(e.Reason) > events.MaxReasonLength || len(e.Action) > events.MaxActionLength ||
				len(e.ReportingInstance) > events.MaxReportingInstanceLength {
				t.Errorf("over the limits: note %d reason %d action %d instance %d", len(e.Note), len(e.Reason), len(e.Action), len(e.ReportingInstance))
			}
			if e.Reason == "" || e.Action == "" || e.ReportingInstance == "" || len(validation.IsQualifiedName(e.ReportingController)) > 0 {
				t.Errorf("stored an event the server refuses: %+v", e)
			}
			if utf8.ValidString(note) && !utf8.ValidString(e.Note) {
				t.Errorf("note cut inside a rune: %q", e.Note)
			}
			if errs := validation.IsDNS1123Subdomain(e.Name); len(errs) > 0 {
				t.Errorf("event name %q: %v", e.Name, errs)
			}
			if e.Namespace == "" {
				t.Errorf("no namespace")
			}
		}
		if occ+st.Dropped.Total() != st.Recorded {
			t.Errorf("stored occurrences %d + drops %d != recorded %d; stats %+v", occ, st.Dropped.Total(), st.Recorded, st)
		}
	})
}

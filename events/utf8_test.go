package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/internal/testing/utf8check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// validateEventsV1Create is what the API server checks of an
// events.k8s.io/v1 create (k8s.io/kubernetes pkg/apis/core/validation
// events.go: ValidateEventCreate with legacyValidateEvent; the limits count
// bytes, len(), of the string the server decoded):
//
//   - reportingController: required, a qualified name;
//   - reportingInstance: required, at most 128 bytes;
//   - action: required, at most 128 bytes;
//   - reason: required, at most 128 bytes;
//   - note (message): at most 1024 bytes;
//   - namespace: a DNS-1123 subdomain; "default" (or kube-system) when the
//     regarding object has none, else the regarding object's;
//   - metadata.name: a DNS-1123 subdomain; eventTime set; type Normal or
//     Warning; deprecatedFirstTimestamp, deprecatedLastTimestamp,
//     deprecatedCount and deprecatedSource unset; a series, if any, has a
//     count of at least 2 and a lastObservedTime.
func validateEventsV1Create(e *eventsv1.Event) field.ErrorList {
	var errs field.ErrorList
	req := func(path, v string) {
		if v == "" {
			errs = append(errs, field.Required(field.NewPath(path), ""))
		}
	}
	maxLen := func(path, v string, n int) {
		if len(v) > n {
			errs = append(errs, field.Invalid(field.NewPath(path), "", fmt.Sprintf("can have at most %d characters", n)))
		}
	}
	req("reportingController", e.ReportingController)
	for _, msg := range validation.IsQualifiedName(e.ReportingController) {
		errs = append(errs, field.Invalid(field.NewPath("reportingController"), e.ReportingController, msg))
	}
	req("reportingInstance", e.ReportingInstance)
	maxLen("reportingInstance", e.ReportingInstance, 128)
	req("action", e.Action)
	maxLen("action", e.Action, 128)
	req("reason", e.Reason)
	maxLen("reason", e.Reason, 128)
	maxLen("note", e.Note, 1024)
	if e.Regarding.Namespace == "" {
		if e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			errs = append(errs, field.Invalid(field.NewPath("regarding", "namespace"), e.Regarding.Namespace, "does not match event.namespace"))
		}
	} else if e.Namespace != e.Regarding.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("regarding", "namespace"), e.Regarding.Namespace, "does not match event.namespace"))
	}
	for _, msg := range validation.IsDNS1123Subdomain(e.Namespace) {
		errs = append(errs, field.Invalid(field.NewPath("namespace"), e.Namespace, msg))
	}
	for _, msg := range validation.IsDNS1123Subdomain(e.Name) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), e.Name, msg))
	}
	if e.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != v1.EventTypeNormal && e.Type != v1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), e.Type, "has invalid value"))
	}
	if !e.DeprecatedFirstTimestamp.IsZero() || !e.DeprecatedLastTimestamp.IsZero() || e.DeprecatedCount != 0 ||
		e.DeprecatedSource.Component != "" || e.DeprecatedSource.Host != "" {
		errs = append(errs, field.Invalid(field.NewPath("deprecated"), "", "needs to be unset"))
	}
	if s := e.Series; s != nil && (s.Count < 2 || s.LastObservedTime.IsZero()) {
		errs = append(errs, field.Invalid(field.NewPath("series"), "", "count at least 2 and lastObservedTime"))
	}
	return errs
}

// validatingSink is a memSink behind the API server's validation: each
// create is sent as JSON, as client-go sends it, decoded, validated, and
// refused 422 when invalid (the sink then counts it rejected).
type validatingSink struct {
	*memSink
	mu      sync.Mutex
	refused []string
	sent    []*eventsv1.Event // what the server decoded, in order
}

func (s *validatingSink) Create(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	data, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	var got eventsv1.Event
	if err := json.Unmarshal(data, &got); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.sent = append(s.sent, &got)
	if errs := validateEventsV1Create(&got); len(errs) > 0 {
		s.refused = append(s.refused, fmt.Sprintf("%q: %v", string(data), errs))
		s.mu.Unlock()
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}, got.Name, errs)
	}
	s.mu.Unlock()
	return s.memSink.Create(ctx, &got)
}

// take returns what the server decoded since the last call and what
// it refused.
func (s *validatingSink) take() (sent []*eventsv1.Event, refused []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sent, refused = s.sent, s.refused
	s.sent, s.refused = nil, nil
	return sent, refused
}

// FuzzRecorderUTF8 feeds arbitrary reasons, actions and notes through an
// events.k8s.io/v1 recorder to a sink that checks each create as the API
// server does, after the JSON the client sends: nothing is refused, and
// each field arrives valid, as the start of the input made valid, as long
// as the server's limit lets it be. The seed corpus (testdata/fuzz) holds
// invalid UTF-8: a note of 1,024 invalid bytes that a byte cut sends as
// 3,072 bytes, runs that straddle the limit, a rune cut at the limit.
func FuzzRecorderUTF8(f *testing.F) {
	f.Add("Reason", "Action", "note")
	f.Add("R\xff", "A\xfe", strings.Repeat("\xff", 1024))
	f.Add(strings.Repeat("é", 64)+"\xff", strings.Repeat("\xc3", 200), strings.Repeat("x\xff\xfe", 500))
	vs := &validatingSink{memSink: newMemSink()}
	b := events.NewBroadcaster(vs, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited}), record.WithLogger(klogDiscard())))
	f.Cleanup(b.Shutdown)
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		f.Fatal(err)
	}
	r := b.NewRecorder(scheme.Scheme, "example.com/ctl")
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, reason, action, note string) {
		p := pod("ns", fmt.Sprint("p", n.Add(1))) // a new series each time
		r.Eventf(p, nil, v1.EventTypeWarning, reason, action, "%s", note)
		flush(t, b)
		sent, refused := vs.take()
		if len(refused) > 0 {
			t.Fatalf("the server refuses: %v", refused)
		}
		if reason == "" || action == "" {
			if len(sent) != 0 {
				t.Fatalf("sent an event without a reason or an action: %+v", sent[0])
			}
			return // dropped as invalid by the recorder, counted
		}
		if len(sent) != 1 {
			t.Fatalf("sent %d events, want 1; stats %+v", len(sent), b.Stats())
		}
		e := sent[0]
		if !utf8check.IsValidCut(reason, e.Reason, events.MaxReasonLength) || !utf8check.IsValidCut(action, e.Action, events.MaxActionLength) ||
			!utf8check.IsValidCut(note, e.Note, events.MaxNoteLength) {
			t.Fatalf("reason %q, action %q, note %q arrive as %q, %q, %q", reason, action, note, e.Reason, e.Action, e.Note)
		}
		if st := b.Stats(); st.Dropped.Rejected != 0 {
			t.Fatalf("rejected: %+v", st)
		}
	})
}

package record_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/internal/testing/utf8check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// validateCoreV1Event is what the API server checks of a core/v1 event
// (k8s.io/kubernetes pkg/apis/core/validation/events.go, legacyValidateEvent;
// the limits count bytes, len(), of the string the server decoded), plus
// the bounds herald's record package keeps although the server does not
// check them without an eventTime (reason, action, source component and host
// 128 bytes, message the message limit, 1024 by default):
//
//   - without eventTime: the namespace is the involved object's, or "" or
//     "default" when it has none;
//   - with eventTime: the namespace is the involved object's, or "default"
//     or "kube-system" when it has none; reportingController required, a
//     qualified name; reportingInstance required, at most 128 bytes; action
//     required, at most 128; reason required, at most 128; message at most
//     1024;
//   - the namespace is a DNS-1123 subdomain.
func validateCoreV1Event(e *v1.Event, messageLimit int) field.ErrorList {
	var errs field.ErrorList
	maxLen := func(path, v string, n int) {
		if len(v) > n {
			errs = append(errs, field.Invalid(field.NewPath(path), "", fmt.Sprintf("can have at most %d characters", n)))
		}
	}
	req := func(path, v string) {
		if v == "" {
			errs = append(errs, field.Required(field.NewPath(path), ""))
		}
	}
	mismatch := field.Invalid(field.NewPath("involvedObject", "namespace"), e.InvolvedObject.Namespace, "does not match event.namespace")
	if e.EventTime.IsZero() {
		if e.InvolvedObject.Namespace == "" {
			if e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault {
				errs = append(errs, mismatch)
			}
		} else if e.Namespace != e.InvolvedObject.Namespace {
			errs = append(errs, mismatch)
		}
	} else {
		if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			errs = append(errs, mismatch)
		}
		req("reportingController", e.ReportingController)
		for _, msg := range validation.IsQualifiedName(e.ReportingController) {
			errs = append(errs, field.Invalid(field.NewPath("reportingController"), e.ReportingController, msg))
		}
		req("reportingInstance", e.ReportingInstance)
		maxLen("reportingInstance", e.ReportingInstance, 128)
		req("action", e.Action)
		req("reason", e.Reason)
		maxLen("message", e.Message, 1024)
	}
	for _, msg := range validation.IsDNS1123Subdomain(e.Namespace) {
		errs = append(errs, field.Invalid(field.NewPath("namespace"), e.Namespace, msg))
	}
	// herald's own bounds.
	maxLen("reason", e.Reason, 128)
	maxLen("action", e.Action, 128)
	maxLen("source.component", e.Source.Component, 128)
	maxLen("source.host", e.Source.Host, 128)
	maxLen("reportingInstance", e.ReportingInstance, 128)
	maxLen("message", e.Message, messageLimit)
	return errs
}

// serverCheck is a sinktest fault that sends each create as JSON, as
// client-go does, and validates what the server decodes; an invalid event
// is refused 422 (counted rejected).
type serverCheck struct {
	messageLimit int
	mu           sync.Mutex
	refused      []string
	sent         []*v1.Event
}

func (c *serverCheck) fault(_ context.Context, op sinktest.Op, ev *v1.Event) error {
	if op != sinktest.OpCreate {
		return nil
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	var got v1.Event
	if err := json.Unmarshal(data, &got); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent = append(c.sent, &got)
	if errs := validateCoreV1Event(&got, c.messageLimit); len(errs) > 0 {
		c.refused = append(c.refused, fmt.Sprintf("%q: %v", string(data), errs))
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Event"}, got.Name, errs)
	}
	return nil
}

func (c *serverCheck) take() (sent []*v1.Event, refused []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sent, refused = c.sent, c.refused
	c.sent, c.refused = nil, nil
	return sent, refused
}

// FuzzRecorderUTF8 feeds arbitrary reasons, messages and source hosts
// through a core/v1 recorder to a sink that checks each create as the API
// server does, after the JSON the client sends, with herald's bounds:
// nothing is refused, and each field arrives valid, as the start of the
// input made valid, as long as its bound lets it be. The seed corpus
// (testdata/fuzz) holds invalid UTF-8.
func FuzzRecorderUTF8(f *testing.F) {
	f.Add("Reason", "host", "message")
	f.Add("R\xff", "h\xfe", strings.Repeat("\xff", 1024))
	f.Add(strings.Repeat("é", 64)+"\xff", strings.Repeat("\xc3", 200), strings.Repeat("x\xff\xfe", 500))
	const limit = 1024
	check := &serverCheck{messageLimit: limit}
	s := sinktest.New()
	s.SetFault(check.fault)
	b := record.NewBroadcaster(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited}), record.WithLogger(klog.Logger{}))
	f.Cleanup(b.Shutdown)
	b.StartRecordingToSink(s)
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, reason, host, message string) {
		r := b.NewRecorder(scheme.Scheme, v1.EventSource{Component: "ctl", Host: host})
		name := fmt.Sprint("p", n.Add(1)) // a new event each time
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)}}
		r.Eventf(p, v1.EventTypeWarning, reason, "%s", message)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := b.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		sent, refused := check.take()
		if len(refused) > 0 {
			t.Fatalf("refused: %v", refused)
		}
		if len(sent) != 1 {
			t.Fatalf("sent %d events, want 1; stats %+v", len(sent), b.Stats())
		}
		e := sent[0]
		if !utf8check.IsValidCut(reason, e.Reason, 128) || !utf8check.IsValidCut(host, e.Source.Host, 128) || !utf8check.IsValidCut(message, e.Message, limit) {
			t.Fatalf("reason %q, host %q, message %q arrive as %q, %q, %q", reason, host, message, e.Reason, e.Source.Host, e.Message)
		}
		if st := b.Stats(); st.Dropped.Rejected != 0 {
			t.Fatalf("rejected: %+v", st)
		}
	})
}

package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// TestOddInput records events the API server would refuse as client-go
// writes them (messages over the limit, cut near a multi-byte character;
// object names that make invalid event names) and non-ASCII messages: every
// one is stored as a valid Event.
func TestOddInput(t *testing.T) {
	cs := adminClient(t)
	ns := env.CreateNamespace(t, "odd")
	h := newHarness(t, heraldSink(t, env.Admin))
	limit := 1024

	// A 5000-byte message whose byte limit-1..limit+1 is one 3-byte
	// character: it must be cut before it, never through it.
	overCJK := strings.Repeat("a", limit-2) + "世界" + strings.Repeat("b", 5000-limit-4)
	// A 4-byte character ending exactly at the limit is kept.
	overEmoji := strings.Repeat("c", limit-4) + "🚀" + strings.Repeat("é", 2000)
	const nonASCII = "Größe überschritten: 日本語のメッセージ 🚀 — ¿qué? ✓"

	cases := []struct {
		name    string
		ref     *v1.ObjectReference
		message string
		want    string // the stored message
	}{
		{"message cut before a 3-byte character", widgetRef(ns, "long-message"), overCJK, overCJK[:limit-2]},
		{"message cut after a 4-byte character", widgetRef(ns, "long-emoji"), overEmoji, overEmoji[:limit]},
		{"non-ASCII message", widgetRef(ns, "unicode"), nonASCII, nonASCII},
		{"uppercase and underscore in name", widgetRef(ns, "My_Widget.V2"), "odd name", "odd name"},
		{"same event name prefix as the previous one", widgetRef(ns, "my-widget.v2"), "odd name", "odd name"},
		{"colon in name", widgetRef(ns, "system:node:Worker_1"), "odd name", "odd name"},
		{"250-character name", widgetRef(ns, strings.Repeat("n", 250)), "long name", "long name"},
		{"253-character odd name", widgetRef(ns, "X"+strings.Repeat("_y", 126)), "long odd name", "long odd name"},
		{"non-ASCII name", widgetRef(ns, "größe-日本"), nonASCII, nonASCII},
	}
	for _, c := range cases {
		h.rec.Event(c.ref, v1.EventTypeNormal, "Odd", c.message)
	}
	s := h.flush(flushTimeout)
	if s.Created != int64(len(cases)) || s.Dropped.Total() != 0 || s.Retried != 0 {
		t.Errorf("stats %+v: want %d created, none dropped or retried", s, len(cases))
	}

	evs := waitEvents(t, cs, ns, metav1.ListOptions{}, func(evs []v1.Event) error {
		if len(evs) != len(cases) {
			return fmt.Errorf("%d events, want %d", len(evs), len(cases))
		}
		return nil
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := byObject(evs, c.ref.Name)
			if len(got) != 1 {
				t.Fatalf("%d events about %q, want 1", len(got), c.ref.Name)
			}
			ev := got[0]
			if ev.InvolvedObject != *c.ref {
				t.Errorf("involvedObject %+v, want %+v", ev.InvolvedObject, *c.ref)
			}
			if len(ev.Message) > limit || !utf8.ValidString(ev.Message) {
				t.Errorf("message of %d bytes (limit %d), valid UTF-8: %v", len(ev.Message), limit, utf8.ValidString(ev.Message))
			}
			if ev.Message != c.want {
				t.Errorf("message %.60q... (%d bytes), want %.60q... (%d bytes)", ev.Message, len(ev.Message), c.want, len(c.want))
			}
			if errs := validation.IsDNS1123Subdomain(ev.Name); len(errs) > 0 {
				t.Errorf("event name %q is not a valid name: %v", ev.Name, errs)
			}
			if ev.Count != 1 || ev.Reason != "Odd" {
				t.Errorf("count %d, reason %q", ev.Count, ev.Reason)
			}
		})
	}
	// Names are unique, and as close to the object's name as a valid name
	// can be: a valid object name is kept as is.
	if ev := byObject(evs, strings.Repeat("n", 250)); len(ev) == 1 && !strings.HasPrefix(ev[0].Name, strings.Repeat("n", 200)) {
		t.Errorf("event name %q does not start with the object's name", ev[0].Name)
	}
	if ev := byObject(evs, "My_Widget.V2"); len(ev) == 1 && !strings.HasPrefix(ev[0].Name, "my-widget.v2.") {
		t.Errorf("event name %q, want my-widget.v2.<hex>", ev[0].Name)
	}
}

func widgetRef(namespace, name string) *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Widget", APIVersion: "widgets.example.com/v1", Namespace: namespace, Name: name,
		UID: types.UID("uid-" + randSuffix())}
}

// TestValidEventsWithFrozenClock records, with a clock that stands still,
// more distinct messages about an oddly named object than the correlator
// lets through uncombined, plus events with oversized fields and an
// impossible namespace. The API server stores every event herald writes,
// each under a name of its own (client-go's combined event takes the first
// event's name: AlreadyExists, then its patches overwrite that event), with
// every field within the events.k8s.io limits; the impossible namespace is
// refused once, at the recorder, not retried.
func TestValidEventsWithFrozenClock(t *testing.T) {
	cs := adminClient(t)
	ns := env.CreateNamespace(t, "frozen")
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC))
	h := newHarness(t, heraldSink(t, env.Admin), record.WithSinkOptions(sink.Options{Clock: clk}))

	ref := widgetRef(ns, "system:controller:X_1")
	for i := range 12 {
		h.rec.Eventf(ref, v1.EventTypeWarning, "Failed", "attempt %d failed", i)
	}
	huge := strings.Repeat("ü", 1<<18) // 512 KiB
	big := h.eb.NewRecorder(nil, v1.EventSource{Component: "c" + huge, Host: "h" + huge})
	big.Event(widgetRef(ns, "big"), v1.EventTypeNormal, "R"+huge, "oversized fields")
	h.rec.Event(&v1.ObjectReference{Kind: "Widget", APIVersion: "widgets.example.com/v1", Namespace: "a/b", Name: "x"},
		v1.EventTypeNormal, "R", "impossible namespace")

	s := h.flush(flushTimeout)
	if s.Created != 11 || s.Patched+s.Coalesced != 2 || s.Dropped.Total() != 1 || s.Dropped.Invalid != 1 || s.Retried != 0 {
		t.Errorf("stats %+v: want 11 created, 2 patched or coalesced, 1 invalid drop, no retry", s)
	}
	evs := waitEvents(t, cs, ns, metav1.ListOptions{}, func(evs []v1.Event) error {
		if len(evs) != 11 {
			return fmt.Errorf("%d events, want 11", len(evs))
		}
		return nil
	})
	combined := 0
	for _, ev := range evs {
		if errs := validation.IsDNS1123Subdomain(ev.Name); len(errs) > 0 {
			t.Errorf("event name %q: %v", ev.Name, errs)
		}
		switch {
		case ev.InvolvedObject.Name == "big":
			for field, v := range map[string]string{"reason": ev.Reason, "source.component": ev.Source.Component,
				"source.host": ev.Source.Host, "reportingController": ev.ReportingController, "reportingInstance": ev.ReportingInstance} {
				if len(v) > 128 || !utf8.ValidString(v) {
					t.Errorf("%s of %d bytes", field, len(v))
				}
			}
		case strings.HasPrefix(ev.Message, "(combined from similar events): "):
			combined++
			if ev.Count != 3 || ev.Message != "(combined from similar events): attempt 11 failed" {
				t.Errorf("combined event %s: count %d, message %q", ev.Name, ev.Count, ev.Message)
			}
		case ev.Count != 1:
			t.Errorf("event %s (%q): count %d, another event's write landed on it", ev.Name, ev.Message, ev.Count)
		}
	}
	if combined != 1 {
		t.Errorf("%d combined events, want 1:\n%s", combined, describeEvents(evs))
	}
}

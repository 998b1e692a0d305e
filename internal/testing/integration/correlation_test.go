package integration

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/heraldk8s/herald/record"
)

// The correlator's defaults, client-go's: a spam key's burst, the distinct
// messages that make events combine, and the prefix of a combined message.
const (
	defaultBurst     = 25
	defaultMaxEvents = 10
	aggregatePrefix  = "(combined from similar events): "
)

// TestRepeatedEventCount records 100 identical events about one object and
// checks the one Event the API server holds: with the spam filter off its
// count is 100; with the default spam filter (a burst of 25, refilled at one
// token per 5 minutes) only the first 25 occurrences are written (the
// correlator counts every occurrence, then skips those without a token), so
// the stored count is 25 and Stats says 75 were filtered.
func TestRepeatedEventCount(t *testing.T) {
	const occurrences = 100
	for _, tc := range []struct {
		name         string
		opts         []record.BroadcasterOption
		wantCount    int32
		wantFiltered int64
	}{
		{
			name:      "spam filter off",
			opts:      []record.BroadcasterOption{record.WithCorrelatorOptions(record.CorrelatorOptions{DisableSpamFilter: true})},
			wantCount: occurrences,
		},
		{
			name:         "spam filter on",
			wantCount:    defaultBurst,
			wantFiltered: occurrences - defaultBurst,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := adminClient(t)
			ns := env.CreateNamespace(t, "repeat")
			h := newHarness(t, heraldSink(t, env.Admin), tc.opts...)
			obj := podRef(ns, "busy-0")
			for range occurrences {
				h.rec.Event(obj, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
			}
			s := h.flush(flushTimeout)

			if s.Recorded != occurrences || s.Filtered != tc.wantFiltered || s.Dropped.Total() != 0 {
				t.Errorf("stats %+v: want %d recorded, %d filtered, none dropped", s, occurrences, tc.wantFiltered)
			}
			if s.Created != 1 {
				t.Errorf("stats %+v: want exactly 1 create", s)
			}
			if got := written(s); got != int64(tc.wantCount) {
				t.Errorf("stats say %d events written (created+patched+coalesced), want %d: %+v", got, tc.wantCount, s)
			}
			evs := waitEvents(t, cs, ns, metav1.ListOptions{}, countEvents(map[string]int32{"busy-0": tc.wantCount}))
			// What the server holds is what Stats says was written.
			if int64(evs[0].Count) != written(s) {
				t.Errorf("stored count %d, stats say %d written", evs[0].Count, written(s))
			}
			ev := evs[0]
			if ev.Message != "Back-off restarting failed container" || ev.FirstTimestamp.After(ev.LastTimestamp.Time) {
				t.Errorf("stored event %+v", ev)
			}
			if !strings.HasPrefix(ev.Name, "busy-0.") {
				t.Errorf("name %q, want busy-0.<hex>", ev.Name)
			}
		})
	}
}

// TestAggregation records 11 events about one object with the same reason
// and 11 distinct messages. Like client-go, the 10th distinct message within
// 10 minutes and every later one are folded into one combined event: the API
// server holds 9 ordinary events and one "(combined from similar events)"
// event with count 2 carrying the latest message.
func TestAggregation(t *testing.T) {
	const distinct = 11
	cs := adminClient(t)
	ns := env.CreateNamespace(t, "aggregate")
	h := newHarness(t, heraldSink(t, env.Admin))
	obj := podRef(ns, "flappy-0")
	for i := range distinct {
		h.rec.Eventf(obj, v1.EventTypeWarning, "FailedMount", "volume vol-%d could not be mounted", i)
	}
	s := h.flush(flushTimeout)
	maxEvents := defaultMaxEvents
	wantAggregated := int64(distinct - maxEvents + 1)
	if s.Recorded != distinct || s.Aggregated != wantAggregated || s.Filtered != 0 || s.Dropped.Total() != 0 || written(s) != distinct {
		t.Errorf("stats %+v: want %d recorded and written, %d aggregated", s, distinct, wantAggregated)
	}

	waitEvents(t, cs, ns, metav1.ListOptions{}, func(evs []v1.Event) error {
		if len(evs) != maxEvents {
			return fmt.Errorf("%d events, want %d", len(evs), maxEvents)
		}
		plain := map[string]bool{}
		var combined []v1.Event
		for _, e := range evs {
			if strings.HasPrefix(e.Message, aggregatePrefix) {
				combined = append(combined, e)
				continue
			}
			if e.Count != 1 {
				return fmt.Errorf("event %s (%q): count %d, want 1", e.Name, e.Message, e.Count)
			}
			plain[e.Message] = true
		}
		for i := range maxEvents - 1 {
			if msg := fmt.Sprintf("volume vol-%d could not be mounted", i); !plain[msg] {
				return fmt.Errorf("no event with message %q", msg)
			}
		}
		if len(combined) != 1 {
			return fmt.Errorf("%d combined events, want 1", len(combined))
		}
		c := combined[0]
		wantMsg := aggregatePrefix + fmt.Sprintf("volume vol-%d could not be mounted", distinct-1)
		switch {
		case c.Message != wantMsg:
			return fmt.Errorf("combined message %q, want %q", c.Message, wantMsg)
		case c.Count != int32(wantAggregated):
			return fmt.Errorf("combined count %d, want %d", c.Count, wantAggregated)
		case c.Reason != "FailedMount" || c.Type != v1.EventTypeWarning || c.InvolvedObject != *obj || c.Source != source:
			return fmt.Errorf("combined event %+v", c)
		case !strings.HasPrefix(c.Name, obj.Name+"."):
			return fmt.Errorf("combined name %q, want %s.<hex>", c.Name, obj.Name)
		}
		return nil
	})
}

// TestRecreateAfterDelete deletes an Event on the server between two
// occurrences: the second occurrence's Patch gets NotFound and herald creates
// the Event again, under the same name and with count 2 (what client-go
// does). It runs with herald's sink and with client-go's
// typedcorev1.EventSinkImpl, which plugs in unchanged.
func TestRecreateAfterDelete(t *testing.T) {
	for _, tc := range []struct {
		name string
		sink func(t *testing.T) record.EventSink
	}{
		{"herald sink", func(t *testing.T) record.EventSink { return heraldSink(t, env.Admin) }},
		{"client-go sink", func(t *testing.T) record.EventSink {
			return &typedcorev1.EventSinkImpl{Interface: newClientset(t, env.Admin).CoreV1().Events("")}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := adminClient(t)
			ns := env.CreateNamespace(t, "recreate")
			h := newHarness(t, tc.sink(t))
			obj := podRef(ns, "db-0")
			occur := func() {
				h.rec.Event(obj, v1.EventTypeNormal, "Pulled", "Container image already present on machine")
			}

			occur()
			s := h.flush(flushTimeout)
			if s.Created != 1 {
				t.Fatalf("stats %+v: want 1 created", s)
			}
			first := waitEvents(t, cs, ns, metav1.ListOptions{}, countEvents(map[string]int32{"db-0": 1}))[0]
			if err := cs.CoreV1().Events(ns).Delete(t.Context(), first.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("deleting event %s: %v", first.Name, err)
			}
			waitEvents(t, cs, ns, metav1.ListOptions{}, countEvents(map[string]int32{}))

			occur()
			s = h.flush(flushTimeout)
			if s.Created != 2 || s.Patched != 0 || s.Retried != 0 || s.Dropped.Total() != 0 {
				t.Errorf("stats %+v: want 2 created (Patch NotFound fell back to Create), none patched, retried or dropped", s)
			}
			again := waitEvents(t, cs, ns, metav1.ListOptions{}, countEvents(map[string]int32{"db-0": 2}))[0]
			if again.Name != first.Name || again.UID == first.UID {
				t.Errorf("recreated event %s (uid %s), want a new event named %s (old uid %s)", again.Name, again.UID, first.Name, first.UID)
			}
			if !again.FirstTimestamp.Equal(&first.FirstTimestamp) || again.LastTimestamp.Before(&first.LastTimestamp) {
				t.Errorf("timestamps first %v last %v, want first %v, last >= %v", again.FirstTimestamp, again.LastTimestamp, first.FirstTimestamp, first.LastTimestamp)
			}

			// A third occurrence patches the recreated event.
			occur()
			s = h.flush(flushTimeout)
			if s.Patched != 1 {
				t.Errorf("stats %+v: want 1 patched", s)
			}
			waitEvents(t, cs, ns, metav1.ListOptions{}, countEvents(map[string]int32{"db-0": 3}))
		})
	}
}

package soak

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// The ledger's checks on their own, without a server: each must flag what
// is off, and only that.

func TestCheckStored(t *testing.T) {
	core := &incarnation{id: "s0.0", kind: slotKind{api: coreAPI}}
	ev := func(count int32) *v1.Event {
		e := &v1.Event{Count: count}
		e.Namespace, e.Name = "ns", "e1"
		return e
	}
	for _, c := range []struct {
		name      string
		ev        *v1.Event
		w         *written
		wantLost  bool
		wantOffBy string
	}{
		{"acknowledged count", ev(3), &written{acked: 3}, false, ""},
		{"lost answer above it", ev(5), &written{acked: 3, uncertain: map[int32]bool{5: true}}, true, ""},
		{"more than any write", ev(6), &written{acked: 3, uncertain: map[int32]bool{5: true}}, false, "off by 3"},
		{"less than acknowledged", ev(2), &written{acked: 3, uncertain: map[int32]bool{2: true}}, false, "off by -1"},
		{"never acknowledged nor sent", ev(1), nil, false, "off by 1"},
		{"only a lost create", ev(1), &written{uncertain: map[int32]bool{1: true}}, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			lost, problem := checkStored(core, c.ev, c.w)
			if lost != c.wantLost || (c.wantOffBy == "") != (problem == "") || !strings.Contains(problem, c.wantOffBy) {
				t.Errorf("checkStored = %v, %q; want lost %v, problem with %q", lost, problem, c.wantLost, c.wantOffBy)
			}
		})
	}

	// events.k8s.io/v1: the series count, 1 without a series.
	ev1 := &incarnation{id: "s2.0", kind: slotKind{api: eventsAPI}}
	e := ev(7) // a core/v1 count the events API does not keep
	if _, p := checkStored(ev1, e, &written{acked: 1}); p != "" {
		t.Errorf("events.k8s.io/v1 event without a series: %s", p)
	}
	e.Series = &v1.EventSeries{Count: 4}
	if _, p := checkStored(ev1, e, &written{acked: 4}); p != "" {
		t.Errorf("events.k8s.io/v1 series of 4: %s", p)
	}
	if _, p := checkStored(ev1, e, &written{acked: 3}); p == "" {
		t.Error("events.k8s.io/v1 series of 4 acknowledged at 3: no problem found")
	}
}

func TestStatsProblems(t *testing.T) {
	settled := func() *incarnation {
		inc := &incarnation{id: "s0.0", done: true, events: map[string]*written{
			"ns/a": {acked: 3}, "ns/b": {acked: 1},
		}, tryRuns: 1}
		inc.recorded.Store(6)
		inc.final = record.Stats{Recorded: 6, Broadcast: 6, Offered: 6, Filtered: 1,
			Stats: sink.Stats{Created: 2, Patched: 1, Coalesced: 1, Dropped: sink.Drops{RetriesExhausted: 1}}}
		return inc
	}
	if p := statsProblems(settled()); len(p) != 0 {
		t.Fatalf("a balanced incarnation: %v", p)
	}
	for _, c := range []struct {
		name   string
		change func(*incarnation)
		want   string
	}{
		{"an event in no bucket", func(inc *incarnation) { inc.final.Filtered = 0 }, "in no Stats bucket"},
		{"recorded differs", func(inc *incarnation) { inc.recorded.Store(7) }, "off by -1"},
		{"acknowledged less than written", func(inc *incarnation) { inc.events["ns/a"].acked = 2 }, "1 short"},
		{"acknowledged more than written, dropped and filtered", func(inc *incarnation) { inc.events["ns/a"].acked = 6 }, "1 too many"},
		{"still pending", func(inc *incarnation) { inc.final.Pending = 1; inc.final.Dropped.RetriesExhausted = 0 }, "pending 1"},
		{"not shut down", func(inc *incarnation) { inc.done = false }, "never shut down"},
		{"given up with no run of failures", func(inc *incarnation) { inc.tryRuns = 0 }, "no event's requests failed 12 times in a row"},
	} {
		t.Run(c.name, func(t *testing.T) {
			inc := settled()
			c.change(inc)
			p := statsProblems(inc)
			if !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, c.want) }) {
				t.Errorf("problems %v, want one with %q", p, c.want)
			}
		})
	}
	// A dropped series whose later write carried the dropped occurrence:
	// the acknowledged counts exceed what Stats count as written by at
	// most the drops.
	inc := settled()
	inc.events["ns/a"].acked = 4
	if p := statsProblems(inc); len(p) != 0 {
		t.Errorf("one dropped occurrence carried by a later write: %v", p)
	}
	// So is an occurrence the core/v1 spam filter skipped: the correlator
	// counted it before the filter, and the next write of the event
	// carries it (client-go's EventCorrelate; the 30-minute soaks, whose
	// recorders lived past the filter's refill of one token in 5 minutes,
	// met it: up to 280 an incarnation).
	inc = settled()
	inc.events["ns/a"].acked = 5
	if p := statsProblems(inc); len(p) != 0 {
		t.Errorf("a dropped and a filtered occurrence carried by later writes: %v", p)
	}
}

func TestUncertain(t *testing.T) {
	gr := schema.GroupResource{Resource: "events"}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("connection reset by peer"), true},
		{apierrors.NewAlreadyExists(gr, "e"), false},
		{apierrors.NewForbidden(gr, "e", errors.New("namespace is being terminated")), false},
		{apierrors.NewInternalError(errors.New("failed calling webhook \"x\": 500")), false},
		{apierrors.NewInternalError(errors.New("faultproxy: injected 500")), false},
		{apierrors.NewTimeoutError("the server took too long", 1), true},
		{apierrors.NewServiceUnavailable("etcd is down"), true},
	} {
		if got := uncertain(c.err); got != c.want {
			t.Errorf("uncertain(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestErrClass: the progress line names what the probing engines last met.
func TestErrClass(t *testing.T) {
	gr := schema.GroupResource{Resource: "events"}
	for _, c := range []struct {
		err  error
		want string
	}{
		{errors.New(`Post "https://127.0.0.1:1/api/v1/namespaces/a/events": read tcp 127.0.0.1:2->127.0.0.1:1: read: connection reset by peer`), "reset"},
		{errors.New(`Post "https://127.0.0.1:1/x": dial tcp 127.0.0.1:1: connect: connection refused`), "refused"},
		{errors.New(`Post "https://127.0.0.1:1/x": EOF`), "EOF"},
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), "timeout"},
		{context.Canceled, "canceled"},
		{errors.New("tls: bad certificate"), "transport"},
		{apierrors.NewInternalError(errors.New("faultproxy: injected 500")), "500 injected"},
		{apierrors.NewInternalError(errors.New(`failed calling webhook "x": 500`)), "500 webhook"},
		{apierrors.NewForbidden(gr, "e", errors.New("no")), "403 Forbidden"},
		{apierrors.NewTooManyRequests("slow down", 1), "429 TooManyRequests"},
	} {
		if got := errClass(c.err); got != c.want {
			t.Errorf("errClass(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	if got := countsString(map[string]int{"reset": 1, "500 injected": 3, "EOF": 1}); got != "500 injected 3, EOF 1, reset 1" {
		t.Errorf("countsString = %q", got)
	}
}

func TestPatchCount(t *testing.T) {
	for data, want := range map[string]int32{
		`{"count":4,"lastTimestamp":"2026-01-01T00:00:00Z","message":"m"}`:        4,
		`{"series":{"count":7,"lastObservedTime":"2026-01-01T00:00:00.000000Z"}}`: 7,
		`{"message":"m"}`: 0,
		`not json`:        0,
	} {
		if got := patchCount([]byte(data)); got != want {
			t.Errorf("patchCount(%s) = %d, want %d", data, got, want)
		}
	}
}

// TestScheduleReproducible: a seed gives the same schedule every time,
// another seed another one, and a load of 30 s or more gets every kind.
func TestScheduleReproducible(t *testing.T) {
	a := Schedule(42, time.Minute, 6, 4)
	b := Schedule(42, time.Minute, 6, 4)
	if !slices.EqualFunc(a, b, func(x, y Fault) bool { return x.String() == y.String() }) {
		t.Fatalf("seed 42 gave two schedules:\n%v\n%v", a, b)
	}
	c := Schedule(43, time.Minute, 6, 4)
	if slices.EqualFunc(a, c, func(x, y Fault) bool { return x.String() == y.String() }) {
		t.Fatalf("seeds 42 and 43 gave the same schedule")
	}
	for _, d := range []time.Duration{30 * time.Second, 2 * time.Minute} {
		kinds := map[Kind]bool{}
		for _, f := range Schedule(1, d, 6, 4) {
			kinds[f.Kind] = true
			if f.At < 0 || f.At > d {
				t.Errorf("%v: fault at %v, outside the load", d, f.At)
			}
			if (f.Kind == Errors || f.Kind == Lost) && (f.For <= 0 || f.For > countedFor) {
				// Unbounded, they wait through kills and partitions and
				// then hold the engines down for as long as their probes
				// take to use them up.
				t.Errorf("%v: %v is not bounded in time", d, f)
			}
		}
		for _, k := range []Kind{Kill, Partition, Lost, Webhook, Latency, Resets, Errors, SinkRestart, Flush, Saturate, NamespaceDelete} {
			if !kinds[k] {
				t.Errorf("%v: no %s in the schedule", d, k)
			}
		}
	}
}

// TestOverCounted: a server event that counts one occurrence more than the
// soak recorded of its object and reason is flagged, though the balance of
// Stats (whose slack is the incarnation's drops) would let it pass.
func TestOverCounted(t *testing.T) {
	recorded := map[string]int64{occurrenceKey("ns", "pod", "R"): 3, occurrenceKey("ns", "pod", "S"): 1}
	if p := overCounted("s0.0", map[string]int64{occurrenceKey("ns", "pod", "R"): 3, occurrenceKey("ns", "pod", "S"): 1}, recorded); len(p) != 0 {
		t.Errorf("counts as recorded: %v", p)
	}
	if p := overCounted("s0.0", map[string]int64{occurrenceKey("ns", "pod", "R"): 2}, recorded); len(p) != 0 {
		t.Errorf("counts below what was recorded (drops): %v", p)
	}
	p := overCounted("s0.0", map[string]int64{occurrenceKey("ns", "pod", "R"): 4, occurrenceKey("ns", "other", "R"): 1}, recorded)
	if len(p) != 2 || !strings.Contains(p[0], "1 too many") || !strings.Contains(p[1], "1 too many") {
		t.Errorf("overCounted = %v, want two problems of 1 too many", p)
	}
}

package record_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// TestNewBroadcasterWithCorrelatorOptions: client-go's shorthand applies its
// options to the correlator of every sink. A spam burst of one lets the
// first of two events about one object, type and reason through and filters
// the second; the default burst (25) lets both through.
func TestNewBroadcasterWithCorrelatorOptions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		eb       record.EventBroadcaster
		stored   int
		filtered int64
	}{
		{"burst of one", record.NewBroadcasterWithCorrelatorOptions(record.CorrelatorOptions{BurstSize: 1, QPS: -1}), 1, 1},
		{"defaults", record.NewBroadcasterWithCorrelatorOptions(record.CorrelatorOptions{}), 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer tc.eb.Shutdown()
			s := sinktest.New()
			tc.eb.StartRecordingToSink(s)
			rec := tc.eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: "c"})
			rec.Event(pod("ns", "p"), v1.EventTypeNormal, "R", "first")
			rec.Event(pod("ns", "p"), v1.EventTypeNormal, "R", "second")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := tc.eb.Flush(ctx); err != nil {
				t.Fatalf("Flush: %v", err)
			}
			if got, st := len(s.Events()), tc.eb.Stats(); got != tc.stored || st.Filtered != tc.filtered {
				t.Errorf("stored %d, filtered %d; want %d, %d (stats %+v)", got, st.Filtered, tc.stored, tc.filtered, st)
			}
		})
	}
}

func wrapperEvent(now time.Time, reason, message string) *v1.Event {
	return &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("p.%x", now.UnixNano()), Namespace: "ns"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p", UID: "uid-p", APIVersion: "v1"},
		Source:         v1.EventSource{Component: "c"},
		Type:           v1.EventTypeNormal,
		Reason:         reason,
		Message:        message,
		FirstTimestamp: metav1.NewTime(now),
		LastTimestamp:  metav1.NewTime(now),
		Count:          1,
	}
}

// TestNewEventAggregatorArguments: record's NewEventAggregator passes each
// argument to its place: maxEvents distinct messages combine, within
// maxIntervalInSeconds of each other, and only then.
func TestNewEventAggregatorArguments(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC))
	agg := record.NewEventAggregator(100, record.EventAggregatorByReasonFunc, record.EventAggregatorByReasonMessageFunc, 2, 60, clk)
	if got, _ := agg.EventAggregate(wrapperEvent(clk.Now(), "R", "m1")); got.Message != "m1" {
		t.Fatalf("first event: message %q, want m1", got.Message)
	}
	// 61 s later the window (60 s) has passed: the count starts again.
	clk.SetTime(clk.Now().Add(61 * time.Second))
	if got, _ := agg.EventAggregate(wrapperEvent(clk.Now(), "R", "m2")); got.Message != "m2" {
		t.Fatalf("second event past the window: message %q, want m2 (not combined)", got.Message)
	}
	// Within the window, the second distinct message (maxEvents 2) combines.
	clk.SetTime(clk.Now().Add(59 * time.Second))
	want := record.EventAggregatorByReasonMessageFunc(wrapperEvent(clk.Now(), "R", "m3"))
	if got, _ := agg.EventAggregate(wrapperEvent(clk.Now(), "R", "m3")); got.Message != want {
		t.Fatalf("third event within the window: message %q, want %q", got.Message, want)
	}
}

// TestNewEventSourceObjectSpamFilterArguments: record's
// NewEventSourceObjectSpamFilter passes each argument to its place: a burst
// of 2 tokens, refilled at 1 a second, with a cache of one key (a second key
// evicts the first, whose bucket starts full again).
func TestNewEventSourceObjectSpamFilterArguments(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC))
	f := record.NewEventSourceObjectSpamFilter(1, 2, 1, clk, nil)
	ev := wrapperEvent(clk.Now(), "R", "m")
	// filtered returns what Filter says of ev, n times in a row.
	filtered := func(n int) (out []bool) {
		for range n {
			out = append(out, f.Filter(ev))
		}
		return out
	}
	if got := filtered(3); !slices.Equal(got, []bool{false, false, true}) {
		t.Fatalf("a burst of 2: filtered %v, want the first two passed and the third filtered", got)
	}
	clk.SetTime(clk.Now().Add(time.Second))
	if got := filtered(2); !slices.Equal(got, []bool{false, true}) {
		t.Fatalf("a refill of 1/s: filtered %v a second later, want one more passed", got)
	}
	if f.Filter(wrapperEvent(clk.Now(), "Other", "m")) {
		t.Fatal("another key's first event is filtered")
	}
	if got := filtered(3); !slices.Equal(got, []bool{false, false, true}) {
		t.Fatalf("a cache of one key: filtered %v; the first key, evicted by the other, starts with a full burst again", got)
	}
}

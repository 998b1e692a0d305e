package correlator

import (
	"fmt"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	testclock "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/internal/eventname"
)

// t0 is the start time of the fake clocks: a whole second, so patches show
// the same seconds the steps advance by.
var t0 = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

// newEvent builds an event like client-go's recorder does: name
// <object>.<hex now>, count 1, both timestamps now.
func newEvent(now time.Time, object, reason, message string) *v1.Event {
	t := metav1.NewTime(now)
	return &v1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      object + "." + strconv.FormatInt(now.UnixNano(), 16),
			Namespace: "ns",
		},
		InvolvedObject: v1.ObjectReference{
			Kind:       "Pod",
			Namespace:  "ns",
			Name:       object,
			UID:        types.UID("uid-" + object),
			APIVersion: "v1",
		},
		Reason:         reason,
		Message:        message,
		Source:         v1.EventSource{Component: "ctrl", Host: "node-1"},
		FirstTimestamp: t,
		LastTimestamp:  t,
		Count:          1,
		Type:           v1.EventTypeNormal,
	}
}

// step is one occurrence: after advancing the clock, the event
// (object, reason, message) is correlated and the result checked.
type step struct {
	advance                 time.Duration
	object, reason, message string

	skip       bool
	aggregated bool
	count      int32  // expected count, unless skip
	name       string // expected name prefix (object + "." if empty); "=" + name for an exact name
	patch      string // expected patch; "" means none
	wantMsg    string // expected message if not the input's
}

// run correlates the steps in order, checking each result.
func run(t *testing.T, c *EventCorrelator, clk *testclock.FakeClock, steps []step) []*EventCorrelateResult {
	t.Helper()
	var out []*EventCorrelateResult
	for i, s := range steps {
		clk.Step(s.advance)
		now := clk.Now()
		ev := newEvent(now, s.object, s.reason, s.message)
		res, err := c.EventCorrelate(ev)
		if err != nil {
			t.Fatalf("step %d: EventCorrelate: %v", i, err)
		}
		out = append(out, res)
		if res.Skip != s.skip {
			t.Errorf("step %d: Skip = %v, want %v", i, res.Skip, s.skip)
		}
		if res.Aggregated != s.aggregated {
			t.Errorf("step %d: Aggregated = %v, want %v", i, res.Aggregated, s.aggregated)
		}
		if res.Key == "" {
			t.Errorf("step %d: empty Key", i)
		}
		if res.Skip {
			if res.Event != nil || res.Patch != nil {
				t.Errorf("step %d: skipped result has Event %v, Patch %q", i, res.Event, res.Patch)
			}
			continue
		}
		got := res.Event
		if got.Count != s.count {
			t.Errorf("step %d: Count = %d, want %d", i, got.Count, s.count)
		}
		switch {
		case strings.HasPrefix(s.name, "="):
			if got.Name != s.name[1:] {
				t.Errorf("step %d: Name = %q, want %q", i, got.Name, s.name[1:])
			}
		default:
			prefix := s.name
			if prefix == "" {
				prefix = s.object + "."
			}
			if !strings.HasPrefix(got.Name, prefix) {
				t.Errorf("step %d: Name = %q, want prefix %q", i, got.Name, prefix)
			}
		}
		wantMsg := s.message
		if s.wantMsg != "" {
			wantMsg = s.wantMsg
		}
		if got.Message != wantMsg {
			t.Errorf("step %d: Message = %q, want %q", i, got.Message, wantMsg)
		}
		if !got.LastTimestamp.Time.Equal(now) {
			t.Errorf("step %d: LastTimestamp = %v, want %v", i, got.LastTimestamp, now)
		}
		if string(res.Patch) != s.patch {
			t.Errorf("step %d: Patch = %s, want %s", i, res.Patch, s.patch)
		}
	}
	return out
}

// patchAt is the patch for count, a last timestamp at t0+d and message.
func patchAt(count int, d time.Duration, message string) string {
	return fmt.Sprintf(`{"count":%d,"lastTimestamp":%q,"message":%q}`, count, t0.Add(d).UTC().Format(time.RFC3339), message)
}

func newTest(opts CorrelatorOptions) (*EventCorrelator, *testclock.FakeClock) {
	clk := testclock.NewFakeClock(t0)
	opts.Clock = clk
	return NewEventCorrelatorWithOptions(opts), clk
}

func TestRepeatedEventCounts(t *testing.T) {
	c, clk := newTest(CorrelatorOptions{})
	steps := []step{
		{object: "a", reason: "R", message: "m", count: 1},
		{advance: time.Second, object: "a", reason: "R", message: "m", count: 2, patch: patchAt(2, time.Second, "m")},
		{advance: time.Second, object: "b", reason: "R", message: "m", count: 1},
		{advance: time.Second, object: "a", reason: "R", message: "m", count: 3, patch: patchAt(3, 3*time.Second, "m")},
		{advance: time.Second, object: "a", reason: "R", message: "other", count: 1},
		{advance: time.Second, object: "a", reason: "R2", message: "m", count: 1},
	}
	res := run(t, c, clk, steps)
	// Repeats keep the first occurrence's name and first timestamp.
	if res[1].Event.Name != res[0].Event.Name || res[3].Event.Name != res[0].Event.Name {
		t.Errorf("names %q %q %q, want all the first one", res[0].Event.Name, res[1].Event.Name, res[3].Event.Name)
	}
	if !res[3].Event.FirstTimestamp.Equal(&res[0].Event.FirstTimestamp) {
		t.Errorf("FirstTimestamp = %v, want %v", res[3].Event.FirstTimestamp, res[0].Event.FirstTimestamp)
	}
	if res[0].Key != res[1].Key || res[0].Key == res[2].Key || res[0].Key == res[4].Key {
		t.Errorf("keys: %q %q %q %q", res[0].Key, res[1].Key, res[2].Key, res[4].Key)
	}
}

func TestSpamFilter(t *testing.T) {
	var steps []step
	for i := 1; i <= 25; i++ {
		s := step{object: "a", reason: "R", message: "m", count: int32(i)}
		if i > 1 {
			s.patch = patchAt(i, 0, "m")
		}
		steps = append(steps, s)
	}
	// The bucket is empty: skipped, but counted.
	for i := 26; i <= 30; i++ {
		steps = append(steps, step{object: "a", reason: "R", message: "m", skip: true})
	}
	// Almost a token: still skipped.
	steps = append(steps, step{advance: 299 * time.Second, object: "a", reason: "R", message: "m", skip: true})
	// One token after 300 s: the written event carries every skipped count.
	steps = append(steps,
		step{advance: time.Second, object: "a", reason: "R", message: "m", count: 32, patch: patchAt(32, 300*time.Second, "m")},
		step{object: "a", reason: "R", message: "m", skip: true},
		// Another object has its own bucket.
		step{object: "b", reason: "R", message: "m", count: 1},
	)
	c, clk := newTest(CorrelatorOptions{})
	run(t, c, clk, steps)
	st := c.Stats()
	if st.Correlated != uint64(len(steps)) || st.Filtered != 7 || st.Aggregated != 0 {
		t.Errorf("Stats = %+v, want Correlated %d, Filtered 7, Aggregated 0", st, len(steps))
	}
}

// Difference: herald's spam key includes the reason; SpamKeyWithoutReason
// restores client-go's, where reasons share one bucket.
func TestSpamKeyReason(t *testing.T) {
	burst := func(reason string, skip bool) []step {
		var s []step
		for i := 1; i <= 3; i++ {
			st := step{object: "a", reason: reason, message: "m", count: int32(i), skip: skip}
			if i > 1 && !skip {
				st.patch = patchAt(i, 0, "m")
			}
			s = append(s, st)
		}
		return s
	}
	t.Run("default", func(t *testing.T) {
		c, clk := newTest(CorrelatorOptions{BurstSize: 3})
		run(t, c, clk, append(burst("Noisy", false), append(burst("Noisy", true)[:1], burst("Important", false)...)...))
	})
	t.Run("SpamKeyWithoutReason", func(t *testing.T) {
		c, clk := newTest(CorrelatorOptions{BurstSize: 3, SpamKeyWithoutReason: true})
		run(t, c, clk, append(burst("Noisy", false), burst("Important", true)...))
	})
	t.Run("custom key wins", func(t *testing.T) {
		var seen []*v1.Event
		c, clk := newTest(CorrelatorOptions{BurstSize: 3, SpamKeyFunc: func(ev *v1.Event) string {
			seen = append(seen, ev)
			return "one bucket"
		}})
		steps := burst("Noisy", false)
		steps = append(steps, step{object: "other", reason: "X", message: "m", skip: true})
		run(t, c, clk, steps)
		// The custom function sees the observed event, as in client-go.
		if len(seen) != 4 || seen[2].Count != 3 || seen[2].Name != seen[0].Name {
			t.Errorf("spam key func saw %d events, want 4 with the observed counts", len(seen))
		}
	})
}

func TestAggregation(t *testing.T) {
	var steps []step
	for i := 1; i <= 9; i++ {
		steps = append(steps, step{advance: time.Second, object: "a", reason: "R", message: fmt.Sprint("m", i), count: 1})
	}
	steps = append(steps,
		// The 10th distinct message is combined into a new event.
		// Its name is <object>.<hex stamp>, the stamp at least the time
		// (checked below).
		step{advance: time.Second, object: "a", reason: "R", message: "m10", aggregated: true, count: 1,
			wantMsg: aggregateMessagePrefix + "m10"},
		// Later new messages update the combined event.
		step{advance: time.Second, object: "a", reason: "R", message: "m11", aggregated: true, count: 2,
			wantMsg: aggregateMessagePrefix + "m11", patch: patchAt(2, 11*time.Second, aggregateMessagePrefix+"m11")},
		// The most recent messages are still in the set: not combined.
		step{advance: time.Second, object: "a", reason: "R", message: "m11", count: 1},
		step{advance: time.Second, object: "a", reason: "R", message: "m9", count: 2, patch: patchAt(2, 13*time.Second, "m9")},
		// Other reasons are other groups.
		step{advance: time.Second, object: "a", reason: "Other", message: "m12", count: 1},
		// A new message, then one that left the set (m1 was least recently seen).
		step{advance: time.Second, object: "a", reason: "R", message: "m13", aggregated: true, count: 3,
			wantMsg: aggregateMessagePrefix + "m13", patch: patchAt(3, 15*time.Second, aggregateMessagePrefix+"m13")},
		step{advance: time.Second, object: "a", reason: "R", message: "m1", aggregated: true, count: 4,
			wantMsg: aggregateMessagePrefix + "m1", patch: patchAt(4, 16*time.Second, aggregateMessagePrefix+"m1")},
		// 601 s later the window has passed: a fresh set.
		step{advance: 601 * time.Second, object: "a", reason: "R", message: "m14", count: 1},
	)
	c, clk := newTest(CorrelatorOptions{})
	res := run(t, c, clk, steps)
	agg := res[9].Event
	checkStampedName(t, agg.Name, "a", t0.Add(10*time.Second))
	if res[10].Event.Name != agg.Name {
		t.Errorf("combined event renamed from %q to %q", agg.Name, res[10].Event.Name)
	}
	if agg.Namespace != "ns" || agg.Reason != "R" || agg.Type != v1.EventTypeNormal || agg.Source.Component != "ctrl" ||
		agg.InvolvedObject.Name != "a" || agg.Annotations != nil || agg.ReportingController != "" || agg.ReportingInstance != "" {
		t.Errorf("combined event = %+v", agg)
	}
	if !agg.FirstTimestamp.Time.Equal(t0.Add(10*time.Second)) || !res[10].Event.FirstTimestamp.Time.Equal(t0.Add(10*time.Second)) {
		t.Errorf("combined event FirstTimestamp = %v, then %v", agg.FirstTimestamp, res[10].Event.FirstTimestamp)
	}
	if res[9].Key != res[10].Key || res[9].Key == res[11].Key {
		t.Errorf("keys %q %q %q", res[9].Key, res[10].Key, res[11].Key)
	}
	if st := c.Stats(); st.Aggregated != 4 || st.Filtered != 0 {
		t.Errorf("Stats = %+v, want 4 aggregated", st)
	}
}

// Difference: client-go removes an arbitrary message from a full set, so
// whether a repeated message is combined depends on map order. Here the
// least recently seen one leaves: every run gives the same results.
func TestAggregationDeterministic(t *testing.T) {
	var want []bool
	for run := 0; run < 20; run++ {
		c, clk := newTest(CorrelatorOptions{DisableSpamFilter: true})
		var got []bool
		for i := 0; i < 40; i++ {
			clk.Step(time.Second)
			msg := fmt.Sprint("m", i%13)
			res, err := c.EventCorrelate(newEvent(clk.Now(), "a", "R", msg))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, res.Aggregated)
		}
		if run == 0 {
			want = got
		} else if !reflect.DeepEqual(got, want) {
			t.Fatalf("run %d: aggregated = %v, run 0: %v", run, got, want)
		}
	}
	// Cycling through 13 messages: every message has left the set by the time it
	// comes back, so everything from the 10th on is combined.
	for i, a := range want {
		if a != (i >= 9) {
			t.Errorf("occurrence %d: aggregated = %v", i, a)
		}
	}
}

// Difference: stages can be switched off.
func TestDisable(t *testing.T) {
	t.Run("aggregation", func(t *testing.T) {
		c, clk := newTest(CorrelatorOptions{DisableAggregation: true})
		var steps []step
		for i := 0; i < 20; i++ {
			steps = append(steps, step{object: "a", reason: "R", message: fmt.Sprint("m", i), count: 1})
		}
		steps = append(steps, step{object: "a", reason: "R", message: "m0", count: 2, patch: patchAt(2, 0, "m0")})
		run(t, c, clk, steps)
		if st := c.Stats(); st.AggregateEntries != 0 || st.Aggregated != 0 {
			t.Errorf("Stats = %+v", st)
		}
	})
	t.Run("spam filter", func(t *testing.T) {
		c, clk := newTest(CorrelatorOptions{DisableSpamFilter: true})
		var steps []step
		for i := 1; i <= 100; i++ {
			s := step{object: "a", reason: "R", message: "m", count: int32(i)}
			if i > 1 {
				s.patch = patchAt(i, 0, "m")
			}
			steps = append(steps, s)
		}
		run(t, c, clk, steps)
		if st := c.Stats(); st.SpamEntries != 0 || st.Filtered != 0 || st.Correlated != 100 {
			t.Errorf("Stats = %+v", st)
		}
	})
	t.Run("both", func(t *testing.T) {
		c, clk := newTest(CorrelatorOptions{DisableSpamFilter: true, DisableAggregation: true})
		var steps []step
		for i := 0; i < 50; i++ {
			steps = append(steps, step{object: "a", reason: "R", message: fmt.Sprint("m", i), count: 1})
		}
		run(t, c, clk, steps)
	})
}

// Difference: client-go concatenates key fields, so these two events share
// a key there and the second is counted as a repeat of the first.
func TestKeysDoNotCollide(t *testing.T) {
	c, clk := newTest(CorrelatorOptions{})
	a := newEvent(clk.Now(), "a", "R", "m")
	a.Source = v1.EventSource{Component: "ab", Host: "c"}
	b := newEvent(clk.Now(), "a", "R", "m")
	b.Source = v1.EventSource{Component: "a", Host: "bc"}
	ra, _ := c.EventCorrelate(a)
	rb, _ := c.EventCorrelate(b)
	if ra.Key == rb.Key || rb.Event.Count != 1 || rb.Patch != nil {
		t.Errorf("second event: key %q (first %q), count %d, patch %s; want a new event", rb.Key, ra.Key, rb.Event.Count, rb.Patch)
	}
	// Reason "R" + message "x" versus reason "Rx" + empty message.
	d1 := newEvent(clk.Now(), "d", "R", "x")
	d2 := newEvent(clk.Now(), "d", "Rx", "")
	r1, _ := c.EventCorrelate(d1)
	r2, _ := c.EventCorrelate(d2)
	if r1.Key == r2.Key || r2.Event.Count != 1 {
		t.Errorf("reason/message split collided: %q %q", r1.Key, r2.Key)
	}
	for _, f := range []func(*v1.Event) string{defaultSpamKey, spamKeyWithoutReason, func(ev *v1.Event) string { k, _ := EventAggregatorByReasonFunc(ev); return k }} {
		if f(a) == f(b) {
			t.Errorf("key %q shared by different sources", f(a))
		}
	}
}

// Difference: custom key functions are used as-is.
func TestCustomKeyFunc(t *testing.T) {
	c, clk := newTest(CorrelatorOptions{
		MaxEvents:   2,
		KeyFunc:     func(ev *v1.Event) (string, string) { return "all", ev.Reason },
		MessageFunc: func(ev *v1.Event) string { return "combined " + ev.Reason },
	})
	run(t, c, clk, []step{
		{object: "a", reason: "R1", message: "m", count: 1},
		{object: "b", reason: "R2", message: "m", aggregated: true, count: 1, name: "b.", wantMsg: "combined R2"},
		{object: "c", reason: "R3", message: "m", aggregated: true, count: 2, name: "b.", wantMsg: "combined R3", patch: patchAt(2, 0, "combined R3")},
	})
}

// Difference: cache sizes are honoured and evictions counted.
func TestCacheSizeAndEvictions(t *testing.T) {
	c, clk := newTest(CorrelatorOptions{LRUCacheSize: 2})
	run(t, c, clk, []step{
		{object: "a", reason: "R", message: "m", count: 1},
		{object: "b", reason: "R", message: "m", count: 1},
		{object: "a", reason: "R", message: "m", count: 2, patch: patchAt(2, 0, "m")},
		{object: "c", reason: "R", message: "m", count: 1}, // evicts b
		{object: "b", reason: "R", message: "m", count: 1}, // forgotten: new event; evicts a
		{object: "a", reason: "R", message: "m", count: 1},
	})
	st := c.Stats()
	want := Stats{Correlated: 6, AggregateEvictions: 3, ObserveEvictions: 3, SpamEvictions: 3, AggregateEntries: 2, ObserveEntries: 2, SpamEntries: 2}
	if st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
	for _, size := range []int{0, -1} {
		c := NewEventCorrelatorWithOptions(CorrelatorOptions{LRUCacheSize: size})
		if c.obs.MaxEntries != defaultLRUCacheSize || c.agg.cache.MaxEntries != defaultLRUCacheSize || c.spam.cache.MaxEntries != defaultLRUCacheSize {
			t.Errorf("LRUCacheSize %d: sizes %d %d %d", size, c.obs.MaxEntries, c.agg.cache.MaxEntries, c.spam.cache.MaxEntries)
		}
	}
	if a := NewEventAggregator(0, nil, nil, 0, 0, nil); a.core.cache.MaxEntries != defaultLRUCacheSize {
		t.Errorf("NewEventAggregator(0): size %d", a.core.cache.MaxEntries)
	}
	if f := NewEventSourceObjectSpamFilter(0, 0, 0, nil, nil); f.core.cache.MaxEntries != defaultLRUCacheSize || f.core.burst != defaultBurstSize {
		t.Errorf("NewEventSourceObjectSpamFilter(0): size %d burst %d", f.core.cache.MaxEntries, f.core.burst)
	}
}

// Difference: UpdateState never lowers a count.
func TestUpdateState(t *testing.T) {
	c, clk := newTest(CorrelatorOptions{})
	var results []*EventCorrelateResult
	for i := 0; i < 3; i++ {
		res, _ := c.EventCorrelate(newEvent(clk.Now(), "a", "R", "m"))
		results = append(results, res)
	}
	// The server answers the first write (count 1) after the third occurrence.
	server := results[0].Event.DeepCopy()
	server.ResourceVersion = "42"
	server.Name = "server-name"
	c.UpdateState(server)
	res, _ := c.EventCorrelate(newEvent(clk.Now(), "a", "R", "m"))
	if res.Event.Count != 4 || res.Event.ResourceVersion != "42" || res.Event.Name != "server-name" {
		t.Errorf("after UpdateState(count 1): count %d, rv %q, name %q; want 4, 42, server-name", res.Event.Count, res.Event.ResourceVersion, res.Event.Name)
	}
	// A larger count from the server wins.
	server.Count = 10
	server.ResourceVersion = "43"
	c.UpdateState(server)
	res, _ = c.EventCorrelate(newEvent(clk.Now(), "a", "R", "m"))
	if res.Event.Count != 11 || res.Event.ResourceVersion != "43" {
		t.Errorf("after UpdateState(count 10): count %d, rv %q; want 11, 43", res.Event.Count, res.Event.ResourceVersion)
	}
	// An unknown key is added.
	other := newEvent(clk.Now(), "b", "R", "m")
	other.Count = 7
	other.ResourceVersion = "9"
	c.UpdateState(other)
	res, _ = c.EventCorrelate(newEvent(clk.Now(), "b", "R", "m"))
	if res.Event.Count != 8 || res.Event.ResourceVersion != "9" || res.Event.Name != other.Name {
		t.Errorf("after UpdateState(new key): count %d, rv %q; want 8, 9", res.Event.Count, res.Event.ResourceVersion)
	}
	c.UpdateState(nil) // ignored
}

func TestNilEvent(t *testing.T) {
	c := NewEventCorrelator(testclock.NewFakeClock(t0))
	if res, err := c.EventCorrelate(nil); err == nil || res != nil {
		t.Errorf("EventCorrelate(nil) = %v, %v; want nil, error", res, err)
	}
	if st := c.Stats(); st.Correlated != 0 {
		t.Errorf("nil event counted: %+v", st)
	}
}

func TestArgumentNotMutated(t *testing.T) {
	c, clk := newTest(CorrelatorOptions{MaxEvents: 2, BurstSize: 3})
	for i := 0; i < 8; i++ {
		ev := newEvent(clk.Now(), "a", "R", fmt.Sprint("m", i%3))
		ev.Annotations = map[string]string{"k": "v"}
		ev.ReportingController = "rc"
		want := ev.DeepCopy()
		res, err := c.EventCorrelate(ev)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ev, want) {
			t.Fatalf("occurrence %d: argument changed:\n got %+v\nwant %+v", i, ev, want)
		}
		if res.Event == ev {
			t.Fatalf("occurrence %d: result is the argument", i)
		}
		if res.Event != nil {
			res.Event.Name = "changed"
			res.Event.Count = 99
			if ev.Name == "changed" || ev.Count == 99 {
				t.Fatalf("occurrence %d: result aliases the argument", i)
			}
		}
	}
}

// Difference: no patch is built for a skipped repeat, but its count is kept.
func TestSkipBuildsNoPatch(t *testing.T) {
	c, clk := newTest(CorrelatorOptions{BurstSize: 1})
	run(t, c, clk, []step{
		{object: "a", reason: "R", message: "m", count: 1},
		{object: "a", reason: "R", message: "m", skip: true},
		{object: "a", reason: "R", message: "m", skip: true},
		{advance: 300 * time.Second, object: "a", reason: "R", message: "m", count: 4, patch: patchAt(4, 300*time.Second, "m")},
	})
	if raceEnabled {
		return // the race detector changes allocation counts
	}
	// A skipped repeat allocates its keys and a small result; a written one
	// also its event and patch.
	ev := newEvent(clk.Now(), "a", "R", "m")
	skipped := bytesPerRun(t, func() {
		if res, _ := c.EventCorrelate(ev); !res.Skip {
			t.Fatal("not skipped")
		}
	})
	c2, _ := newTest(CorrelatorOptions{BurstSize: 1 << 30})
	if _, err := c2.EventCorrelate(ev); err != nil {
		t.Fatal(err)
	}
	written := bytesPerRun(t, func() {
		if res, _ := c2.EventCorrelate(ev); res.Patch == nil {
			t.Fatal("no patch")
		}
	})
	if skipped+int(unsafe.Sizeof(v1.Event{})) > written {
		t.Errorf("bytes allocated: skipped repeat %d, written repeat %d; a skipped repeat should build no event and no patch", skipped, written)
	}
}

// bytesPerRun returns the bytes f allocates per call, averaged over 100 calls.
func bytesPerRun(t *testing.T, f func()) int {
	t.Helper()
	const runs = 100
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < runs; i++ {
		f()
	}
	runtime.ReadMemStats(&after)
	return int(after.TotalAlloc-before.TotalAlloc) / runs
}

func TestCorrelateAt(t *testing.T) {
	c := NewEventCorrelatorWithOptions(CorrelatorOptions{BurstSize: 1})
	ev := newEvent(t0, "a", "R", "m")
	if res, _ := c.correlateAt(t0, ev); res.Skip {
		t.Fatal("first skipped")
	}
	if res, _ := c.correlateAt(t0.Add(299*time.Second), ev); !res.Skip {
		t.Fatal("second not skipped")
	}
	res, _ := c.correlateAt(t0.Add(600*time.Second), ev)
	if res.Skip || res.Event.Count != 3 {
		t.Fatalf("third: %+v", res)
	}
}

func TestStandaloneStages(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	f := NewEventSourceObjectSpamFilter(10, 2, 1, clk, nil)
	ev := newEvent(t0, "a", "R", "m")
	// Three calls in a row (one expression would make staticcheck see
	// identical operands): the third is over the burst.
	first, second, third := f.Filter(ev), f.Filter(ev), f.Filter(ev)
	if first || second || !third {
		t.Errorf("burst of 2 not enforced: filtered %t, %t, %t", first, second, third)
	}
	clk.Step(time.Second)
	if f.Filter(ev) || !f.Filter(ev) {
		t.Error("refill of 1/s not applied")
	}
	other := newEvent(t0, "a", "Other", "m")
	if f.Filter(other) {
		t.Error("another reason shares the bucket")
	}

	a := NewEventAggregator(10, EventAggregatorByReasonFunc, EventAggregatorByReasonMessageFunc, 2, 600, clk)
	e1 := newEvent(clk.Now(), "a", "R", "m1")
	got, key := a.EventAggregate(e1)
	if got != e1 || key == "" {
		t.Errorf("first: %v %q", got, key)
	}
	got, key2 := a.EventAggregate(newEvent(clk.Now(), "a", "R", "m2"))
	if got.Message != aggregateMessagePrefix+"m2" || got.Count != 1 || key2 == key {
		t.Errorf("second: %+v %q", got, key2)
	}
	checkStampedName(t, got.Name, "a", clk.Now())
}

// Difference: the engine records a combined event's state under its group's
// key, so it neither adds a stray cache entry nor loses the resource version.
func TestUpdateStateForKeyCombined(t *testing.T) {
	c, clk := newTest(CorrelatorOptions{DisableSpamFilter: true})
	var last *EventCorrelateResult
	for i := 0; i < defaultMaxEvents; i++ {
		last, _ = c.EventCorrelate(newEvent(clk.Now(), "a", "R", fmt.Sprint("message ", i)))
	}
	if !last.Aggregated {
		t.Fatal("10th distinct message was not combined")
	}
	entries := c.Stats().ObserveEntries
	server := last.Event.DeepCopy()
	server.ResourceVersion = "77"
	c.updateStateForKey(last.Key, server)
	if got := c.Stats().ObserveEntries; got != entries {
		t.Fatalf("observe entries %d -> %d: a stray entry was added", entries, got)
	}
	next, _ := c.EventCorrelate(newEvent(clk.Now(), "a", "R", "message 99"))
	if !next.Aggregated || next.Key != last.Key || next.Event.ResourceVersion != "77" || next.Event.Count != 2 {
		t.Fatalf("next combined occurrence: aggregated %v, rv %q, count %d", next.Aggregated, next.Event.ResourceVersion, next.Event.Count)
	}
}

// checkStampedName checks that name is <object>.<hex stamp> with a stamp at
// or after now: combined events take their stamps from the process-wide
// strictly increasing source (internal/eventname), which other tests of
// the process have advanced, so the stamp is client-go's <hex now> only if
// no name was made at or after now before.
func checkStampedName(t *testing.T, name, object string, now time.Time) {
	t.Helper()
	hex, ok := strings.CutPrefix(name, object+".")
	stamp, err := strconv.ParseInt(hex, 16, 64)
	if !ok || err != nil || stamp < now.UnixNano() {
		t.Errorf("name %q, want %s.<hex stamp at or after %x>", name, object, now.UnixNano())
	}
}

// Contract 7 for combined events: a valid name, unique even when the
// clock stands still (the triggering events were named by the recorder at
// the same instant), and a message within MessageLimit, cut after the
// prefix is added.
func TestCombinedEventValidity(t *testing.T) {
	for _, object := range []string{"My_Pod", "system:controller:x", strings.Repeat("x", 250), "web-0"} {
		c := NewEventCorrelator(testclock.NewFakeClock(t0)) // frozen
		names := map[string]bool{}
		long := strings.Repeat("€", 341) // 1,023 bytes
		var combined *v1.Event
		for i := range 10 {
			ev := newEvent(t0, object, "R", fmt.Sprintf("%d%s", i, long))
			ev.Name = eventname.New(object, t0) // as herald's recorder names it
			names[ev.Name] = true
			res, err := c.EventCorrelate(ev)
			if err != nil {
				t.Fatal(err)
			}
			if res.Aggregated {
				combined = res.Event
			}
		}
		if combined == nil {
			t.Fatalf("%s: no combined event", object)
		}
		if errs := validation.IsDNS1123Subdomain(combined.Name); len(errs) > 0 {
			t.Errorf("%s: combined event name %q: %v", object, combined.Name, errs)
		}
		if names[combined.Name] {
			t.Errorf("%s: combined event takes the name %q of an event of its own", object, combined.Name)
		}
		if len(combined.Message) > defaultMessageLimit || !utf8.ValidString(combined.Message) ||
			!strings.HasPrefix(combined.Message, aggregateMessagePrefix+"9€") {
			t.Errorf("%s: combined message of %d bytes, valid UTF-8 %v", object, len(combined.Message), utf8.ValidString(combined.Message))
		}
	}
}

func TestCombinedMessageLimitOption(t *testing.T) {
	for _, tc := range []struct {
		limit, want int
	}{{0, defaultMessageLimit}, {-1, defaultMessageLimit}, {40, 40}, {1 << 20, len(aggregateMessagePrefix) + 2000}} {
		clk := testclock.NewFakeClock(t0)
		c := NewWithMessageLimit(CorrelatorOptions{MaxEvents: 2, Clock: clk}, tc.limit)
		var res *EventCorrelateResult
		for i := range 2 {
			res, _ = c.EventCorrelate(newEvent(clk.Now(), "a", "R", strings.Repeat(fmt.Sprint(i), 2000)))
		}
		if !res.Aggregated || len(res.Event.Message) != tc.want {
			t.Errorf("MessageLimit %d: aggregated %v, message of %d bytes, want %d", tc.limit, res.Aggregated, len(res.Event.Message), tc.want)
		}
	}
}

// UpdateStateForWrite does not bring back a key the correlator forgot:
// the writer may still hold a later state of the event with a higher count
// than the answer's, so the next occurrence starts a new event (issue 28).
func TestUpdateStateForWriteAfterEviction(t *testing.T) {
	c, clk := newTest(CorrelatorOptions{LRUCacheSize: 1})
	first, _ := c.EventCorrelate(newEvent(clk.Now(), "a", "R", "m"))
	second, _ := c.EventCorrelate(newEvent(clk.Now(), "a", "R", "m")) // count 2, waiting in the writer
	c.EventCorrelate(newEvent(clk.Now(), "b", "R", "m"))              // evicts a
	c.UpdateStateForWrite(first.Key, first.Event.Name, first.Event.DeepCopy())
	clk.Step(time.Second)
	res, _ := c.EventCorrelate(newEvent(clk.Now(), "a", "R", "m"))
	if res.Patch != nil || res.Event.Name == second.Event.Name || res.Event.Count != 1 {
		t.Fatalf("the answer brought back a forgotten key: name %q count %d patch %q; want a new event of count 1",
			res.Event.Name, res.Event.Count, res.Patch)
	}
}

// UpdateStateForWrite ignores the answer for an event the key no longer
// follows (forgotten and started anew while its write was under way), and
// takes the answer for the event it follows, a renamed one included.
func TestUpdateStateForWrite(t *testing.T) {
	c, clk := newTest(CorrelatorOptions{LRUCacheSize: 1})
	first, _ := c.EventCorrelate(newEvent(clk.Now(), "a", "R", "m"))
	c.EventCorrelate(newEvent(clk.Now(), "b", "R", "m")) // evicts a
	clk.Step(time.Second)                                // the new event gets a name of its own
	second, _ := c.EventCorrelate(newEvent(clk.Now(), "a", "R", "m"))
	if second.Patch != nil || second.Event.Name == first.Event.Name {
		t.Fatalf("after eviction a new event is expected: %+v", second.Event)
	}
	again, _ := c.EventCorrelate(newEvent(clk.Now(), "a", "R", "m")) // count 2 of the new event
	// The first write's answer arrives now: the key follows the new event.
	answer := first.Event.DeepCopy()
	answer.ResourceVersion = "7"
	c.UpdateStateForWrite(first.Key, first.Event.Name, answer)
	res, _ := c.EventCorrelate(newEvent(clk.Now(), "a", "R", "m"))
	if res.Event.Name != second.Event.Name || res.Event.Count != again.Event.Count+1 {
		t.Fatalf("a stale answer changed the state: name %q count %d, want %q %d", res.Event.Name, res.Event.Count, second.Event.Name, again.Event.Count+1)
	}
	// The answer for the followed event is taken, the server's name too.
	answer = res.Event.DeepCopy()
	answer.Name, answer.ResourceVersion = "server-name", "8"
	c.UpdateStateForWrite(res.Key, res.Event.Name, answer)
	res2, _ := c.EventCorrelate(newEvent(clk.Now(), "a", "R", "m"))
	if res2.Event.Name != "server-name" || res2.Event.ResourceVersion != "8" || res2.Event.Count != res.Event.Count+1 {
		t.Fatalf("answer not taken: %+v", res2.Event)
	}
}

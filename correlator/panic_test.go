package correlator

import (
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	testclock "k8s.io/utils/clock/testing"
)

// Contract 10: a panic in a function of the options is an error wrapping
// ErrPanicked, not a crash, and the correlator goes on as if the occurrence
// had never been passed to it: the panicking correlator and a reference
// that never saw those occurrences give the same results and Stats.

// panicOnce wraps the default functions; each panics the first time its
// trigger matches the event.
type panicOnce struct {
	key, message, spam func(*v1.Event) bool
}

func (p *panicOnce) options(o CorrelatorOptions) CorrelatorOptions {
	once := func(trigger *func(*v1.Event) bool, ev *v1.Event, name string) {
		if *trigger != nil && (*trigger)(ev) {
			*trigger = nil
			panic(name + " failed on " + ev.Message)
		}
	}
	o.KeyFunc = func(ev *v1.Event) (string, string) {
		once(&p.key, ev, "key")
		return EventAggregatorByReasonFunc(ev)
	}
	o.MessageFunc = func(ev *v1.Event) string {
		once(&p.message, ev, "message")
		return EventAggregatorByReasonMessageFunc(ev)
	}
	o.SpamKeyFunc = func(ev *v1.Event) string {
		once(&p.spam, ev, "spam")
		return defaultSpamKey(ev)
	}
	return o
}

func TestPanicInOptionFunction(t *testing.T) {
	msg := func(m string) func(*v1.Event) bool { return func(ev *v1.Event) bool { return ev.Message == m } }
	cases := []struct {
		name     string
		funcName string
		p        panicOnce
		messages []string
		panicAt  int // index of the occurrence that panics
	}{
		// A first occurrence, and a repeat (its count is given back).
		{"KeyFunc", "KeyFunc", panicOnce{key: msg("b")}, []string{"a", "a", "b", "b", "a"}, 2},
		{"SpamKeyFunc on a new event", "SpamKeyFunc", panicOnce{spam: msg("b")}, []string{"a", "b", "b", "a"}, 1},
		{"SpamKeyFunc on a repeat", "SpamKeyFunc", panicOnce{spam: func(ev *v1.Event) bool { return ev.Count == 3 }},
			[]string{"a", "a", "a", "a", "a"}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := CorrelatorOptions{MaxEvents: 3, BurstSize: 100}
			clk := testclock.NewFakeClock(t0)
			c := NewEventCorrelatorWithOptions(tc.p.options(base))
			ref := NewEventCorrelatorWithOptions((&panicOnce{}).options(base))
			for i, m := range tc.messages {
				ev := newEvent(clk.Now(), "obj", "R", m)
				got, err := c.correlateAt(clk.Now(), ev)
				if i == tc.panicAt {
					if !errors.Is(err, ErrPanicked) || !strings.Contains(err.Error(), tc.funcName) || got != nil {
						t.Fatalf("occurrence %d: result %v, error %v; want an ErrPanicked naming %s", i, got, err, tc.funcName)
					}
					continue
				}
				want, werr := ref.correlateAt(clk.Now(), ev.DeepCopy())
				if err != nil || werr != nil {
					t.Fatalf("occurrence %d: errors %v, reference %v", i, err, werr)
				}
				sameResult(t, i, got, want)
			}
			if got, want := c.Stats(), ref.Stats(); got != want {
				t.Errorf("Stats %+v, reference %+v", got, want)
			}
		})
	}
}

// A MessageFunc runs after the aggregation stage, which keeps the
// message among the group's distinct ones, and before the observation: the
// combined event's count does not include the panicked occurrence.
func TestPanicInMessageFunc(t *testing.T) {
	p := panicOnce{message: func(ev *v1.Event) bool { return ev.Message == "m3" }}
	clk := testclock.NewFakeClock(t0)
	c := NewEventCorrelatorWithOptions(p.options(CorrelatorOptions{MaxEvents: 3}))
	wantCount := map[string]int32{"m0": 1, "m1": 1, "m2": 1, "m4": 2, "m5": 3}
	for _, m := range []string{"m0", "m1", "m2", "m3", "m4", "m5"} {
		res, err := c.correlateAt(clk.Now(), newEvent(clk.Now(), "obj", "R", m))
		if m == "m3" {
			if !errors.Is(err, ErrPanicked) || !strings.Contains(err.Error(), "MessageFunc") || !strings.Contains(err.Error(), "message failed on m3") {
				t.Fatalf("%s: %v, %v; want an ErrPanicked naming MessageFunc", m, res, err)
			}
			continue
		}
		if err != nil || res.Skip || res.Event.Count != wantCount[m] || res.Aggregated != (m >= "m2") {
			t.Fatalf("%s: %+v, %v; want count %d", m, res, err, wantCount[m])
		}
	}
	if st := c.Stats(); st.Correlated != 5 || st.Aggregated != 3 {
		t.Errorf("Stats %+v; want 5 correlated, 3 aggregated", st)
	}
}

// sameResult compares two results, combined event names aside (each
// combined event has a unique name).
func sameResult(t *testing.T, i int, got, want *EventCorrelateResult) {
	t.Helper()
	if got.Skip != want.Skip || got.Aggregated != want.Aggregated || string(got.Patch) != string(want.Patch) {
		t.Fatalf("occurrence %d: skip %v aggregated %v patch %s; reference %v %v %s", i, got.Skip, got.Aggregated, got.Patch, want.Skip, want.Aggregated, want.Patch)
	}
	if got.Skip {
		return
	}
	g, w := *got.Event, *want.Event
	if got.Aggregated {
		g.Name, w.Name = "", ""
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("occurrence %d: event\n%+v\nreference\n%+v", i, g, w)
	}
}

// A trace a panicking SpamKeyFunc leaves, as documented: it runs after
// aggregation (it sees the event as written), so its occurrence's message
// counts among the group's distinct messages, and the next distinct
// message reaches MaxEvents one occurrence sooner than for a correlator
// that never saw it.
func TestPanickingSpamKeyFuncCountsAmongDistinctMessages(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	c := NewEventCorrelatorWithOptions(CorrelatorOptions{
		Clock: clk, MaxEvents: 3, BurstSize: 100,
		SpamKeyFunc: func(ev *v1.Event) string {
			if ev.Message == "b" {
				panic("boom")
			}
			return defaultSpamKey(ev)
		},
	})
	for _, m := range []string{"a", "b", "c"} {
		res, err := c.EventCorrelate(newEvent(clk.Now(), "obj", "R", m))
		if m == "b" {
			if !errors.Is(err, ErrPanicked) {
				t.Fatalf("b: %v, want ErrPanicked", err)
			}
			continue
		}
		if err != nil || res.Aggregated != (m == "c") {
			t.Fatalf("%s: %+v, %v; want Aggregated %v", m, res, err, m == "c")
		}
	}
}

// Two occurrences of a new key correlated at once, the first held in a
// custom SpamKeyFunc (which runs without the lock): the second counts on
// the first's observation (count 2, a patch of its event), as client-go's
// does; it does not create a second event for the key.
func TestConcurrentFirstOccurrencesWithASpamKeyFunc(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var held atomic.Bool
	c := NewEventCorrelatorWithOptions(CorrelatorOptions{BurstSize: 100, SpamKeyFunc: func(ev *v1.Event) string {
		if held.CompareAndSwap(false, true) {
			close(entered)
			<-release
		}
		return defaultSpamKey(ev)
	}})
	done := make(chan *EventCorrelateResult)
	go func() {
		r, err := c.correlateAt(t0, newEvent(t0, "obj", "R", "m"))
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	<-entered
	second, err := c.correlateAt(t0.Add(time.Second), newEvent(t0.Add(time.Second), "obj", "R", "m"))
	close(release)
	first := <-done
	if err != nil || first == nil {
		t.Fatal(err)
	}
	if first.Patch != nil || first.Event.Count != 1 {
		t.Errorf("first: count %d, patch %q; want a new event, count 1", first.Event.Count, first.Patch)
	}
	if second.Patch == nil || second.Event.Count != 2 || second.Event.Name != first.Event.Name {
		t.Errorf("second occurrence of the key: %s count %d, patch %v; want a patch of %s, count 2", second.Event.Name, second.Event.Count, second.Patch != nil, first.Event.Name)
	}
}

package correlator

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	testclock "k8s.io/utils/clock/testing"
)

// BenchmarkEventCorrelate compares herald's correlator with client-go's on
// the same inputs:
//
//   - new: distinct events (more than the cache holds, so each is a miss);
//   - repeated: the same event again and again, each written with a patch
//     (a burst large enough that the spam filter lets every one through);
//   - repeated-skipped: the same event with the default burst, so almost
//     every occurrence is counted and skipped;
//   - aggregated: distinct messages about one object, so every occurrence
//     after the 10th is folded into the combined event and patched.
func BenchmarkEventCorrelate(b *testing.B) {
	type correlate func(*v1.Event) bool // reports Skip
	impls := []struct {
		name string
		make func(burst int) correlate
	}{
		{"herald", func(burst int) correlate {
			c := NewEventCorrelatorWithOptions(CorrelatorOptions{Clock: testclock.NewFakeClock(t0), BurstSize: burst})
			return func(ev *v1.Event) bool {
				res, err := c.EventCorrelate(ev)
				if err != nil {
					b.Fatal(err)
				}
				return res.Skip
			}
		}},
		{"client-go", func(burst int) correlate {
			c := record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: testclock.NewFakeClock(t0), BurstSize: burst})
			return func(ev *v1.Event) bool {
				res, err := c.EventCorrelate(ev)
				if err != nil {
					b.Fatal(err)
				}
				return res.Skip
			}
		}},
	}
	const distinct = 2 * defaultLRUCacheSize
	newEvents := func() []*v1.Event {
		evs := make([]*v1.Event, distinct)
		for i := range evs {
			evs[i] = newEvent(t0, fmt.Sprint("pod-", i), "Started", "Started container app")
		}
		return evs
	}
	aggEvents := func() []*v1.Event {
		evs := make([]*v1.Event, distinct)
		for i := range evs {
			evs[i] = newEvent(t0, "pod-0", "BackOff", fmt.Sprintf("Back-off restarting failed container app-%d", i))
		}
		return evs
	}
	repeated := func() []*v1.Event {
		return []*v1.Event{newEvent(t0, "pod-0", "Started", "Started container app")}
	}
	const unlimited = 1 << 30
	cases := []struct {
		name   string
		burst  int
		events func() []*v1.Event
	}{
		{"new", unlimited, newEvents},
		{"repeated", unlimited, repeated},
		{"repeated-skipped", 0, repeated},
		{"aggregated", unlimited, aggEvents},
	}
	for _, impl := range impls {
		for _, cs := range cases {
			b.Run(fmt.Sprintf("impl=%s/case=%s", impl.name, cs.name), func(b *testing.B) {
				events := cs.events()
				c := impl.make(cs.burst)
				// Warm up: the first occurrences of "repeated" and the first
				// ten messages of "aggregated" are not what is measured.
				for i := 0; i < 30 && i < len(events); i++ {
					c(events[i])
				}
				c(events[0])
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					c(events[i%len(events)])
					i++
				}
			})
		}
	}
}

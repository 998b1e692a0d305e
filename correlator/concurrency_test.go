package correlator

import (
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	testclock "k8s.io/utils/clock/testing"
)

// TestConcurrentUse runs every method from several goroutines; with -race
// it checks the locking. The counters must add up.
func TestConcurrentUse(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	c := NewEventCorrelatorWithOptions(CorrelatorOptions{Clock: clk, LRUCacheSize: 16, MaxEvents: 3, BurstSize: 5})
	custom := NewEventCorrelatorWithOptions(CorrelatorOptions{Clock: clk, SpamKeyFunc: func(ev *v1.Event) string { return ev.Reason }})
	agg := NewEventAggregator(8, nil, nil, 3, 600, clk)
	spam := NewEventSourceObjectSpamFilter(8, 5, 1, clk, nil)
	const goroutines, perG = 4, 300
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perG; i++ {
				ev := newEvent(clk.Now(), fmt.Sprint("obj-", i%7), fmt.Sprint("R", i%2), fmt.Sprint("m", (i+g)%5))
				for _, cc := range []*EventCorrelator{c, custom} {
					res, err := cc.EventCorrelate(ev)
					if err != nil {
						t.Error(err)
						return
					}
					if !res.Skip && i%3 == 0 {
						cc.UpdateState(res.Event.DeepCopy())
					}
				}
				agg.EventAggregate(ev)
				spam.Filter(ev)
				if i%50 == 0 {
					_ = c.Stats()
					clk.Step(time.Second)
				}
			}
		}()
	}
	wg.Wait()
	st := c.Stats()
	if st.Correlated != goroutines*perG || st.Filtered+st.Aggregated > st.Correlated {
		t.Errorf("Stats = %+v", st)
	}
	if st.ObserveEntries > 16 || st.AggregateEntries > 16 || st.SpamEntries > 16 {
		t.Errorf("caches over their size: %+v", st)
	}
}

package ratelog

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestAllow(t *testing.T) {
	l := New(2)
	t0 := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		slot int
		at   time.Duration
		want bool
	}{
		{0, 0, true},            // first line of a slot is loud
		{0, time.Second, false}, // within the interval
		{1, time.Second, true},  // slots are independent
		{0, Interval, true},     // interval passed
		{0, Interval + time.Second, false},
		{2, 0, false}, // out of range
		{-1, 0, false},
	}
	for i, s := range steps {
		if got := l.Allow(s.slot, t0.Add(s.at)); got != s.want {
			t.Errorf("step %d: Allow(%d, +%v) = %v, want %v", i, s.slot, s.at, got, s.want)
		}
	}
}

func TestAllowOnceUnderContention(t *testing.T) {
	l := New(1)
	now := time.Now()
	var loud atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if l.Allow(0, now) {
				loud.Add(1)
			}
		})
	}
	wg.Wait()
	if loud.Load() != 1 {
		t.Fatalf("%d loud lines at one instant, want 1", loud.Load())
	}
}

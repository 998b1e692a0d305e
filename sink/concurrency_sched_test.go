package sink

import (
	"fmt"
	"testing"
	"time"
)

// warmed returns a scheduler with opts whose engine has written n events
// one at a time, each answered rtt after it was sent: the usual round trip
// is rtt and the window of writes under way is full. It returns the
// instant after the last answer.
func warmed(t *testing.T, opts Options, n int, rtt time.Duration) (*sched, time.Time) {
	t.Helper()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, opts, now)
	for i := range n {
		s.add(fmt.Sprint("warm", i), schedItem(fmt.Sprint("w", i), now), now)
		tk, _ := s.next(now)
		if tk == nil {
			t.Fatalf("warm-up write %d held back", i)
		}
		now = now.Add(rtt)
		s.finish(tk, testResult(outWritten, 0, false), now)
		now = now.Add(20 * time.Millisecond) // well within the rate
	}
	return s, now
}

// underWay adds n ready keys and dispatches writes at now until none goes,
// returning them.
func underWay(t *testing.T, s *sched, n int, now time.Time) []*task {
	t.Helper()
	for i := range n {
		s.add(fmt.Sprint("k", i), schedItem(fmt.Sprint("e", i), now), now)
	}
	var tasks []*task
	for {
		tk, _ := s.next(now)
		if tk == nil {
			break
		}
		tasks = append(tasks, tk)
	}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	return tasks
}

// The writes under way are what the rate needs at tolerance times the
// usual round trip, at least one, at most Workers: at 50 writes/s and 3 ms
// one (it carries 333 writes/s), at 50 ms all four workers (10 would be
// needed). With no write limit, or the adaptive rate off, the workers.
func TestSchedWritesUnderWayFollowTheRate(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		rtt  time.Duration
		want int
	}{
		{"defaults, 3 ms", Options{}, 3 * time.Millisecond, 1},
		{"defaults, 50 ms", Options{}, 50 * time.Millisecond, defaultWorkers},
		{"200 writes/s, 3 ms", Options{QPS: 200, Burst: 100}, 3 * time.Millisecond, 2},
		{"no write limit, 3 ms", Options{QPS: Unlimited}, 3 * time.Millisecond, defaultWorkers},
		{"adaptive rate off, 3 ms", Options{DisableAdaptiveRate: true}, 3 * time.Millisecond, defaultWorkers},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, now := warmed(t, tc.opts, 10, tc.rtt)
			if got := len(underWay(t, s, 10, now)); got != tc.want {
				t.Fatalf("%d writes under way, want %d (concurrency %v, window %d)", got, tc.want, s.pace.concurrency(), s.window)
			}
		})
	}
}

// A write under way that is not answered (a webhook slow in one namespace,
// a request that never answers) holds the others back a round at most,
// and once a write sent after it is answered, no longer than tolerance
// times the recent round trip.
func TestSchedStragglerHoldsNoOneBack(t *testing.T) {
	s, now := warmed(t, Options{}, 10, 3*time.Millisecond)
	slow := underWay(t, s, 3, now)
	if len(slow) != 1 {
		t.Fatalf("%d writes under way, want 1", len(slow))
	}
	tk, wake := s.next(now.Add(round - time.Millisecond))
	if tk != nil || !wake.Equal(now.Add(round)) {
		t.Fatalf("a write went %v before the first was under way a round; wake at %v, want %v", tk != nil, wake, now.Add(round))
	}
	now = now.Add(round)
	second, _ := s.next(now)
	if second == nil {
		t.Fatal("a write under way a round still holds the others back")
	}
	s.finish(second, testResult(outWritten, 0, false), now.Add(3*time.Millisecond))
	// The first is overtaken (a write sent after it is answered) and has
	// been under way past tolerance times the recent round trip: it
	// counts no more.
	now = now.Add(3 * time.Millisecond)
	third, _ := s.next(now)
	if third == nil {
		t.Fatal("an overtaken write still holds the others back")
	}
	if len(s.busy) != 2 {
		t.Fatalf("%d writes under way, want 2", len(s.busy))
	}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
}

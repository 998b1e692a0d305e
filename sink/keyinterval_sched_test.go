package sink

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func newTestSched(t *testing.T, o Options, now time.Time) *sched {
	t.Helper()
	o, err := o.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return newSched(o, rand.New(rand.NewPCG(1, 2)), now)
}

func schedItem(name string, now time.Time) *item {
	return &item{ev: &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}, create: true, n: 1, since: now}
}

// With KeyInterval 2s, a key written at t0 whose event gets 50 more states
// within a second is written once more, at t0+2s and not earlier, carrying
// the 50; another key is not delayed.
func TestSchedKeyIntervalDelaysOnlyItsKey(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, WithKeyInterval(Options{QPS: Unlimited}, 2*time.Second), t0)
	s.add("hot", schedItem("e", t0), t0)
	first, _ := s.next(t0)
	if first == nil {
		t.Fatal("first write not dispatched at once")
	}
	s.finish(first, testResult(outWritten, 0, false), t0.Add(10*time.Millisecond))
	for i := 1; i <= 50; i++ {
		now := t0.Add(time.Duration(i) * 20 * time.Millisecond)
		s.add("hot", schedItem("e", now), now)
		if tk, _ := s.next(now); tk != nil {
			t.Fatalf("state %d written at %v, inside the interval", i, now.Sub(t0))
		}
	}
	if s.pendingEvents != 50 || s.delayed() != 50 || s.pendingWrites != 1 || s.heldBack {
		t.Fatalf("pending %d delayed %d writes %d heldBack %v", s.pendingEvents, s.delayed(), s.pendingWrites, s.heldBack)
	}

	// Another key is written at once.
	at := t0.Add(1500 * time.Millisecond)
	s.add("cold", schedItem("c", at), at)
	other, wake := s.next(at)
	if other == nil || other.en.key != "cold" {
		t.Fatalf("another key was delayed: %+v", other)
	}
	s.finish(other, testResult(outWritten, 0, false), at)
	if tk, wake2 := s.next(at); tk != nil || !wake2.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("next after the other key: %v, wake at %v (before: %v)", tk, wake2.Sub(t0), wake.Sub(t0))
	}

	if tk, _ := s.next(t0.Add(2*time.Second - time.Nanosecond)); tk != nil {
		t.Fatal("written before the interval passed")
	}
	second, _ := s.next(t0.Add(2 * time.Second))
	if second == nil || second.en.key != "hot" || second.it.n != 50 || !second.sentAt.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("second write %+v", second)
	}
	if tk, _ := s.next(t0.Add(2 * time.Second)); tk != nil {
		t.Fatalf("a third write: %+v", tk)
	}
	if s.pendingEvents != 0 || s.delayed() != 0 || s.pendingWrites != 0 {
		t.Fatalf("pending %d delayed %d writes %d", s.pendingEvents, s.delayed(), s.pendingWrites)
	}
}

// A retry after a server-wide failure is not delayed by the interval; the
// interval applies after the retry succeeds.
func TestSchedKeyIntervalNotForRetries(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, WithKeyInterval(Options{QPS: Unlimited, BaseDelay: time.Second, MaxDelay: time.Second}, time.Hour), t0)
	s.add("k", schedItem("e", t0), t0)
	tk, _ := s.next(t0)
	s.finish(tk, testResult(outFailed, 0, false), t0)
	now := t0.Add(time.Second) // past the probe's backoff, well inside the interval
	probe, _ := s.next(now)
	if probe == nil || !probe.probe {
		t.Fatalf("retry not sent after the backoff: %+v", probe)
	}
	s.finish(probe, testResult(outWritten, 0, false), now)
	s.add("k", schedItem("e", now), now)
	if tk, wake := s.next(now); tk != nil || !wake.Equal(now.Add(time.Hour)) {
		t.Fatalf("after the successful retry: %+v, wake %v", tk, wake)
	}
}

// Keys written once are forgotten once their interval has passed and the
// scheduler runs: the engine does not grow with the number of keys seen.
func TestSchedKeyIntervalForgetsKeys(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, WithKeyInterval(Options{QPS: Unlimited, Workers: 1, MaxPending: 1 << 30}, time.Second), t0)
	const n = 100000
	for i := range n {
		now := t0.Add(time.Duration(i) * time.Microsecond)
		s.add(fmt.Sprint("k", i), schedItem("e", now), now)
		tk, _ := s.next(now)
		if tk == nil {
			t.Fatalf("key %d not dispatched", i)
		}
		s.finish(tk, testResult(outWritten, 0, false), now)
	}
	if len(s.entries) != n || len(s.timed) != n {
		t.Fatalf("within the interval: %d entries, %d later; want %d", len(s.entries), len(s.timed), n)
	}
	// At t0+1s only the first key's interval has passed.
	tk, wake := s.next(t0.Add(time.Second))
	if tk != nil || len(s.entries) != n-1 {
		t.Fatalf("at t0+1s: %+v, %d entries", tk, len(s.entries))
	}
	if !wake.After(t0.Add(time.Second)) {
		t.Fatalf("wake %v", wake.Sub(t0))
	}
	s.next(t0.Add(2 * time.Second))
	if len(s.entries) != 0 || len(s.timed) != 0 || len(s.ready) != 0 {
		t.Fatalf("after the interval: %d entries, %d later, %d ready", len(s.entries), len(s.timed), len(s.ready))
	}
}

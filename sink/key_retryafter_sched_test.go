package sink

import (
	"math/rand/v2"
	"testing"
	"time"
)

// A key failing alone (here a 500 with Retry-After, while the server
// answers the others) backs off for the Retry-After the server gave,
// capped at MaxDelay, not for its own backoff (the package documentation:
// "BaseDelay·2^n up to MaxDelay, or the Retry-After").
func TestSchedKeyFailureHonoursRetryAfter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		ra, want time.Duration
	}{
		{1500 * time.Millisecond, 1500 * time.Millisecond},
		{10 * time.Second, 2 * time.Second}, // capped at MaxDelay
	} {
		s := newTestSched(t, Options{QPS: Unlimited, BaseDelay: 100 * time.Millisecond, MaxDelay: 2 * time.Second}, t0)
		s.add("warm", schedItem("w", t0), t0)
		writeOK(t, s, t0)
		now := t0.Add(10 * time.Millisecond)
		s.add("k", schedItem("k", now), now)
		// Another key's write answered while k's is under way: k's 500 is its own.
		tk, _ := s.next(now)
		if tk == nil || tk.en.key != "k" {
			t.Fatalf("dispatched %+v, want k", tk)
		}
		s.add("other", schedItem("o", now), now)
		writeOK(t, s, now.Add(time.Millisecond))
		end := now.Add(2 * time.Millisecond)
		if v := s.finish(tk, result{out: outFailed, fault: faultStatus, retryAfter: c.ra}, end); v != vRetry {
			t.Fatalf("verdict %v, want a retry", v)
		}
		en := s.entries["k"]
		if en.state != stBackoff || s.health.down {
			t.Fatalf("RA %v: state %v, down %v; want k backing off alone", c.ra, en.state, s.health.down)
		}
		if got := en.readyAt.Sub(end); got != c.want {
			t.Errorf("Retry-After %v: k retries %v after its failure, want %v", c.ra, got, c.want)
		}
		if err := s.check(); err != nil {
			t.Fatal(err)
		}
	}
}

// A server seen down that said when to come back (a Retry-After) is probed
// then, and a little later at random (up to raJitter of it), capped at
// MaxDelay; not at the engine's own backoff.
func TestHealthProbesAtTheServersRetryAfter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ ra, least time.Duration }{
		{1500 * time.Millisecond, 1500 * time.Millisecond},
		{10 * time.Second, 2 * time.Second}, // capped at MaxDelay
	} {
		for range 20 {
			var h health
			h.fail(t0, t0, false, true, c.ra, 0, 1, 100*time.Millisecond, 2*time.Second, rnd)
			if d := h.probeAt.Sub(t0); d < c.least || d > c.least+time.Duration(raJitter*float64(c.least)) {
				t.Fatalf("Retry-After %v: probe %v after the failure, want within [%v, %v]", c.ra, d, c.least, c.least+time.Duration(raJitter*float64(c.least)))
			}
		}
	}
}

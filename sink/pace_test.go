package sink

import (
	"testing"
	"time"
)

// Reading the rate (Stats) does not change the pacer: a pacer read every
// few milliseconds paces exactly like one that is never read.
func TestPacerReadDoesNotChangeIt(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var read, quiet pacer
	read.init(20, 20, true, t0)
	quiet.init(20, 20, true, t0)
	for _, p := range []*pacer{&read, &quiet} {
		p.success(t0)
		p.overload(t0, t0) // cut: the rate now grows while writes wait
	}
	for ms := 0; ms < 20000; ms += 7 {
		now := t0.Add(time.Duration(ms) * time.Millisecond)
		read.current(now.Add(-3 * time.Millisecond)) // an observer in between
		a, b := read.take(now), quiet.take(now)
		if a != b || read.rate != quiet.rate || read.tokens != quiet.tokens {
			t.Fatalf("at %d ms: read pacer waits %v rate %v tokens %v, unread %v %v %v", ms, a, read.rate, read.tokens, b, quiet.rate, quiet.tokens)
		}
	}
}

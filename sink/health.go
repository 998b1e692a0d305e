// The shared view of the API server (health) and the backoff of probes and
// of failing keys.

package sink

import (
	"math/rand/v2"
	"time"
)

// health is the shared view of the API server: up, or down with one probe
// at a time after an exponential backoff.
type health struct {
	down       bool
	probing    bool      // the probe is under way
	probeAt    time.Time // when the next probe may go
	failures   int       // consecutive escalations of the backoff
	since      time.Time // when the server was last seen failing (the last escalation)
	probes     int64     // probes sent
	overloaded bool      // down for a 429 (the server shed everything), not an outage
}

// raJitter is the most, as a fraction of the Retry-After, that an engine
// adds to it before its probe, for events just recorded; events that have
// waited longer add less (see fail).
const raJitter = 0.5

// fail records a server-wide failure of a request sent at sentAt. The
// backoff grows only with failures that tell something new: the probe's, or
// the first one, or one of a request sent after the last escalation; the
// others are requests that were under way when the server went down.
//
// overload tells a 429; age is how long the oldest of the engine's waiting
// events has waited.
func (h *health) fail(now, sentAt time.Time, probe, overload bool, retryAfter, age, base, max time.Duration, rnd *rand.Rand) {
	if h.down && !probe && sentAt.Before(h.since) {
		return
	}
	h.down = true
	h.since = now
	h.overloaded = overload
	var d time.Duration
	if ra := min(retryAfter, max); ra > 0 {
		// The server said when to come back: then, and a little later at
		// random, so that the engines it told the same thing do not all
		// come back in the same instant. The random part is up to
		// raJitter of the Retry-After for new events and shrinks as
		// 1s/(1s+age): engines whose events have waited longest come back
		// first, so that a fleet drains its backlog oldest first. The
		// exponential backoff does not grow: the server is answering,
		// and the adaptive rate deals with its load.
		j := float64(ra) * raJitter * rnd.Float64() * float64(time.Second) / float64(time.Second+age)
		d = ra + time.Duration(j)
	} else {
		h.failures++
		d = backoff(h.failures, base, max, rnd)
	}
	h.probeAt = now.Add(d)
}

func (h *health) up() {
	h.down, h.probing, h.failures = false, false, 0
}

// backoff is base·2^(n-1) capped at max, with jitter in [d/2, d].
func backoff(n int, base, max time.Duration, rnd *rand.Rand) time.Duration {
	d := max
	if n-1 < 32 {
		if x := base << (n - 1); x > 0 && x < max {
			d = x
		}
	}
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + time.Duration(rnd.Int64N(int64(d-half)+1))
}

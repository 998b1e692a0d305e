// The shared view of the API server (health) and the backoff of probes and
// of failing keys.

package sink

import (
	"math"
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
	downAt     time.Time // when the server was seen down, at the first failure of the outage
	probes     int64     // probes sent
	overloaded bool      // down for a 429 (the server shed everything), not an outage
}

// probeWorth is what one probe is worth, in event-seconds of waiting: an
// engine sends a probe sooner than its backoff when the events it holds
// would otherwise wait more than that for the return to be seen (see
// probeSpacing).
const probeWorth = 60

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
// events has waited, and pending how many events wait.
func (h *health) fail(now, sentAt time.Time, probe, overload bool, retryAfter, age time.Duration, pending int64, base, max time.Duration, rnd *rand.Rand) {
	if h.down && !probe && sentAt.Before(h.since) {
		return
	}
	if !h.down {
		h.downAt = now
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
		d = backoff(h.failures, base, min(max, probeSpacing(now.Sub(h.downAt)+base, pending, base)), rnd)
	}
	h.probeAt = now.Add(d)
}

// probeSpacing is the spacing of probes that costs an engine holding
// pending events least, for an outage that has lasted down, and never less
// than least. Probes d apart cost about down/d requests over as much more
// of the outage (what has lasted is the best guess of what is left), and
// make each pending event wait d/2 more on average after the return; with
// a request worth probeWorth event-seconds, their sum
// down/d + pending·d/(2·probeWorth) is least at
// d = √(2·probeWorth·down/pending), the square-root law of checkpoint
// intervals. An engine that holds few events keeps its backoff; one that
// holds many finds the return sooner.
func probeSpacing(down time.Duration, pending int64, least time.Duration) time.Duration {
	if pending <= 0 {
		return time.Duration(math.MaxInt64)
	}
	d := time.Duration(math.Sqrt(2*probeWorth*down.Seconds()/float64(pending)) * float64(time.Second))
	return max(d, least)
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

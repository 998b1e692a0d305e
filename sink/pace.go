package sink

import (
	"math"
	"time"
)

// The adaptive write rate: additive increase, multiplicative decrease on
// overload (429), as TCP does with its window, so that many engines writing
// to one API server converge to its capacity instead of offering a
// multiple of it.
//
// On a 429 the rate is cut to aimdCut times the lower of the current rate
// and the rate of successful writes over the last second or so: the
// successes measure this engine's share of what the server accepts, and
// aimdCut < 1 leaves room for the others. One cut per round: 429s of
// requests sent before the last cut do not cut again (they were sent at the
// old rate). Then the rate grows by aimdAdd + aimdGrow·rate writes/s every
// second until it is back at the configured limit: the additive term is what
// makes a fleet of N engines share the capacity fairly (each adds the same),
// the proportional one brings a lone engine back to a high limit in tens of
// seconds, not hours.
const (
	aimdCut  = 0.7 // multiplicative decrease (TCP CUBIC's β)
	aimdAdd  = 0.5 // writes/s gained per second
	aimdGrow = 0.1 // and this fraction of the rate per second
	// minRate is the floor of the adaptive rate, in writes/s: an engine
	// that is cut again and again still tries one write every two seconds
	// (behind the server's Retry-After, which pauses it anyway).
	minRate = 0.5
	// uncapRate: with no configured limit, a rate grown past this is no
	// limit again.
	uncapRate = 10000
	// successWindow is the time constant of the measured success rate.
	successWindow = time.Second
)

// pacer is the engine's write budget: a token bucket whose rate adapts to
// the server's answers. The zero value is not usable: call init.
type pacer struct {
	adaptive bool
	ceiling  float64 // configured limit in writes/s; +Inf: none
	burst    float64 // configured burst
	rate     float64 // current limit, <= ceiling; +Inf: none
	tokens   float64
	last     time.Time // tokens and rate brought up to date at
	cutAt    time.Time // the last cut
	cuts     int64     // cuts made

	okRate float64       // successes per second, decaying with successWindow
	okAt   time.Time     // okRate measured at
	active time.Duration // time the success rate has been measured (server up)
	paused bool          // the server is seen down: the measure stands still
}

func (p *pacer) init(qps float64, burst int, adaptive bool, now time.Time) {
	p.adaptive = adaptive
	p.ceiling = math.Inf(1)
	if qps > 0 {
		p.ceiling = qps
	}
	p.burst = math.Max(1, float64(burst))
	p.rate = p.ceiling
	p.tokens = p.burst
	p.last, p.okAt = now, now
}

// advance refills the bucket and grows the rate up to now.
func (p *pacer) advance(now time.Time) {
	dt := now.Sub(p.last).Seconds()
	if dt <= 0 {
		return
	}
	p.last = now
	// The rate grows only while it is what holds the writes back (the
	// bucket is empty): an idle engine keeps the rate it has earned, so
	// that a fleet whose engines go quiet and come back at once does not
	// come back at the full configured rate.
	if p.rate < p.ceiling && p.tokens < 1 {
		// dr/dt = add + grow·r, integrated exactly over dt.
		r := (p.rate+aimdAdd/aimdGrow)*math.Exp(aimdGrow*dt) - aimdAdd/aimdGrow
		if r >= p.ceiling || (math.IsInf(p.ceiling, 1) && r >= uncapRate) {
			r = p.ceiling
		}
		p.rate = r
	}
	if !math.IsInf(p.rate, 1) {
		p.tokens = math.Min(p.bucket(), p.tokens+p.rate*dt)
	}
}

// bucket is the burst at the current rate: the configured burst at the
// configured limit, about one second of writes below it.
func (p *pacer) bucket() float64 {
	if p.rate >= p.ceiling {
		return p.burst
	}
	return math.Max(1, math.Min(p.burst, p.rate/2))
}

// take spends a token and returns 0, or returns how long to wait for one.
func (p *pacer) take(now time.Time) time.Duration {
	p.advance(now)
	if math.IsInf(p.rate, 1) {
		return 0
	}
	if p.tokens >= 1 {
		p.tokens--
		return 0
	}
	wait := time.Duration((1 - p.tokens) / p.rate * float64(time.Second))
	return max(wait, time.Millisecond)
}

// success records a successful write.
func (p *pacer) success(now time.Time) {
	p.decay(now)
	p.okRate += 1 / successWindow.Seconds()
}

// decay ages the success rate to now. Only the time the server was seen up
// counts (see pause): a pause for Retry-After or an outage is no evidence
// of a lower share.
func (p *pacer) decay(now time.Time) {
	if p.paused {
		return
	}
	if dt := now.Sub(p.okAt); dt > 0 {
		p.okRate *= math.Exp(-dt.Seconds() / successWindow.Seconds())
		p.active += dt
		p.okAt = now
	}
}

// pause stops the clock of the success rate while the server is seen
// down; resume starts it again.
func (p *pacer) pause(now time.Time) {
	p.decay(now)
	p.paused = true
}

func (p *pacer) resume(now time.Time) {
	if p.paused {
		p.paused = false
		p.okAt = now
	}
}

// measured is the success rate, corrected for a short history (an
// exponential average that started at zero reads low at first).
func (p *pacer) measured() float64 {
	w := 1 - math.Exp(-p.active.Seconds()/successWindow.Seconds())
	if w < 0.1 {
		w = 0.1
	}
	return p.okRate / w
}

// overload records a 429 for a request sent at sentAt.
func (p *pacer) overload(now, sentAt time.Time) {
	if !p.adaptive || sentAt.Before(p.cutAt) {
		return
	}
	p.advance(now)
	p.decay(now)
	r := math.Max(minRate, aimdCut*math.Min(p.rate, p.measured()))
	if r < p.rate {
		p.rate = r
		p.tokens = math.Min(p.tokens, p.bucket())
	}
	p.cutAt = now
	p.cuts++
}

// current returns the rate now (+Inf: no limit) without changing the
// pacer: reading it (Stats) must not split the integration of the bucket
// and the growth, which would change what the engine does.
func (p *pacer) current(now time.Time) float64 {
	q := *p
	q.advance(now)
	return q.rate
}

package sink

import (
	"math"
	"time"
)

// The adaptive write rate (the package doc has the table of the signals it
// reads). Many engines writing to one API server should converge to its
// capacity instead of offering a multiple of it, and drain a shared backlog
// oldest first; a lone engine facing a server that shows no load should get
// its configured rate. The pacer is a token bucket whose rate follows TCP's
// congestion control, with the server's 429 as the loss signal, its
// Retry-After as the round, and a queue seen in the round trips as the
// delay signal (as TCP Vegas and Netflix's Gradient2 read it):
//
//   - Cut. A 429 cuts the rate to aimdCut times the lower of the rate and
//     the engine's measured share (see share), and that becomes the
//     threshold of slow start. One cut per round: a 429 of a request sent
//     before the last cut, or within the Retry-After (at least a second)
//     of it, tells of the same overload and does not cut again. A key
//     refused again does not cut (its own refusals do not decide for the
//     others), unless the server has shed more than 1-aimdCut of the
//     engine's requests over about disturbMemory: past that share one cut
//     cannot bring a fleet back under the server's capacity (see
//     overShed), and the keys refused again are its excess.
//   - Growth. While the rate holds writes back, it grows by
//     aimdAdd·weight^1.5 + aimdGrow·rate writes/s per second, back up to
//     the configured limit. The additive term makes engines share fairly
//     (each adds the same, scaled by its weight); the proportional one
//     brings a lone engine back to a high limit in seconds. The power:
//     under AIMD an engine's share goes as the square root of what it adds
//     (the square-root law of TCP), so weight^1.5 gives shares about as
//     weight^0.75, nearer to its waiting than weight alone (weight^0.5).
//   - Delay. When the least round trip of the last one to two rounds
//     passes tolerance times the usual one, the server is queueing, and
//     the rate is trimmed once a round, never deeper than a cut. Until
//     the server has refused a write (a 429 within disturbMemory), the
//     queue is read by its growth: grown by g seconds a second over the
//     last round past one usual round trip, the rate is trimmed to the
//     share times (1-g)/(1+g), and a queue that stands (or grows more
//     slowly) is not read at all. Once it has, by its level:
//     to the share times tolerance·usual over that round trip (see
//     latency and queueing). A trim is a warning, not a loss: once the
//     queue stops growing (before a 429) or is gone (after one), the rate
//     goes back to where it was before the trims over a round or two, not at
//     the additive pace. A queue at the server (priority and fairness)
//     then slows the engines before it overflows into 429s, but a queue
//     that a fleet keeps without overflowing it (25 controllers with one
//     write under way each and a queue of 40), or the jitter of a loaded
//     machine, costs the fleet little.
//   - Writes under way. While the rate has a limit and the usual round
//     trip is known, the engine keeps no more writes under way than carry
//     the rate at tolerance times the usual round trip, and at least one
//     (Little's law; see concurrency): a server that queues slows the
//     engine's writes with its round trips at once, not a round later,
//     and a fleet whose demand steps up together adds about one write
//     each to the server's queue, not one per worker. A write overtaken
//     by a later one, or under way for a round, no longer counts.
//   - Slow start. An engine that paused for a Retry-After resumes at
//     restartRate·weight and gains slowStep·weight writes/s per success
//     (doubling about every 0.7 s) up to the threshold.
//   - Return from an outage. When the server answers again after an
//     outage (failures other than 429), the engine goes on at its rate and
//     with its burst, so that a lone engine drains its backlog at once.
//     But for returnFor the window of writes under way (see sched) grows
//     by one per windowStep instead of one per success, and the first 429
//     cuts the rate to restartRate·weight and empties the bucket instead
//     of the usual cut: a fleet whose engines come back together then
//     meets about one 429 per engine, not one per write each had under
//     way and per token left, and resumes from a rate that sums to about
//     what the fleet offered before, growing from there.
//   - Restart after idle. An engine that had nothing to write keeps the
//     rate it earned, but within disturbMemory of a 429 or an outage it
//     restarts gently and slow-starts back to that rate: idle for
//     a round or more, at restartRate·weight (as TCP restarts from its
//     initial window after an idle period longer than its retransmission
//     timeout, RFC 5681), idle for less, at the rate halved per round
//     (RFC 2861); its first write goes after a random part of one
//     interval at that rate, never in a burst. A fleet whose engines go
//     quiet and get new events at once (a second wave) then neither comes
//     back at the full rate and burst of each nor sends its first writes
//     in the same instant, and the engines still holding older events
//     (which did not go idle) keep their rate: the old events go first.
//
// Why the regimes on timers stay (the return from an outage and the
// restart after idle): they stand in for a signal the server does not
// give. A token bucket or a per-second window refuses with no latency
// first, and a fleet coming back from an outage learns no usual round trip
// before its own writes fill the server's queue. Turned off, each raises
// the fleet's peak to 1.5-3x the capacity on some model of
// TestFleetSimulation (docs/measurements.md has the figures).
//
// The weight tells how much waiting an engine carries: the sum of the ages
// of its pending events, over waitUnit event-seconds, between minWeight and
// maxWeight. Engines with more and older events waiting grow faster and
// resume higher, so that a fleet serves them first: a fleet drains its
// backlog roughly in age order (new events yield to old ones), and engines
// that came back late from an outage catch up instead of finishing last.
//
// docs/measurements.md has what halving or doubling each constant below
// does to the fleet's targets: with aimdAdd or waitUnit halved or doubled,
// or maxWeight halved, most models miss a target; the others have more
// room.
const (
	// aimdCut is the multiplicative decrease, deeper than TCP CUBIC's 0.7:
	// the share it applies to counts what was sent.
	aimdCut = 0.6
	// aimdAdd is the additive increase, in writes/s per second, times the
	// weight^1.5. It sets the share of a fleet's requests that are
	// refused: an engine whose share is r writes/s meets about one 429 per
	// cut and takes (1-aimdCut)·r/a seconds to regain it, growing by a
	// (aimdAdd·weight^1.5 + aimdGrow·r), so about a/((1-aimdCut)·r²) of its
	// requests are refused. At 0.5 that is a fifth for shares of 3 writes/s
	// (100 controllers on 300 writes/s): the 0.8 writes per request of
	// issue 25. A fleet with larger shares refuses less.
	aimdAdd = 0.5
	// aimdGrow is the proportional increase, a fraction of the rate per
	// second: a lone engine regains a cut in ln(1/aimdCut)/aimdGrow, about
	// 5 s at any rate, where aimdAdd alone would take 40 s at the default
	// 50 writes/s. It adds aimdGrow/((1-aimdCut)·r) to the refused share
	// above (8% at 3 writes/s).
	aimdGrow = 0.1
	// restartRate is the rate after a Retry-After pause or an idle period,
	// in writes/s, times the weight: two writes in the first round, TCP's
	// initial window for large segments (RFC 5681).
	restartRate = 2.0
	// slowStep is what slow start gains per success, in writes/s, times
	// the weight: one per success, as TCP's slow start adds a segment per
	// acknowledgment, so the rate doubles about every 0.7 s (ln 2 rounds).
	slowStep = 1.0
	// waitUnit is the waiting, in event-seconds, of a weight of 1: the 50
	// events a second of the default limit brings, each waiting two
	// rounds. The weights order the engines (each grows as weight^1.5 and
	// takes a share about as weight^0.75), and minWeight to maxWeight spans
	// shares of 1 to 6.4: old events go first, and new ones still get a
	// sixth of an old one's share. But their scale is also the fleet's
	// aggressiveness, which grows by the sum of its engines' growths, and
	// the fleet's targets rest on it: waitUnit halved or doubled misses
	// most of them (docs/measurements.md).
	waitUnit  = 100
	minWeight = 0.25 // an engine whose events are all new
	maxWeight = 3.0
	// minRate is the floor of the adaptive rate, in writes/s: an engine
	// that is cut again and again still tries one write every two seconds.
	minRate = 0.5
	// round is the engine's round, as TCP's: a second, the Retry-After a
	// 429 carries by default. It is the time constant of the measured
	// rates, the least time between two cuts, and the retransmission
	// timeout of the restart after idle, as both RFCs key it: after a
	// disturbance, an engine idle for less than a round restarts at its
	// rate halved per round of idleness (RFC 2861); idle for a round or
	// more, at restartRate·weight (RFC 5681).
	round = time.Second
	// sentShare: the share of an engine is at least this fraction of the
	// rate it sent at (see share).
	sentShare = 0.8
	// disturbMemory is how long the engine remembers what the server
	// showed: an idle engine restarts gently within it of a 429 or a
	// server-wide failure, the delay signal reads a queue by its level
	// within it of a 429 (by its growth otherwise), and the usual round
	// trip follows a rise within it (a queue that lasts minutes is the
	// server's new normal).
	disturbMemory = time.Minute
	// returnFor is how long after the return from an outage the window
	// grows by one per windowStep and a first 429 cuts to restartRate: two
	// rounds, one in which a fleet that comes back together meets its
	// first 429s and one to wait out their Retry-After.
	returnFor = 2 * time.Second
	// windowStep: meanwhile the window reaches the default four workers
	// within 75 ms of the return, so that a lone engine drains its backlog
	// at once, but grows no faster than 40 a second, not by one per
	// success. Halved or quadrupled, it still meets every fleet target.
	windowStep = 25 * time.Millisecond
	// rttTolerance is the least tolerance of the delay signal (see init
	// and latency): a round trip twice the usual one, a wait as long as
	// the service, Gradient2's default tolerance.
	rttTolerance = 2.0
)

// pacer is the engine's write budget. The zero value is not usable: call
// init.
type pacer struct {
	adaptive bool
	ceiling  float64 // configured limit in writes/s; +Inf: none
	burst    float64 // configured burst
	rate     float64 // current limit, <= ceiling; +Inf: none
	tokens   float64
	last     time.Time // tokens and rate brought up to date at
	thresh   float64   // slow start ends here (+Inf: at the ceiling)
	slow     bool      // in slow start
	weight   float64   // set by the scheduler before each use
	cutAt    time.Time // the last cut
	cuts     int64     // cuts made
	// disturbed is when the server last failed or shed load (zero: never).
	disturbed time.Time

	okRate   float64   // successes per second, decaying with round
	sentRate float64   // paced requests per second, the same way
	okAt     time.Time // okRate and sentRate measured at
	lastOK   time.Time // the last success
	paused   bool      // the server is seen down: the measure stands still
	outage   bool      // paused for a server-wide failure other than a 429
	back     time.Time // the server answered again after an outage (zero: never)
	grewAt   time.Time // the window last grew, within returnFor of back

	rtt       queueing  // the delay signal
	tolerance float64   // of the delay signal (see init); +Inf in tests: latency is not read
	trimAt    time.Time // the last trim for the delay signal
	trims     int64     // trims made
	refusedAt time.Time // the last 429 (zero: never)
	tally     shedTally // the share of requests shed, read slowly (see overShed)
	calm      bool      // the delay signal shows no queue, or before a 429 one that does not grow
	untrimmed float64   // the rate before the trims since the last cut (zero: none)
}

func (p *pacer) init(qps float64, burst, workers int, adaptive bool, now time.Time) {
	p.adaptive = adaptive
	p.ceiling = math.Inf(1)
	if qps > 0 {
		p.ceiling = qps
	}
	p.burst = math.Max(1, float64(burst))
	p.rate = p.ceiling
	p.thresh = math.Inf(1)
	p.tokens = p.burst
	p.weight = 1
	// The tolerance of the delay signal is the engine's workers, at
	// least rttTolerance: the most the engine's own writes can stretch a
	// round trip at a server that serves one request at a time, so that
	// a lone engine does not read its own writes as load.
	p.tolerance = math.Max(rttTolerance, float64(workers))
	p.rtt.need = max(1, workers)
	p.last, p.okAt = now, now
}

// weightOf is the weight of an engine whose pending events have waited
// wait event-seconds in all.
func weightOf(wait float64) float64 {
	return math.Max(minWeight, math.Min(maxWeight, wait/waitUnit))
}

// advance refills the bucket and grows the rate up to now.
func (p *pacer) advance(now time.Time) {
	dt := now.Sub(p.last).Seconds()
	if dt <= 0 {
		if dt < 0 {
			// A clock set back (an Options.Clock that is not
			// monotonic): refill from now, not from a time that comes
			// again only after the jump, as x/time/rate does.
			p.last = now
		}
		return
	}
	p.last = now
	// The rate grows only while it is what holds the writes back (the
	// bucket is empty).
	if p.rate < p.ceiling && p.tokens < 1 {
		// dr/dt = add + grow·r, integrated exactly over dt.
		add := aimdAdd * p.weight * math.Sqrt(p.weight)
		r := (p.rate+add/aimdGrow)*math.Exp(aimdGrow*dt) - add/aimdGrow
		if to := p.untrimmedRate(); p.calm && p.rate < to { // back to where the trims found it, with a time constant of a round
			r = math.Max(r, to-(to-p.rate)*math.Exp(-dt/round.Seconds()))
		}
		p.setRate(r)
	}
	if !math.IsInf(p.rate, 1) {
		p.tokens = math.Min(p.bucket(), p.tokens+p.rate*dt)
	}
}

// untrimmedRate is the rate the trims since the last cut found (zero:
// none). No limit is the workers' reach, past which setRate lifts the
// limit again (zero while the usual round trip is not known).
func (p *pacer) untrimmedRate() float64 {
	if !math.IsInf(p.untrimmed, 1) {
		return p.untrimmed
	}
	if r := p.reach(); !math.IsInf(r, 1) {
		return r
	}
	return 0
}

// reach is what the workers (rtt.need) can send at the usual round trip,
// in writes/s (+Inf while it is not known).
func (p *pacer) reach() float64 {
	if p.rtt.usual <= 0 {
		return math.Inf(1)
	}
	return float64(p.rtt.need) / p.rtt.usual
}

// setRate sets the rate to r, capped at the ceiling. With no ceiling, a
// rate past the workers' reach is no limit again: the workers, not the
// rate, hold the writes back there. But not within disturbMemory of a
// 429: a refusal comes back at once, not at the usual round trip, so the
// workers do not hold back what the server refuses, and a rate lifted
// then would leave them free to send refused writes every round trip of a
// refusal.
func (p *pacer) setRate(r float64) {
	if r >= p.ceiling || (math.IsInf(p.ceiling, 1) && !p.refusedWithin(p.last) && r >= p.reach()) {
		r = p.ceiling
	}
	p.rate = r
}

// refusedWithin reports whether the server refused a write (a 429) within
// disturbMemory before now.
func (p *pacer) refusedWithin(now time.Time) bool {
	return !p.refusedAt.IsZero() && now.Sub(p.refusedAt) <= disturbMemory
}

// bucket is the burst at the current rate: the configured burst at the
// configured limit, about half a second of writes below it.
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
		p.sent(now)
		return 0
	}
	if p.tokens >= 1 {
		p.tokens--
		p.sent(now)
		return 0
	}
	s := (1 - p.tokens) / p.rate
	if longest := time.Duration(math.MaxInt64); s >= longest.Seconds() {
		// A QPS so small that the next token is centuries away: converted,
		// the float would overflow (to a negative wait on amd64).
		return longest
	}
	return max(time.Duration(s*float64(time.Second)), time.Millisecond)
}

// refund gives back the token of a request that failed other than with a
// 429: the configured rate bounds the writes the server answers, and a
// write refused for a reason of its own (or lost in an outage, whose probe
// is paced by its backoff) must not take the budget of the others.
func (p *pacer) refund() {
	if !math.IsInf(p.rate, 1) {
		p.tokens = math.Min(p.bucket(), p.tokens+1)
	}
}

// success records a successful write.
func (p *pacer) success(now time.Time) {
	p.lastOK = now
	if p.slow {
		p.advance(now)
		p.setRate(p.rate + slowStep*p.weight)
		if p.rate >= p.thresh {
			p.rate, p.slow = p.thresh, false
		}
	}
	p.decay(now)
	p.okRate += 1 / round.Seconds()
	p.count(now, false)
}

// sent records a request let through. A probe, sent while the server is
// seen down, is not counted: the measure stands still then (see pause).
func (p *pacer) sent(now time.Time) {
	if p.paused {
		return
	}
	p.decay(now)
	p.sentRate += 1 / round.Seconds()
}

// share is the engine's measured share of what the server takes: the rate
// of its successful writes, or sentShare of the rate it sent at if that is
// more. Which of a fleet's requests meet a full server (an empty token
// bucket) is chance, so an engine refused more often than the others
// lately is not cut deeper than they are; cut by its successes alone, the
// unlucky engines of a fleet would drain last.
func (p *pacer) share() float64 {
	return math.Max(p.okRate, sentShare*p.sentRate)
}

// answered reports whether a write succeeded within d before now: the
// server is up and shedding load, not down.
func (p *pacer) answered(now time.Time, d time.Duration) bool {
	return !p.lastOK.IsZero() && now.Sub(p.lastOK) < d
}

// decay ages the measured rates to now. Only the time the server was seen up
// counts (see pause): a pause for Retry-After or an outage is no evidence
// of a lower share.
func (p *pacer) decay(now time.Time) {
	if p.paused {
		return
	}
	if dt := now.Sub(p.okAt); dt > 0 {
		f := math.Exp(-dt.Seconds() / round.Seconds())
		p.okRate *= f
		p.sentRate *= f
		p.okAt = now
	}
}

// latency records the round trip of a write the server stored, sent at
// sentAt: the delay signal (see queueing for what it reads). When the
// least round trip of the last rounds passes tolerance times the usual
// one, the server is queueing, and the rate is trimmed at most once a
// round, never deeper than a 429 cuts (aimdCut of the share): a queue
// tells less than a refusal, since the server still takes every write,
// and a fleet that meets a long queue all at once would otherwise trim to
// a sliver of its share together and leave the server idle for seconds
// (Gradient2 bounds its gradient the same way, at a half). How deep
// depends on what the server has shown:
//
//   - Until it has refused a write (no 429 within disturbMemory), by the
//     queue's growth. A queue that grew by g seconds a second over the
//     last round (queueing.observe) is fed (1+g) times faster than it is
//     served (for a FIFO queue dW/dt = λ/μ − 1), and the rate is trimmed
//     to the share times (1−g)/(1+g): the fleet offers what the server
//     served, less the last round's growth, which drains in a round. A
//     queue that stands (g ≤ 0) is not trimmed for: it is the server
//     busy, which a fleet with a bounded number of writes under way (25
//     controllers with one write each and a queue of 40) keeps without
//     ever overflowing, and trimming for its level idled the seat with no
//     429 to avoid (TestFleetDemandStepIntoAQueue with one worker: 14-19%
//     later, now at most 0.6%). Nor is growth within one usual round trip
//     a round (g counts only past usual/round): that much the least round
//     trip of a round moves with the jitter of a loaded machine alone,
//     and a fleet feeding a queue that slowly (1.005 times what it is
//     served at a usual round trip of 5 ms) takes minutes to fill even a
//     queue of a second. Read from zero, the jitter trimmed a fleet of
//     one-worker engines to the seat's pace exactly, and the seat idled
//     between their arrivals (TestFleetDemandStepIntoAQueue at 800
//     writes/s with jitter: up to 6.5% later than reading 429s only, now
//     at most 2.2%; at 300 writes/s, 3.9%, now 0.6%).
//   - Once it has (a 429 within disturbMemory: its queue overflows), by
//     the queue's level, as Gradient2 reads it: to the share times
//     tolerance·usual over the round trip, a little past the tolerance a
//     little, far past it more. A fleet whose demand exceeds the server
//     for long then keeps its queue short between 429s
//     (TestFleetSlowsOnLatencyBeforeA429: about half as many 429s).
//
// The trim is not a cut: the threshold of slow start follows it down, but
// a 429 after it still cuts, and once the signal is calm again (the queue
// stopped growing, before a 429; gone, after one) the rate returns to
// where it was before the trims since the last cut over a round or two (see
// advance), instead of growing back at the additive pace: a queue that
// formed and stood, or a round of jitter, then does not hold an engine
// below its demand for seconds after it rises (TestFleetDemandStepIntoAQueue
// with jitter and one worker: 14-16% later without it).
func (p *pacer) latency(now, sentAt time.Time) {
	least, usual, grow, ok := p.rtt.observe(now, now.Sub(sentAt).Seconds())
	if !ok || !p.adaptive {
		return
	}
	byGrowth := !p.refusedWithin(now)
	queue := least > p.tolerance*usual
	past := grow - usual/round.Seconds() // the growth past one usual round trip a round
	if calm := !queue || (byGrowth && past <= 0); calm != p.calm {
		p.advance(now)
		p.calm = calm
	}
	if p.calm || (!p.trimAt.IsZero() && now.Sub(p.trimAt) < round) {
		return
	}
	f := p.tolerance * usual / least
	if byGrowth {
		f = (1 - past) / (1 + past)
	}
	p.advance(now)
	p.decay(now)
	if r := math.Max(minRate, p.share()*math.Max(aimdCut, f)); r < p.rate {
		p.untrimmed = math.Max(p.untrimmed, p.rate)
		p.rate = r
		p.tokens = math.Min(p.tokens, p.bucket())
		p.thresh, p.slow = math.Min(p.thresh, p.rate), false
		p.trimAt = now
		p.trims++
	}
}

// concurrency is the most writes under way the rate needs: what carries it
// at the longest round trip the delay signal still calls calm (tolerance
// times the usual one), and at least one. By Little's law n writes under
// way at a round trip of u carry n/u writes/s, so the cap never holds the
// rate back while the server does not queue, and once it queues past the
// tolerance, the engine's writes slow with its round trips at once, not a
// round later as the trims do: an engine keeps about one write in its
// queue, not as many as it has workers. A fleet of engines whose demand
// steps up together then adds one write each to the server's queue, where
// four each overflowed a queue of 40 into 429s (TestFleetDemandStepIntoAQueue).
// +Inf (no cap but Workers and the window) when the rate has no limit (a
// lone engine with no write limit drains its backlog with every worker),
// the usual round trip is not known yet, or the rate does not adapt.
func (p *pacer) concurrency() float64 {
	if !p.adaptive || math.IsInf(p.rate, 1) || math.IsInf(p.tolerance, 1) || p.rtt.usual <= 0 {
		return math.Inf(1)
	}
	return math.Max(1, math.Floor(p.tolerance*p.rate*p.rtt.usual))
}

// straggling is how long a write may be under way and count against
// concurrency once a write sent after it has been answered: tolerance
// times the least round trip of the last rounds. Past it the write is a
// straggler (a webhook slow in one namespace), as TCP's RACK marks a
// segment lost when a later one is acknowledged and a reordering window
// has passed. A write that nothing sent later has overtaken (in a FIFO
// queue, none has) counts for a round, the engine's retransmission
// timeout: a request that never answers holds the others back a round at
// most.
func (p *pacer) straggling() time.Duration {
	return time.Duration(p.tolerance * p.rtt.recent() * float64(time.Second))
}

// queueing reads a queue at the server from the round trips of the
// engine's stored writes. A server that queues the requests it cannot
// serve yet (priority and fairness, a slow etcd) delays every request it
// queues, and shows it in the round trip before it refuses any. The
// signal is the least round trip of the writes answered in the current and
// the previous round (one to two seconds), once they are at least as many
// as the engine's workers: the least, because a queue delays every write,
// while one slow write (a webhook slow in one namespace, a pause of the
// network) among quick ones is not the server's, and the jitter of the
// network shrinks in the least of several (of many: at a few writes a
// second the least of a round is of a few, and jitter alone passes the
// tolerance now and then, the more often the fewer the workers). usual,
// the round trip of the server when it does not queue, is the first
// signal, then follows the signal down within a round and up within
// disturbMemory: about the least of the last minute, which a lasting
// change (a server slower for good) becomes within a few minutes. grow is
// how fast the signal rose, in seconds per second, from its value a round
// or more before (measured once a round): how much faster the queue is
// fed than served.
type queueing struct {
	need        int       // answers the signal needs: the workers
	bucketAt    time.Time // the current round began
	cur, prev   float64   // the least round trip of the current and the previous round, in seconds
	curN, prevN int       // answers in them
	usual       float64   // zero: not yet measured
	usualAt     time.Time
	ref         float64   // the signal a round or more ago
	refAt       time.Time // zero: none yet
	grow        float64   // how fast the signal grew since ref, in seconds per second
}

// observe records a round trip of rtt seconds answered at now, and
// returns the signal and usual, with ok false while the signal lacks
// answers.
func (q *queueing) observe(now time.Time, rtt float64) (least, usual, grow float64, ok bool) {
	if rtt <= 0 {
		return 0, 0, 0, false
	}
	if now.Sub(q.bucketAt) >= round {
		q.prev, q.prevN = q.cur, q.curN
		if now.Sub(q.bucketAt) >= 2*round {
			q.prevN = 0
		}
		q.cur, q.curN, q.bucketAt = rtt, 0, now
	}
	q.cur = math.Min(q.cur, rtt)
	q.curN++
	least = q.recent()
	if q.curN+q.prevN < q.need {
		return 0, 0, 0, false
	}
	if dt := now.Sub(q.refAt); q.refAt.IsZero() || dt >= round {
		if !q.refAt.IsZero() {
			q.grow = (least - q.ref) / dt.Seconds()
		}
		q.ref, q.refAt = least, now
	}
	if q.usual == 0 {
		q.usual, q.usualAt = least, now
	}
	tau := disturbMemory
	if least < q.usual {
		tau = round
	}
	if dt := now.Sub(q.usualAt); dt > 0 { // a clock set back moves nothing
		q.usual += (least - q.usual) * -math.Expm1(-dt.Seconds()/tau.Seconds())
		q.usualAt = now
	}
	return least, q.usual, q.grow, true
}

// recent is the least round trip of the current and the previous round
// (the signal, once they hold need answers), or the usual one when neither
// has any.
func (q *queueing) recent() float64 {
	r := math.Inf(1)
	if q.curN > 0 {
		r = q.cur
	}
	if q.prevN > 0 {
		r = math.Min(r, q.prev)
	}
	if math.IsInf(r, 1) {
		return q.usual
	}
	return r
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
		p.okAt, p.tally.at = now, now
		if p.outage {
			p.outage = false
			p.back, p.grewAt = now, now
		}
	}
}

// returning reports whether now is within returnFor of the return from an
// outage.
func (p *pacer) returning(now time.Time) bool {
	return !p.back.IsZero() && now.Sub(p.back) < returnFor
}

// mayGrowWindow reports whether the window of writes under way may grow by
// one at a success now: always, except within returnFor of the return from
// an outage, where it grows by one per windowStep.
func (p *pacer) mayGrowWindow(now time.Time) bool {
	if !p.returning(now) {
		return true
	}
	if now.Sub(p.grewAt) < windowStep {
		return false
	}
	p.grewAt = now
	return true
}

// shed records a 429 answered while the server accepts other writes
// (retryAfter: its Retry-After, zero if none), for a request sent at
// sentAt. The rate is cut once per round: not for a request sent before
// the last cut, nor within the Retry-After (at least a second) of it. The
// first cut within returnFor of the return from an outage goes down to
// restartRate·weight and empties the bucket.
func (p *pacer) shed(now, sentAt time.Time, retryAfter time.Duration) {
	p.disturbed, p.refusedAt = now, now
	if !p.adaptive || sentAt.Before(p.cutAt) ||
		(!p.cutAt.IsZero() && now.Before(p.cutAt.Add(max(retryAfter, round)))) {
		return
	}
	p.advance(now)
	p.decay(now)
	p.untrimmed = 0
	if r := math.Max(minRate, aimdCut*math.Min(p.rate, p.share())); r < p.rate {
		p.rate = r
		p.tokens = math.Min(p.tokens, p.bucket())
	}
	if p.returning(now) && p.cutAt.Before(p.back) {
		p.setRate(math.Min(p.rate, restartRate*p.weight))
		p.tokens = math.Min(p.tokens, 0)
	}
	p.thresh, p.slow = p.rate, false
	p.cutAt = now
	p.cuts++
}

// overload records a 429 that made the engine pause (the server accepted
// nothing of it lately), for a request sent at sentAt: once per round, the
// threshold of the slow start that follows the pause becomes aimdCut
// times the lower of the rate and the share, and at least
// restartRate·weight (an engine with nothing measured resumes there).
func (p *pacer) overload(now, sentAt time.Time) {
	p.disturbed, p.refusedAt = now, now
	if !p.adaptive || sentAt.Before(p.cutAt) {
		return
	}
	p.advance(now)
	p.decay(now)
	p.untrimmed = 0
	p.thresh = math.Max(restartRate*p.weight, aimdCut*math.Min(p.rate, p.share()))
	p.rate = math.Min(p.rate, p.thresh)
	p.tokens = math.Min(p.tokens, p.bucket())
	p.slow = false
	p.cutAt = now
	p.cuts++
}

// failed records a server-wide failure other than a 429.
func (p *pacer) failed(now time.Time) { p.disturbed, p.outage = now, true }

// shedTally counts the engine's writes the server stored and its requests
// the server shed (429 with Retry-After), each fading with a time constant
// of disturbMemory: the share the server sheds, read over hundreds of
// requests, where one round's is a few and mostly luck.
type shedTally struct {
	stored, shed float64
	at           time.Time // faded to
}

// count adds a stored write (shed false) or a shed request to the tally.
// Not while the engine is paused (its clock stands still, as the share's:
// see decay), nor within returnFor of the return from an outage, where a
// fleet coming back together meets about one 429 per engine by design
// (see shed) and an engine's first few answers would decide alone; nor
// with the adaptive rate off, where nothing reads it (shed does not cut).
func (p *pacer) count(now time.Time, shed bool) {
	if !p.adaptive || p.paused || p.returning(now) {
		return
	}
	if dt := now.Sub(p.tally.at); dt > 0 {
		f := math.Exp(-dt.Seconds() / disturbMemory.Seconds())
		p.tally.stored *= f
		p.tally.shed *= f
		p.tally.at = now
	}
	if shed {
		p.tally.shed++
	} else {
		p.tally.stored++
	}
}

// overShed reports whether the server shed more than 1 - aimdCut of the
// engine's requests lately (see count). Past that share one cut cannot
// bring a fleet back under the server's capacity: a fleet that has f of
// its requests refused offers C/(1-f) to a capacity C, and cut to aimdCut
// of that it still offers more than C. The engine then cuts for a key
// refused again as for a first refusal (see sched.failed).
func (p *pacer) overShed() bool {
	n := p.tally.stored + p.tally.shed
	return n > 0 && p.tally.shed > (1-aimdCut)*n
}

// restartAfterPause is called when the server answers again after a pause
// for its Retry-After: slow start from restartRate·weight.
func (p *pacer) restartAfterPause(now time.Time) {
	if !p.adaptive {
		return
	}
	p.advance(now)
	p.setRate(math.Min(p.thresh, restartRate*p.weight))
	p.slow = p.rate < p.thresh
	p.tokens = math.Min(p.tokens, 1)
}

// restartAfterIdle is called when an engine that was idle for idle gets a
// write to do, with the weight of that write set; jitter, in [0, 1), is
// the part of an interval its first write waits.
func (p *pacer) restartAfterIdle(now time.Time, idle time.Duration, jitter float64) {
	if !p.adaptive || p.disturbed.IsZero() || now.Sub(p.disturbed) > disturbMemory || idle <= 0 {
		return
	}
	p.advance(now)
	r := restartRate * p.weight
	if idle < round {
		// A short pause: the rate halved per idle second, or with no
		// limit the rate of recent successes, which has decayed with
		// the idle time too.
		base := p.rate * math.Exp2(-idle.Seconds()/round.Seconds())
		if math.IsInf(p.rate, 1) {
			p.decay(now)
			base = p.okRate
		}
		r = math.Max(restartRate, base)
	}
	if r < p.rate {
		p.thresh = math.Min(p.thresh, p.rate)
		p.rate = r
		p.slow = p.rate < p.thresh
	}
	p.tokens = math.Min(p.tokens, 1-jitter)
}

// current returns the rate now (+Inf: no limit) without changing the
// pacer: reading it (Stats) must not split the integration of the bucket
// and the growth, which would change what the engine does.
func (p *pacer) current(now time.Time) float64 {
	q := *p
	q.advance(now)
	return q.rate
}

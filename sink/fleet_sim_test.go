package sink

import (
	"container/heap"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldk8s/herald/internal/testing/bench/server"
)

// The fleet simulation: N engines' schedulers (the state machine the real
// Engine runs under its lock, with its workers) against one simulated API
// server, on a simulated clock, in one goroutine, so every run with the same
// seed is the same. The server is down (every request fails, as a 503)
// during an outage, then serves requests through a model
// (internal/testing/bench/server.Models, the models the fleet benchmark
// serves over HTTP: a per-second window, token buckets with a tenth and a
// full second of burst, a priority-and-fairness queue, max-in-flight, a
// capacity that steps), which admits a request or answers it 429 with its
// Retry-After, and decides when its answer leaves. A request reaches the
// server a fixed latency after it is sent, or that plus a random part of a
// jitter, as on a loaded machine where 100 controllers share two cores
// with their server; the server serves requests in the order they reach
// it.

type simConfig struct {
	engines, workers int
	opts             Options
	latency          time.Duration // of every request
	jitter           time.Duration // plus a random part of this, different for each request
	outage           time.Duration // from t=0
	capacity         float64       // requests/s the server accepts after the outage
	// model makes the server's model, from the end of the outage (nil:
	// server.NewWindow): it decides which requests it admits and when
	// each answer leaves it (a queue answers later as it fills).
	model  func(start time.Time, capacity float64) server.API
	batch  int // events per engine at t=0 and again at secondAt
	second int // events per engine at secondAt instead of batch, if not zero
	// trickle, if not zero, records each engine's first batch one event
	// at a time, this far apart, instead of at t=0.
	trickle time.Duration
	// secondTrickle, if not zero, records the second batch one event at
	// a time, this far apart, from secondAt on.
	secondTrickle time.Duration
	secondAt      time.Duration
	end           time.Duration
	seed          uint64
	trace         bool         // record a line per second in simResult.trace
	tweak         func(*sched) // if set, changes each engine before it starts
}

type simResult struct {
	stored, recorded        int
	requestsDown            []int // per engine, during the outage
	maxDown                 int
	peak                    int        // most requests within any one second after the outage
	peakRatio               float64    // most requests within any one second over the capacity then (the larger at either end)
	peakStored              int        // of the requests of that second, those the server stored
	peakCapacity            float64    // the capacity of that second
	jain                    float64    // Jain's index of the engines' admitted requests in the first earlyFor after the return
	refused                 [3]float64 // the 10th, 50th and 90th percentiles over the engines of the share of their requests refused (429) from the return to the second batch
	finished                [2]float64 // the 50th and 90th percentiles over the engines of when each stored its last event of the first batch, in seconds after the return (+Inf: not by the end)
	tooMany, failed, writes int
	requests                int
	perCut                  float64       // 429s over the rate cuts of all engines (the law's model: about one)
	firstBatchStored        time.Duration // after the server's return; -1 if never
	allStored               time.Duration
	firstTooMany, firstTrim time.Duration // the first 429, the first trim for latency; -1 if none
	perSecond               []int
	trace                   []string
}

func (r simResult) String() string {
	return fmt.Sprintf("stored %d/%d, requests %d (writes %d, 429 %d, other failures %d), writes/request %.3f, max requests of one engine while down %d, peak %d/s (%.2fx capacity, %d stored), Jain %.3f, first batch stored %.2fs after return, all %.1fs, engines' refused share p10/p50/p90 %.2f/%.2f/%.2f, 429s per cut %.2f, engines' first batch stored p50/p90 %.2f/%.2fs",
		r.stored, r.recorded, r.requests, r.writes, r.tooMany, r.failed, r.writesPerRequest(), r.maxDown, r.peak, r.peakRatio, r.peakStored, r.jain, r.firstBatchStored.Seconds(), r.allStored.Seconds(), r.refused[0], r.refused[1], r.refused[2], r.perCut, r.finished[0], r.finished[1])
}

// writesPerRequest is the share of the fleet's requests the server stored
// (zero with no request).
func (r simResult) writesPerRequest() float64 {
	return float64(r.writes) / float64(max(r.requests, 1))
}

type simEvent struct {
	at   time.Duration
	seq  int
	eng  int
	t    *task // a response, or nil: a wake-up of engine eng
	wake bool
	// arrive: t reaches the server now (sent after the outage), and
	// the server answers it; otherwise t is answered now.
	arrive bool
	ans    server.Answer // the server's answer to t (after the outage)
	// add, if not zero, records that many events for engine eng, numbered
	// from from.
	add, from int
}

type simQueue []simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	o := *q
	x := o[len(o)-1]
	*q = o[:len(o)-1]
	return x
}

func simulate(cfg simConfig) simResult {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	o, err := cfg.opts.withDefaults()
	if err != nil {
		panic(err)
	}
	type eng struct {
		s      *sched
		idle   int
		wakeAt time.Duration // pending timer, -1 none
	}
	engines := make([]*eng, cfg.engines)
	var q simQueue
	seq := 0
	push := func(e simEvent) { seq++; e.seq = seq; heap.Push(&q, e) }
	for i := range engines {
		engines[i] = &eng{s: newSched(o, rand.New(rand.NewPCG(cfg.seed, uint64(i))), t0), idle: cfg.workers, wakeAt: -1}
		if cfg.tweak != nil {
			cfg.tweak(engines[i].s)
		}
	}
	res := simResult{requestsDown: make([]int, cfg.engines), firstBatchStored: -1, allStored: -1, firstTooMany: -1, firstTrim: -1}
	second := cfg.batch
	if cfg.second > 0 {
		second = cfg.second
	}
	stored := map[string]bool{}
	mk := cfg.model
	if mk == nil {
		mk = func(start time.Time, capacity float64) server.API { return server.NewWindow(start, int(capacity)) }
	}
	srv := mk(t0.Add(cfg.outage), cfg.capacity)
	jit := rand.New(rand.NewPCG(cfg.seed, 999))
	firstLeft := cfg.engines * cfg.batch
	perSecond := make([]int, int(cfg.end/time.Second)+1)
	early := make([]int, cfg.engines) // admitted requests sent in the first earlyFor after the return
	// each engine's requests and 429s sent from the return to the second batch
	sentBy, refusedBy := make([]int, cfg.engines), make([]int, cfg.engines)
	finished := make([]float64, cfg.engines) // when each engine stored its last event of the first batch, after the return

	// add records n events of engine i at now, each at its own instant (a
	// nanosecond apart from now on: only their order matters), as a
	// controller records them one Eventf after another: their ages order
	// them. (Given one instant, a batch's events tie, and the order of the
	// ties hid that a key refused with a Retry-After went first again at
	// the next token: see entry.ageOrder.)
	add := func(i, from, n int, now time.Duration) {
		e := engines[i]
		for k := from; k < from+n; k++ {
			name := fmt.Sprintf("e%d-obj%d.1", i, k)
			ev := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Count: 1}
			since := t0.Add(now + time.Duration(k-from))
			e.s.add(name, &item{ev: ev, create: true, n: 1, since: since}, t0.Add(now))
			res.recorded++
		}
		push(simEvent{at: now, eng: i, wake: true})
	}
	// record schedules n events of engine i, numbered from from, at at,
	// or one at a time every apart from a random instant of the first
	// interval after at on.
	record := func(i, from, n int, at, every time.Duration) {
		if every == 0 {
			push(simEvent{at: at, eng: i, add: n, from: from})
			return
		}
		at += time.Duration(jit.Int64N(int64(every)))
		for k := range n {
			push(simEvent{at: at + time.Duration(k)*every, eng: i, add: 1, from: from + k})
		}
	}
	for i := range engines {
		record(i, 0, cfg.batch, 0, cfg.trickle)
		record(i, cfg.batch, second, cfg.secondAt, cfg.secondTrickle)
	}
	secWrites := make([]int, len(perSecond))
	var arrivals []time.Duration // when each request reached the server after the outage, in order
	var arrivedOK []bool
	var secTooMany []int
	if cfg.trace {
		secTooMany = make([]int, len(perSecond))
	}
	traced := time.Duration(0)
	type secLine struct {
		at, sec int // index in res.trace, second
		state   string
	}
	var secLines []secLine
	for q.Len() > 0 {
		ev := heap.Pop(&q).(simEvent)
		if ev.at > cfg.end {
			break
		}
		now := ev.at
		for cfg.trace && now >= traced+time.Second && traced < 40*time.Second {
			// The fleet's state at the end of each second.
			traced += time.Second
			var rate, tokens float64
			var down, slow, limitless, pending, held int
			for _, e := range engines {
				r := e.s.pace.current(t0.Add(traced))
				if math.IsInf(r, 1) {
					limitless++
				} else {
					rate += r
				}
				tokens += e.s.pace.tokens
				if e.s.health.down {
					down++
				}
				if e.s.pace.slow {
					slow++
				}
				pending += int(e.s.pendingEvents)
				held += int(e.s.queued[stHeld])
			}
			sec := int(traced/time.Second) - 1
			if firstLeft > 0 && sec >= int(cfg.secondAt/time.Second)-2 {
				// The engines still holding events of the first batch
				// as the second arrives: the tail of the first batch.
				for i, e := range engines {
					if n := firstBatchHeld(e.s, t0.Add(cfg.secondAt)); n > 0 {
						res.trace = append(res.trace, "    "+straggler(i, n, e.s, t0, t0.Add(traced)))
					}
				}
			}
			// The second's requests are counted when the run is over: some
			// of those sent in it are answered after it ends.
			state := fmt.Sprintf("at its end: rate sum %6.0f (limitless %3d) tokens %5.0f, down %3d, slow %3d, pending %4d (first batch %4d), held %4d",
				rate, limitless, tokens, down, slow, pending, firstLeft, held)
			secLines = append(secLines, secLine{at: len(res.trace), sec: sec, state: state})
			res.trace = append(res.trace, "")
		}
		e := engines[ev.eng]
		switch {
		case ev.arrive: // a request reaches the server, which serves them in the order they arrive
			ans := srv.Serve(t0.Add(now))
			arrivals = append(arrivals, now)
			arrivedOK = append(arrivedOK, ans.OK)
			push(simEvent{at: max(now, ans.Leaves.Sub(t0)), eng: ev.eng, t: ev.t, ans: ans})
			continue
		case ev.add > 0: // events recorded
			add(ev.eng, ev.from, ev.add, now)
			continue
		case ev.t != nil: // a response
			t := ev.t
			e.idle++
			res.requests++
			sentAt := t.sentAt.Sub(t0)
			if sentAt < cfg.outage {
				res.requestsDown[ev.eng]++
			} else {
				perSecond[int(sentAt/time.Second)]++
			}
			var out outcome
			var ra time.Duration
			var over bool
			sent := sentAt
			if sent >= cfg.outage && sent < cfg.secondAt {
				sentBy[ev.eng]++
				if !ev.ans.OK {
					refusedBy[ev.eng]++
				}
			}
			if sent < cfg.outage {
				out = outFailed
				res.failed++
			} else {
				if ev.ans.OK {
					if sent < cfg.outage+earlyFor {
						early[ev.eng]++
					}
					out = outWritten
					res.writes++
					secWrites[int(sent/time.Second)]++
				} else {
					out, ra, over = outFailed, ev.ans.RetryAfter, true
					res.tooMany++
					if res.firstTooMany < 0 {
						res.firstTooMany = now
					}
					if cfg.trace {
						secTooMany[int(sent/time.Second)]++
					}
				}
			}
			if cfg.trace && now >= cfg.secondAt-time.Second && t.it.since.Sub(t0) < cfg.secondAt {
				what := map[bool]string{true: "429", false: "failed"}[over]
				if out == outWritten {
					what = "written"
				}
				res.trace = append(res.trace, fmt.Sprintf("  %6.3fs %s %s; then %s", now.Seconds(), t.it.ev.Name, what, straggler(ev.eng, firstBatchHeld(e.s, t0.Add(cfg.secondAt)), e.s, t0, t0.Add(now))))
			}
			if out == outWritten {
				name := t.it.ev.Name
				if !stored[name] {
					stored[name] = true
					res.stored++
					if t.it.since.Sub(t0) < cfg.secondAt {
						finished[ev.eng] = max(finished[ev.eng], (now - cfg.outage).Seconds())
						firstLeft--
						if firstLeft == 0 {
							res.firstBatchStored = now - cfg.outage
						}
					}
					if res.stored == res.recorded && res.recorded == cfg.engines*(cfg.batch+second) {
						res.allStored = now - cfg.outage
					}
				}
			}
			e.s.finish(t, testResult(out, ra, over), t0.Add(now))
			if e.s.pace.trims > 0 && res.firstTrim < 0 {
				res.firstTrim = now
			}
		default: // a wake-up
			if e.wakeAt == ev.at {
				e.wakeAt = -1
			}
		}
		// Dispatch what the engine allows now.
		for e.idle > 0 {
			t, at := e.s.next(t0.Add(now))
			if t == nil {
				if !at.IsZero() {
					d := at.Sub(t0)
					if e.wakeAt < 0 || d < e.wakeAt {
						e.wakeAt = d
						push(simEvent{at: d, eng: ev.eng, wake: true})
					}
				}
				break
			}
			e.idle--
			lat := cfg.latency
			if cfg.jitter > 0 {
				lat += time.Duration(jit.Int64N(int64(cfg.jitter)))
			}
			// The request reaches the server lat after it is sent; the
			// answer comes back when the server lets it leave (see
			// arrive). During the outage it fails when it arrives.
			push(simEvent{at: now + lat, eng: ev.eng, t: t, arrive: now >= cfg.outage})
		}
	}
	for _, n := range res.requestsDown {
		res.maxDown = max(res.maxDown, n)
	}
	// The peak: the most requests that reached the server within any one
	// second, over the capacity (the larger at either end of it).
	for i, j, ok := 0, 0, 0; i < len(arrivals); i++ {
		if arrivedOK[i] {
			ok++
		}
		for arrivals[j] <= arrivals[i]-time.Second {
			if arrivedOK[j] {
				ok--
			}
			j++
		}
		c := max(srv.CapacityAt(t0.Add(arrivals[j])), srv.CapacityAt(t0.Add(arrivals[i])))
		if ratio := float64(i-j+1) / c; ratio > res.peakRatio {
			res.peak, res.peakRatio, res.peakStored, res.peakCapacity = i-j+1, ratio, ok, c
		}
	}
	for _, l := range secLines {
		res.trace[l.at] = fmt.Sprintf("t=%2ds requests %4d writes %4d 429 %4d | %s", l.sec, perSecond[l.sec], secWrites[l.sec], secTooMany[l.sec], l.state)
	}
	res.jain = jainIndex(early)
	res.refused = refusedShares(sentBy, refusedBy)
	for i, e := range engines {
		if firstBatchHeld(e.s, t0.Add(cfg.secondAt)) > 0 {
			finished[i] = math.Inf(1) // not yet
		}
	}
	slices.Sort(finished)
	res.finished = [2]float64{nearestRank(finished, 0.5), nearestRank(finished, 0.9)}
	var cuts int64
	for _, e := range engines {
		cuts += e.s.pace.cuts
	}
	res.perCut = float64(res.tooMany) / float64(max(cuts, 1))
	res.perSecond = perSecond
	return res
}

// refusedShares returns the 10th, 50th and 90th percentiles of refused[i] /
// sent[i] over the engines that sent anything: whether the share of
// requests refused is one figure for a fleet (a price every engine reads
// alike) or differs from engine to engine.
func refusedShares(sent, refused []int) [3]float64 {
	var f []float64
	for i, n := range sent {
		if n > 0 {
			f = append(f, float64(refused[i])/float64(n))
		}
	}
	if len(f) == 0 {
		return [3]float64{}
	}
	slices.Sort(f)
	return [3]float64{nearestRank(f, 0.1), nearestRank(f, 0.5), nearestRank(f, 0.9)}
}

// nearestRank is the q-th quantile of sorted by the nearest rank (zero for
// none).
func nearestRank(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[max(int(math.Ceil(q*float64(len(sorted))))-1, 0)]
}

// firstBatchHeld is the number of events added before second that s holds
// (queued or under way).
func firstBatchHeld(s *sched, second time.Time) int {
	n := 0
	for _, en := range s.entries {
		for _, it := range en.queue {
			if it.since.Before(second) {
				n++
			}
		}
		if en.busy != nil && en.busy.it.since.Before(second) {
			n++
		}
	}
	return n
}

// straggler describes engine i, which holds n events of the first batch,
// for the trace.
func straggler(i, n int, s *sched, t0, now time.Time) string {
	p := &s.pace
	last := "never"
	if !p.cutAt.IsZero() {
		last = fmt.Sprintf("at %.2fs", p.cutAt.Sub(t0).Seconds())
	}
	return fmt.Sprintf("engine %d: %d of the first batch, pending %d, rate %.1f/s (slow start %v, threshold %.1f), share %.1f/s, weight %.2f, %d cuts (last %s), window %d, held %d, down %v",
		i, n, s.pendingEvents, p.current(now), p.slow, p.thresh, p.share(), p.weight, p.cuts, last, s.window, s.queued[stHeld], s.health.down)
}

func fleetScenario(opts Options) simConfig {
	return simConfig{
		engines: 100, workers: defaultWorkers, opts: opts,
		latency: 2 * time.Millisecond, outage: 5 * time.Second,
		capacity: 300,
		batch:    30, secondAt: 15 * time.Second, end: 120 * time.Second,
		seed: 1,
	}
}

// TestFleetSimulation runs issue 13's scenario: 100 engines, 30 events each
// recorded while the server is down for 5 s, then a capacity of 300
// requests/s with 429 Retry-After 1, and 30 more each 10 s after it
// returns. The engine before shared health and the adaptive rate sent about
// 12,000 requests while the server was down and 0.25 writes per request;
// the one before load shedding (every 429 paused the whole engine) stored
// the first batch 19.5-21 s after the return.
//
// Asserted, for fleetSeeds seeds (6; -fleet.seeds N for more), at the
// defaults and with no write limit, against every server model
// (simModels) and each latency (simLatencies): fleetGoal (everything
// stored, at most 10 requests per engine while the server is down, 0.8
// writes per request, a peak of 1.5 times the capacity, the first batch
// within 12 s of the return) and a fair share (fairShare), or, on the
// models of openTargets, the bounds given there; the first batch's target
// in all but fleetLateRuns of the runs (see fleetLate). Over 12 seeds, at
// most 6 requests per engine while down everywhere, and per model the
// writes per request, the peak (the most requests within any one second)
// over the capacity and the first batch after the return:
//
//	window         0.83-0.84  1.53-1.89  10.5-11.8 s (see straddles)
//	bucket         0.82-0.84  1.31-1.47  11.0-11.9 s
//	bucket-1s      0.85-0.86  2.17-2.34  10.1-11.2 s
//	queue          0.84-0.85  1.35-1.43  11.1-11.8 s
//	inflight       0.82-0.83  1.31-1.40  11.1-12.3 s
//	inflight-flat  0.66-0.67  1.24-1.36  16.3-18.3 s
//	steps          0.85-0.86  1.32-1.39   9.3-10.7 s
//
// (Read over whole seconds from the outage's start, as until 2026-11-29,
// the peaks were 1.27-1.42, 1.26-1.44, 2.13-2.31, 1.27-1.38, 1.26-1.35,
// 1.23-1.34 and 1.23-1.34: those seconds were the window's own, and
// split the bunches at its resets in two.)
//
// Over 24 seeds the first batch passes 12 s in 6 of the 480 runs on the
// goal's models (window 12.1, queue 12.1, inflight 12.0-12.6 s), and
// inflight-flat's passes 18 s in 8 of 96 (up to 19.1 s, past its bound of
// 19 s in 2; it repeats at the defaults and with no write limit, which
// does not bind there).
//
// (steps 0.81-0.82 before the delay signal, which reads the queue of the
// steps' and the queue's server: 434-541 429s instead of 783-852 on steps;
// on inflight it changes nothing, 682-794 429s without it over 6 seeds:
// the fleet comes back to a server its own writes fill before any engine
// knows its usual round trip); Jain's index 0.75-0.92.
// go test -run TestFleetSimulation -v -args -fleet.trace [-fleet.seed N]
// shows a run second by second, and the engines still holding the first
// batch as the second arrives; -fleet.engines, -fleet.batch, -fleet.outage
// and -fleet.capacity run another workload (fleetWorkload), on which the
// targets do not all hold yet (docs/measurements.md, "Other workloads");
// -fleet.seats and -fleet.second set up the real server's max-in-flight
// as BenchmarkFleetMaxInFlight meets it.
// Its last line (fleetSpread) sums up a workload; make fleet-workloads
// prints it for each.
func TestFleetSimulation(t *testing.T) {
	var sum fleetSpread
	defer func() { t.Log(sum.String()) }()
	for _, c := range fleetCases() {
		sum.cases++
		ok := t.Run(c.name, func(t *testing.T) {
			for seed := uint64(1); seed <= uint64(*fleetSeeds); seed++ {
				cfg := c.config(seed)
				later := fleetWorkload(&cfg)
				cfg.trace = *fleetTrace && seed == uint64(*fleetTraceSeed)
				r := simulate(cfg)
				t.Logf("seed %d: %v", seed, r)
				from := int(cfg.outage / time.Second)
				t.Logf("requests per second after the outage: %v", r.perSecond[from:min(from+25, len(r.perSecond))])
				for _, l := range r.trace {
					t.Log(l)
				}
				goal, open := openTargets[c.model]
				if !open {
					goal = fleetGoal
				}
				goal.first += later
				goal.straddle = straddles[c.model]
				if !open {
					sum.target = goal.first
					sum.add(r)
					goal.first += fleetLate // a run past the target is counted (sum.late), held to fleetLateRuns below
				}
				for _, miss := range fleetTargets(r, goal) {
					t.Error(miss)
				}
			}
		})
		if !ok {
			sum.failed++
		}
	}
	if most := int(fleetLateRuns * float64(sum.runs)); sum.late > most {
		t.Errorf("first batch past %v in %d of %d runs on the goal's models, want at most %d (%.1f%%)", sum.target, sum.late, sum.runs, most, 100*fleetLateRuns)
	}
}

// TestFleetLargeBacklogDoesNotClimb runs issue 13's scenario with 100
// events per engine in each batch (10,000 at a time, a first batch of 33 s
// at the capacity), where the targets do not hold yet (docs/measurements.md,
// "Other workloads"), and holds the fleet to what it does there, so that
// the climb does not come back: before a key refused again could cut the
// rate (sched.failed, pacer.overShed), most pending events were keys held
// for a Retry-After and refused again, nothing cut any engine, and the
// fleet's rates grew until it sent 3.7-15.7 times the capacity in its peak
// second, 0.18-0.50 writes per request (6 seeds, every model). As kept:
// 1.68-2.84 times and 0.505-0.632. Every model, both latencies, at the
// defaults and with no write limit, seeds 1-2: everything stored, at most
// 10 requests per engine while the server is down, the peak at most 3.5
// times the capacity, 0.45 writes per request or more.
func TestFleetLargeBacklogDoesNotClimb(t *testing.T) {
	for _, c := range fleetCases() {
		t.Run(c.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 2; seed++ {
				cfg := c.config(seed)
				resize(&cfg, workload{batch: 100})
				r := simulate(cfg)
				t.Logf("seed %d: %v", seed, r)
				if r.stored != r.recorded {
					t.Errorf("seed %d: stored %d of %d", seed, r.stored, r.recorded)
				}
				if r.maxDown > 10 {
					t.Errorf("seed %d: an engine sent %d requests while the server was down, want <= 10", seed, r.maxDown)
				}
				if r.peakRatio > 3.5 {
					t.Errorf("seed %d: peak %.2fx the capacity within one second, want <= 3.5x", seed, r.peakRatio)
				}
				if ratio := r.writesPerRequest(); ratio < 0.45 {
					t.Errorf("seed %d: writes per request %.3f, want >= 0.45", seed, ratio)
				}
			}
		})
	}
}

// fleetSpread is what TestFleetSimulation logs last: the range of each
// figure over the runs on the models held to fleetGoal, and the cases that
// failed of all, one line for a workload (make fleet-workloads).
type fleetSpread struct {
	runs, cases, failed int
	ratio, peak, first  span[float64]
	all                 span[float64] // seconds from the return to the last event stored (runs that stored it)
	perCut              span[float64] // 429s per rate cut
	low, high           span[float64] // the engines' refused share, 10th and 90th percentiles
	tooMany             span[int]     // 429s
	unstored            int           // runs that never stored their first batch (not in first)
	late                int           // runs that stored it past target
	target              time.Duration
}

func (f *fleetSpread) add(r simResult) {
	f.runs++
	f.ratio.add(r.writesPerRequest())
	f.peak.add(r.peakRatio)
	f.tooMany.add(r.tooMany)
	f.low.add(r.refused[0])
	f.high.add(r.refused[2])
	f.perCut.add(r.perCut)
	if r.allStored >= 0 {
		f.all.add(r.allStored.Seconds())
	}
	if r.firstBatchStored < 0 {
		f.unstored++
		return
	}
	f.first.add(r.firstBatchStored.Seconds())
	if r.firstBatchStored > f.target {
		f.late++
	}
}

func (f fleetSpread) String() string {
	never := ""
	if f.unstored > 0 {
		never = fmt.Sprintf(", never in %d runs", f.unstored)
	}
	return fmt.Sprintf("over %d runs on the models held to the goal: writes/request %.3f-%.3f, 429 %d-%d, peak %.2f-%.2fx, first batch %.2f-%.2fs%s (target %.1fs, past it in %d runs), all stored %.1f-%.1fs, engines' refused share p10 %.2f-%.2f, p90 %.2f-%.2f, 429s per cut %.2f-%.2f; cases failed: %d of %d",
		f.runs, f.ratio.lo, f.ratio.hi, f.tooMany.lo, f.tooMany.hi, f.peak.lo, f.peak.hi, f.first.lo, f.first.hi, never, f.target.Seconds(), f.late, f.all.lo, f.all.hi, f.low.lo, f.low.hi, f.high.lo, f.high.hi, f.perCut.lo, f.perCut.hi, f.failed, f.cases)
}

// span is the least and the most of the values added (zero: none yet).
type span[T int | float64] struct {
	lo, hi T
	n      int
}

func (s *span[T]) add(v T) {
	if s.n == 0 || v < s.lo {
		s.lo = v
	}
	if s.n == 0 || v > s.hi {
		s.hi = v
	}
	s.n++
}

// simLatencies are the latencies of the simulated requests: 2 ms, and 2 ms
// plus up to 20 ms at random.
var simLatencies = []struct {
	name   string
	jitter time.Duration
}{
	{"latency=fixed", 0},
	{"latency=jittered", 20 * time.Millisecond},
}

// fleetCase is one case of the fleet's simulations: a server model, a
// latency and the engines' options.
type fleetCase struct {
	name     string // model/latency/settings
	model    string // the model's name
	newModel func(start time.Time, capacity float64) server.API
	jitter   time.Duration
	opts     Options
}

// fleetCases are every server model (simModels) with each latency
// (simLatencies), at the defaults and with no write limit.
func fleetCases() []fleetCase {
	var cases []fleetCase
	for _, m := range simModels {
		for _, lat := range simLatencies {
			for _, tc := range []struct {
				name string
				opts Options
			}{
				{"defaults", Options{}},
				{"no-write-limit", Options{QPS: Unlimited}},
			} {
				cases = append(cases, fleetCase{m.Name + "/" + lat.name + "/" + tc.name, m.Name, m.New, lat.jitter, tc.opts})
			}
		}
	}
	return cases
}

// config is issue 13's scenario for the case and seed.
func (c fleetCase) config(seed uint64) simConfig {
	cfg := fleetScenario(c.opts)
	cfg.model = c.newModel
	cfg.jitter = c.jitter
	cfg.seed = seed
	return cfg
}

// fleetWorkload changes cfg, issue 13's scenario, by the -fleet.engines,
// -fleet.batch, -fleet.outage and -fleet.capacity flags, to see whether
// the targets hold for another workload than the one they were met on
// (see resize).
//
// -fleet.seats and -fleet.second set up a server the real kube-apiserver
// is measured against: BenchmarkFleetMaxInFlight's (internal/testing/bench/server),
// its max-in-flight limit of one mutating request, is
// -fleet.engines 25 -fleet.capacity <its seat's writes/s> -fleet.seats 1
// -fleet.second 10s on inflight-flat (docs/measurements.md, "Max-in-flight
// on the real kube-apiserver").
func fleetWorkload(cfg *simConfig) (later time.Duration) {
	later = resize(cfg, workload{engines: *fleetEngines, batch: *fleetBatch, outage: *fleetOutage, capacity: *fleetCapacity})
	if *fleetSeats > 0 && cfg.model != nil {
		cfg.model = withSeats(cfg.model, *fleetSeats)
	}
	if *fleetSecond > 0 {
		cfg.secondAt = cfg.outage + *fleetSecond
		cfg.end = max(cfg.end, 2*cfg.secondAt)
	}
	return later
}

// withSeats makes the flat max-in-flight model that mk makes
// (inflight-flat) serve seats requests at a time, each for seats over the
// capacity; mk's other models are as it makes them.
func withSeats(mk func(time.Time, float64) server.API, seats int) func(time.Time, float64) server.API {
	return func(start time.Time, c float64) server.API {
		m := mk(start, c)
		if f, ok := m.(*server.InFlight); ok && f.Work == 0 {
			f.Limit = seats
			f.SetCapacity(c)
		}
		return m
	}
}

// workload is what differs from issue 13's scenario (zero: as there).
type workload struct {
	engines, batch int
	outage         time.Duration
	capacity       float64
}

// resize changes cfg, issue 13's scenario, to workload w. The second batch
// comes when the first could be stored at the earliest (floor, 10 s in
// issue 13's scenario), and it returns how much later than there the first
// batch may be stored: its target stays 2 s past the floor.
func resize(cfg *simConfig, w workload) (later time.Duration) {
	floorOf := func(c simConfig) time.Duration {
		return time.Duration(float64(c.engines*c.batch) / c.capacity * float64(time.Second))
	}
	base := floorOf(*cfg)
	if w.engines > 0 {
		cfg.engines = w.engines
	}
	if w.batch > 0 {
		cfg.batch = w.batch
	}
	if w.outage > 0 {
		cfg.outage = w.outage
	}
	if w.capacity > 0 {
		cfg.capacity = w.capacity
	}
	floor := floorOf(*cfg)
	cfg.secondAt = cfg.outage + floor
	cfg.end = max(cfg.end, cfg.outage+8*floor)
	return floor - base
}

var (
	fleetEngines  = flag.Int("fleet.engines", 0, "TestFleetSimulation: engines instead of issue 13's 100")
	fleetBatch    = flag.Int("fleet.batch", 0, "TestFleetSimulation: events per engine in each batch instead of 30")
	fleetOutage   = flag.Duration("fleet.outage", 0, "TestFleetSimulation: the outage instead of 5s")
	fleetCapacity = flag.Float64("fleet.capacity", 0, "TestFleetSimulation: the server's capacity in requests/s instead of 300")
	fleetSeats    = flag.Int("fleet.seats", 0, "TestFleetSimulation: inflight-flat's requests under way instead of 6, each served for seats over the capacity")
	fleetSecond   = flag.Duration("fleet.second", 0, "TestFleetSimulation: the second batch this long after the return, instead of when the first could be stored at the earliest")
)

var (
	fleetSeeds     = flag.Int("fleet.seeds", 6, "TestFleetSimulation: the seeds to run per case")
	fleetTrace     = flag.Bool("fleet.trace", false, "TestFleetSimulation: log one seed of each case second by second")
	fleetTraceSeed = flag.Int("fleet.seed", 1, "TestFleetSimulation: the seed -fleet.trace logs")
)

// targets are the fleet's targets: writes per request at least ratio,
// the peak at most peak times the capacity of its second, the first batch
// stored within first of the return.
type targets struct {
	ratio, peak float64
	first       time.Duration
	// admitted: the peak passes fleetGoal's only by what the server
	// stored. The requests it refused in the peak second are at most
	// fleetGoal.peak-1 times the capacity, and what it stored alone is
	// past fleetGoal.peak times it: a fleet that sent nothing the server
	// refused would have missed the goal too.
	admitted bool
	// straddle: the peak passes fleetGoal's only by what the server
	// stored, with at most fleetGoal.peak-1 times the capacity refused in
	// the peak second. A model that admits its capacity in each of its
	// own seconds (the window) admits up to twice it in any one second
	// across two of them.
	straddle bool
}

// fleetGoal is the target of issues 13 and 25 on every model.
var fleetGoal = targets{ratio: 0.8, peak: 1.5, first: 12 * time.Second}

// On the goal's models the first batch's target holds in distribution, not
// in every run (issue 25 stays open on it): TestFleetSimulation lets at
// most fleetLateRuns of its runs there store the first batch past
// fleetGoal.first, none more than fleetLate past it. Measured with each
// event recorded at its own instant, over 72 seeds (1,440 runs): 16 past
// 12 s, the latest at 13.26 s; when a key refused with a Retry-After went
// first again at the next token (before entry.ageOrder), 36, up to
// 12.94 s. The test's summary line counts the runs past the target
// ("past it in N runs").
const (
	fleetLate     = 1500 * time.Millisecond
	fleetLateRuns = 1.0 / 60
)

// openTargets are the models on which this engine does not yet meet
// fleetGoal (issue 25, open), with the bounds it is held to meanwhile:
// its figures over 6 seeds with both latencies, and a margin.
//
// A full second of burst (bucket-1s) admits about two seconds' worth in
// the first second after the return, so its peak over any one second is
// 2.17-2.34x; the server stores 576-598 of that second's 639-692 requests itself
// (1.92-1.99x the capacity, 12 seeds, both latencies and limits), and
// the test holds the peak to that (admitted): at most 0.5x the capacity
// refused in it (54-98 are). Per 100 ms of that second: the engines that
// see the return first write 382 in the first 0.3 s, the bucket's 300 and
// what it refills meanwhile, with no 429 and no latency to warn them, then
// about 30 are admitted and 8 refused per 100 ms until the second ends,
// and those are the first writes of the engines that see the return
// later (34 of 100 are still probing at its end). Each of those sees its
// writes stored at a flat round trip, a server that shows no load, and
// writes what it holds, as issue 25 asks and as a lone engine must to
// drain 1,500 events within a second of the return. To keep the peak
// within 1.5x, the fleet would have to leave about two thirds of what
// the bucket refills in the rest of that second unused, while the
// engines coming back then see their writes stored: the goal asks the
// fleet not to use what the server grants, which no engine that writes
// at once to a server showing no load can do. Holding every engine for the Retry-After of its first
// 429 after the return (tried) left the peak at 2.14-2.33x.
//
// Max-in-flight with flat latency (inflight-flat; the inflight model's
// latency grows with its load, as the API server's does, and is held to
// fleetGoal) refuses the fleet's simultaneous requests at once, without
// latency growing first: 0.66-0.67 writes per request, peak
// 1.23-1.34x, first batch 16.3-18.3 s (12 seeds; 0.63-0.65, 1.48-1.68x
// and 14.3-17.3 s before a key refused again could cut the rate, which
// its engines that see more than 0.4 of their requests refused now do). On its 6 seats of
// 20 ms the two targets cannot both be met by engines that do not
// coordinate: their requests arrive about as a Poisson stream, which the
// model refuses as Erlang's B formula says
// (server.TestInFlightLosesAsErlangB): at 0.8
// writes per request or more it carries at most 204 writes/s, at least
// 14.7 s for the 3,000 of the first batch with no time lost to the
// outage's end; 12 s needs 250/s, at 0.57 writes per request at best.
// Every other target is met on them.
// straddles are the models whose peak, read over any one second, is held
// to the refusals in it (targets.straddle) instead of fleetGoal.peak. The
// window admits 300 in each of its seconds, and the fleet's requests
// bunch at its resets: those refused as one second's 300 run out, and
// those the next second admits at once. Read over any one second, the
// peak is 1.53-1.89x, of which 38-92 requests refused (at most 0.31x the
// capacity; 12 seeds, both latencies and limits); read over the window's
// own seconds, as until 2026-11-29, 1.27-1.42x.
var straddles = map[string]bool{"window": true}

var openTargets = map[string]targets{
	"bucket-1s":     {ratio: 0.8, peak: 2.4, first: 12 * time.Second, admitted: true},
	"inflight-flat": {ratio: 0.6, peak: 1.8, first: 19 * time.Second},
}

// fleetTargets returns the targets of goal (fleetGoal, or a model's bounds
// in openTargets) that r misses.
func fleetTargets(r simResult, goal targets) []string {
	var miss []string
	if r.stored != r.recorded {
		miss = append(miss, fmt.Sprintf("stored %d of %d", r.stored, r.recorded))
	}
	if r.maxDown > 10 {
		miss = append(miss, fmt.Sprintf("an engine sent %d requests during the outage, want <= 10", r.maxDown))
	}
	if ratio := r.writesPerRequest(); ratio < goal.ratio {
		miss = append(miss, fmt.Sprintf("writes per request %.2f, want >= %v", ratio, goal.ratio))
	}
	switch {
	case goal.straddle:
		if refused := float64(r.peak - r.peakStored); r.peakRatio > goal.peak && refused > (goal.peak-1)*r.peakCapacity {
			miss = append(miss, fmt.Sprintf("peak %d/s past %vx the capacity of %.0f/s, of which %d stored: want at most %.0f refused",
				r.peak, goal.peak, r.peakCapacity, r.peakStored, (goal.peak-1)*r.peakCapacity))
		}
	case r.peakRatio > goal.peak:
		miss = append(miss, fmt.Sprintf("peak %.2fx the capacity of any one second, want <= %vx", r.peakRatio, goal.peak))
	}
	if goal.admitted && r.peakRatio > fleetGoal.peak {
		refused := float64(r.peak - r.peakStored)
		if refused > (fleetGoal.peak-1)*r.peakCapacity || float64(r.peakStored) <= fleetGoal.peak*r.peakCapacity {
			miss = append(miss, fmt.Sprintf("peak %d/s past %vx the capacity of %.0f/s, of which %d stored: want the excess stored by the server, at most %.0f refused",
				r.peak, fleetGoal.peak, r.peakCapacity, r.peakStored, (fleetGoal.peak-1)*r.peakCapacity))
		}
	}
	if r.firstBatchStored < 0 || r.firstBatchStored > goal.first {
		miss = append(miss, fmt.Sprintf("first batch stored %v after the return, want <= %v", r.firstBatchStored, goal.first))
	}
	if r.jain < fairShare {
		miss = append(miss, fmt.Sprintf("Jain's index of the engines' admitted requests in the first %v after the return %.2f, want >= %v", earlyFor, r.jain, fairShare))
	}
	return miss
}

// simModels are the server models the fleet runs against: every model of
// internal/testing/bench/server, as the fleet benchmark runs them.
var simModels = server.Models

// earlyFor is how long after the return the engines' admitted requests
// are counted for Jain's index, as in the fleet benchmark: every engine
// still has events of the first batch then, so a fair server gives each
// about the same.
const earlyFor = 5 * time.Second

// fairShare is the least Jain's index of the engines' admitted requests in
// the first earlyFor after the return that counts as sharing the server
// about fairly: 0.7 is, for instance, 80 engines with equal shares and 20
// with none (0.8), less a margin for chance (which requests meet a full
// server is chance).
const fairShare = 0.7

// jainIndex is Jain's fairness index of x: 1 when all are equal, 1/n when
// one takes everything.
func jainIndex(x []int) float64 {
	var sum, sq float64
	for _, v := range x {
		sum += float64(v)
		sq += float64(v) * float64(v)
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(x)) * sq)
}

// A fleet whose server queues what it cannot serve yet (priority and
// fairness: server.NewQueue, 300 writes/s) slows down when the round
// trips it knows grow, before the server refuses: 50 engines at their
// defaults write a trickle (an event every half second each, 100/s in
// all) for 12 s, then events come faster for 25-30 s: 333/s in all (a
// slow rise: the queue fills in about 2 s) or 400/s (the queue fills in
// 0.75 s). Against engines that read only the 429s, on each of 3 seeds:
// on the slow rise the first trim comes before the first 429 and the
// 429s are fewer by two thirds or more; on the fast rise by nine tenths;
// and all is stored no more than 10% later. Reading latency, the slow
// rise meets 34-60 429s and the fast 29-32, against 220-228 and 490-512:
// each engine keeps about one write in the queue (pacer.concurrency),
// not one per worker. Before the writes under way followed the rate,
// 85-98 and 220-233.
func TestFleetSlowsOnLatencyBeforeA429(t *testing.T) {
	run := func(readLatency bool, every time.Duration, seed uint64) simResult {
		cfg := simConfig{
			engines: 50, workers: defaultWorkers, latency: 2 * time.Millisecond,
			capacity: 300, model: func(_ time.Time, c float64) server.API { return server.NewQueue(c) },
			batch: 24, trickle: 500 * time.Millisecond,
			second: 200, secondAt: 12 * time.Second, secondTrickle: every,
			end: 200 * time.Second, seed: seed,
		}
		if !readLatency {
			cfg.tweak = readNoLatency
		}
		return simulate(cfg)
	}
	for _, tc := range []struct {
		name   string
		every  time.Duration
		fewer  float64 // the most 429s, as a fraction of those of the engines reading 429s only
		before bool    // the first trim comes before the first 429
	}{
		{"slow-rise", 150 * time.Millisecond, 1.0 / 3, true},
		{"fast-rise", 125 * time.Millisecond, 0.1, false},
	} {
		for seed := uint64(1); seed <= 3; seed++ {
			with, without := run(true, tc.every, seed), run(false, tc.every, seed)
			t.Logf("%s seed %d reading latency: %v; first 429 at %v, first trim at %v", tc.name, seed, with, with.firstTooMany, with.firstTrim)
			t.Logf("%s seed %d reading 429s only: %v; first 429 at %v", tc.name, seed, without, without.firstTooMany)
			if with.stored != with.recorded || without.stored != without.recorded {
				t.Fatalf("%s seed %d: not all stored", tc.name, seed)
			}
			if tc.before && (with.firstTrim < 0 || with.firstTooMany >= 0 && with.firstTooMany < with.firstTrim) {
				t.Errorf("%s seed %d: first 429 at %v, first trim at %v: want a trim first", tc.name, seed, with.firstTooMany, with.firstTrim)
			}
			if float64(with.tooMany) > tc.fewer*float64(without.tooMany) {
				t.Errorf("%s seed %d: %d 429s reading latency, %d without: want at most %.2f of them", tc.name, seed, with.tooMany, without.tooMany, tc.fewer)
			}
			if with.allStored > without.allStored+without.allStored/10 {
				t.Errorf("%s seed %d: all stored at %v reading latency, %v without: more than 10%% later", tc.name, seed, with.allStored, without.allStored)
			}
		}
	}
}

// A fleet whose demand steps up into a queue: 25 engines write a trickle
// (30% of the server's capacity, 300 writes/s in all) for 6 s, then 120%
// of it for 10 s, into one seat with a queue of 40 places in front (a
// priority level of one seat: the queue is the wait before a 429). The
// delay signal must not cost the fleet what the queue gives it: reading
// latency, the engines store everything no more than 5% later than
// engines reading the 429s only or with the adaptive rate off, and meet
// no more 429s than the former, on each of 3 seeds. A trim as deep as the queue is long (to the share times
// tolerance·usual over a round trip of 133 ms, a sixth of it) left the
// seat half idle for seconds: all stored 6-11% later.
//
// With one write under way per engine (Workers 1, as client-go's writer),
// 25 writes never fill the queue of 40: no 429 comes, and engines that
// read 429s only (or none) store everything at 18.0 s, as fast as the
// seat allows; reading latency, no more than 5% later either (18.0 s with
// fixed latency; with jitter 18.0-18.1 s at 300 writes/s, 18.2-18.5 s at
// 800). The queue stands at about one write per engine, many times the
// usual round trip but harmless: until the server has refused a write, a
// queue is read by its growth, not its level (see pacer.latency), so the
// engines trim once, a little, as the queue forms, and a trim is undone
// once the queue stops growing; growth within one usual round trip a
// round is not read (with jitter at 800 writes/s, reading it from zero
// trimmed the fleet to the seat's pace and the seat idled between
// arrivals: up to 6.5% later). Read by
// its level, every engine trimmed to a cut's depth in the same round,
// again and again, while the seat idled: all stored 14-19% later
// (20.5-21.4 s); read by its growth without the undoing, the jitter's
// trims before the step held the rates low after it (20.5-20.9 s with
// jitter). Every case runs with fixed and with jittered latency.
//
// With four workers (the default), each engine keeps the writes under
// way that its rate needs at tolerance times the usual round trip (see
// pacer.concurrency): one here, so 25 writes stand in the queue of 40 and
// none is refused; all is stored at 18.0-18.1 s, the seat's pace. With
// four each, 100 writes under way overflowed the queue at the step, the
// engines whose writes met the 429s were cut from a share that was their
// trickle while the others went on, grew back at the additive pace and
// held the backlog at the end while the seat idled (20.9-21.9 s at 300
// writes/s, 21.6-23.9 s at 800, 18-80 429s); engines reading 429s only,
// which do not read the round trip for the writes under way either, still
// do (20.9-21.1 s and 21.6-23.3 s); with the adaptive rate off, the fleet
// stores everything at the seat's pace (18.0-19.0 s) but meets 672-2,924
// 429s.
//
// BenchmarkFleetAPFRise (internal/testing/bench/server) runs the same on
// the real kube-apiserver. With four writes under way each, herald at its
// defaults took 1.4-2.0x client-go's time; with the writes under way
// following the rate, 1.03x in its first run (10.3 s against 10.0 s, no
// 429, the seat at 699 writes/s).
func TestFleetDemandStepIntoAQueue(t *testing.T) {
	run := func(mode string, capacity float64, workers int, jitter time.Duration, seed uint64) simResult {
		cfg := simConfig{
			engines: 25, workers: workers, latency: 2 * time.Millisecond, jitter: jitter,
			opts:     Options{Workers: workers, DisableAdaptiveRate: mode == "adaptive rate off"},
			capacity: capacity,
			model: func(_ time.Time, c float64) server.API {
				q := &server.Queue{Seats: 1, Wait: 15 * time.Second, RetryAfter: time.Second}
				q.SetCapacity(c)
				q.QueueLength = 40
				return q
			},
			secondAt: 6 * time.Second, end: 120 * time.Second, seed: seed,
		}
		switch capacity {
		case 300: // 0.3 · 300 / 25 = 3.6 writes/s each, 1.2 · 300 / 25 = 14.4.
			cfg.batch, cfg.trickle = 21, 278*time.Millisecond
			cfg.second, cfg.secondTrickle = 144, 69*time.Millisecond
		case 800: // 9.6 writes/s each, then 38.4.
			cfg.batch, cfg.trickle = 57, 104*time.Millisecond
			cfg.second, cfg.secondTrickle = 384, 26*time.Millisecond
		default:
			t.Fatalf("no demand for a capacity of %v", capacity)
		}
		if mode == "reading 429s only" {
			cfg.tweak = readNoLatency
		}
		return simulate(cfg)
	}
	for _, capacity := range []float64{300, 800} {
		for _, workers := range []int{defaultWorkers, 1} {
			for _, lat := range simLatencies {
				for seed := uint64(1); seed <= 3; seed++ {
					name := fmt.Sprintf("capacity %.0f workers %d %s seed %d", capacity, workers, lat.name, seed)
					with, without, off := run("reading latency", capacity, workers, lat.jitter, seed), run("reading 429s only", capacity, workers, lat.jitter, seed), run("adaptive rate off", capacity, workers, lat.jitter, seed)
					for _, r := range []struct {
						name string
						r    simResult
					}{{"reading latency", with}, {"reading 429s only", without}, {"adaptive rate off", off}} {
						t.Logf("%s %s: %v; first trim at %v", name, r.name, r.r, r.r.firstTrim)
						if r.r.stored != r.r.recorded {
							t.Fatalf("%s %s: not all stored", name, r.name)
						}
					}
					if with.allStored > without.allStored+without.allStored/20 {
						t.Errorf("%s: all stored at %v reading latency, %v without: more than 5%% later", name, with.allStored, without.allStored)
					}
					if with.allStored > off.allStored+off.allStored/20 {
						t.Errorf("%s: all stored at %v reading latency, %v with the adaptive rate off: more than 5%% later", name, with.allStored, off.allStored)
					}
					if with.tooMany > without.tooMany {
						t.Errorf("%s: %d 429s reading latency, %d without", name, with.tooMany, without.tooMany)
					}
					if workers == 1 && (without.tooMany != 0 || off.tooMany != 0) {
						t.Errorf("%s: %d 429s reading 429s only, %d with the adaptive rate off: want none, 25 writes under way never fill a queue of 40", name, without.tooMany, off.tooMany)
					}
				}
			}
		}
	}
}

// readNoLatency makes an engine read 429s only: its delay signal never
// passes the tolerance.
func readNoLatency(s *sched) { s.pace.tolerance = math.Inf(1) }

// TestFleetSpread checks the line make fleet-workloads prints: ranges over
// the runs added, and a run that never stored its first batch counted
// apart instead of as a time.
func TestFleetSpread(t *testing.T) {
	if got, want := refusedShares([]int{10, 10, 0, 10, 10, 10, 10, 10, 10, 10, 10}, []int{0, 1, 0, 2, 3, 4, 5, 6, 7, 8, 9}), [3]float64{0, 0.4, 0.8}; got != want { // nearest rank of ten, the engine that sent nothing left out
		t.Errorf("refusedShares = %v, want %v", got, want)
	}
	for _, c := range []struct {
		sorted  []float64
		q, want float64
	}{{[]float64{1, 2, 3, 4}, 0.5, 2}, {[]float64{1, 2, 3, 4}, 0.9, 4}, {[]float64{5}, 0.1, 5}, {nil, 0.5, 0}} {
		if got := nearestRank(c.sorted, c.q); got != c.want {
			t.Errorf("nearestRank(%v, %v) = %v, want %v", c.sorted, c.q, got, c.want)
		}
	}
	// withSeats (-fleet.seats) changes inflight-flat's seats at the same
	// capacity, and no other model.
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	flat := withSeats(func(time.Time, float64) server.API { return server.NewFlatInFlight(300) }, 1)(t0, 1338).(*server.InFlight)
	if flat.Limit != 1 || math.Abs(flat.CapacityAt(t0)-1338) > 1 {
		t.Errorf("withSeats(inflight-flat, 1): %d seats, capacity %.0f, want 1 and 1338", flat.Limit, flat.CapacityAt(t0))
	}
	if shared := withSeats(func(time.Time, float64) server.API { return server.NewInFlight(300) }, 1)(t0, 300).(*server.InFlight); shared.Limit != 30 {
		t.Errorf("withSeats(inflight, 1): %d seats, want inflight's 30", shared.Limit)
	}
	var f fleetSpread
	f.cases, f.failed, f.target = 2, 1, 12*time.Second
	f.add(simResult{writes: 80, requests: 100, tooMany: 20, peakRatio: 1.2, firstBatchStored: 12500 * time.Millisecond, allStored: 22 * time.Second, refused: [3]float64{0.1, 0.2, 0.3}, perCut: 1.2})
	f.add(simResult{writes: 90, requests: 100, tooMany: 10, peakRatio: 1.4, firstBatchStored: 9500 * time.Millisecond, allStored: 20500 * time.Millisecond, refused: [3]float64{0, 0.1, 0.2}, perCut: 1.1})
	f.add(simResult{writes: 50, requests: 100, tooMany: 50, peakRatio: 2, firstBatchStored: -1, allStored: -1, refused: [3]float64{0.4, 0.5, 0.7}, perCut: 4})
	want := "over 3 runs on the models held to the goal: writes/request 0.500-0.900, 429 10-50, peak 1.20-2.00x, first batch 9.50-12.50s, never in 1 runs (target 12.0s, past it in 1 runs), all stored 20.5-22.0s, engines' refused share p10 0.00-0.40, p90 0.20-0.70, 429s per cut 1.10-4.00; cases failed: 1 of 2"
	if got := f.String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

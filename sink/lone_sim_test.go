package sink

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldk8s/herald/internal/testing/bench/server"
)

// loneConfig is a lone engine on a simulated clock: n events recorded at
// t=0, answered by answer after latency.
type loneConfig struct {
	opts    Options
	events  int
	latency time.Duration
	// answer is the sink: the result of t, sent at at.
	answer func(t *task, at time.Duration) result
	// server, if set, answers instead of answer: a request reaches it
	// latency after it is sent and comes back when it leaves.
	server server.API
	// tweak, if set, changes the engine before it starts.
	tweak func(*sched)
	seed  uint64
	end   time.Duration
}

type loneResult struct {
	stored, dropped, requests int
	allStored                 time.Duration // -1: never
	storedAt                  []time.Duration
	tooMany                   int           // 429s
	firstTooMany              time.Duration // -1: none
	firstTrim                 time.Duration // the first trim for the delay signal; -1: none
	trims                     int64         // trims for the delay signal
	stats                     Stats         // the engine's at the end
}

func (r loneResult) String() string {
	return fmt.Sprintf("stored %d, dropped %d, requests %d, all stored at %v", r.stored, r.dropped, r.requests, r.allStored)
}

// simulateLone runs cfg; its event loop is simulate's, for one engine.
func simulateLone(cfg loneConfig) loneResult {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	o, _ := cfg.opts.withDefaults()
	s := newSched(o, rand.New(rand.NewPCG(cfg.seed, 1)), t0)
	if cfg.tweak != nil {
		cfg.tweak(s)
	}
	for k := range cfg.events {
		name := fmt.Sprintf("obj%d.1", k)
		ev := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Count: 1}
		since := t0.Add(time.Duration(k)) // each at its own instant (see simulate's add)
		s.add(name, &item{ev: ev, create: true, n: 1, since: since}, t0)
	}
	res := loneResult{allStored: -1, firstTooMany: -1, firstTrim: -1}
	var q simQueue
	seq := 0
	push := func(e simEvent) { seq++; e.seq = seq; heap.Push(&q, e) }
	push(simEvent{at: 0, wake: true})
	idle, wakeAt := o.Workers, time.Duration(-1)
	for q.Len() > 0 {
		ev := heap.Pop(&q).(simEvent)
		if ev.at > cfg.end {
			break
		}
		now := ev.at
		if ev.t != nil {
			idle++
			res.requests++
			var r result
			switch {
			case cfg.server == nil:
				r = cfg.answer(ev.t, ev.t.sentAt.Sub(t0))
			case ev.ans.OK:
				r = result{out: outWritten}
			default:
				r = testResult(outFailed, ev.ans.RetryAfter, true)
				res.tooMany++
				if res.firstTooMany < 0 {
					res.firstTooMany = now
				}
			}
			if r.out == outWritten {
				res.stored++
				res.storedAt = append(res.storedAt, now)
			}
			if s.finish(ev.t, r, t0.Add(now)) == vExhausted || r.out == outDropped {
				res.dropped++
			}
			if s.pace.trims > 0 && res.firstTrim < 0 {
				res.firstTrim = now
			}
			if res.stored+res.dropped == cfg.events && res.allStored < 0 {
				res.allStored = now
			}
		} else if wakeAt == ev.at {
			wakeAt = -1
		}
		for idle > 0 {
			t, at := s.next(t0.Add(now))
			if t == nil {
				if !at.IsZero() {
					if d := at.Sub(t0); wakeAt < 0 || d < wakeAt {
						wakeAt = d
						push(simEvent{at: d, wake: true})
					}
				}
				break
			}
			idle--
			resp := simEvent{at: now + cfg.latency, t: t}
			if cfg.server != nil {
				resp.ans = cfg.server.Serve(t0.Add(now + cfg.latency))
				resp.at = max(resp.at, resp.ans.Leaves.Sub(t0))
			}
			push(resp)
		}
	}
	res.trims = s.pace.trims
	s.stats(&res.stats, t0.Add(cfg.end))
	return res
}

// refusedFourTimes answers as client-go's TestLotsOfEvents's sink: each
// event is refused four times with an error the engine cannot read, then
// stored.
func refusedFourTimes() func(t *task, _ time.Duration) result {
	counts := map[string]int{}
	return func(t *task, _ time.Duration) result {
		counts[t.it.ev.Name]++
		if counts[t.it.ev.Name] < 5 {
			return result{out: outFailed, fault: faultTransport}
		}
		return result{out: outWritten}
	}
}

// client-go's TestLotsOfEvents's scenario, on a simulated clock: 1,000
// distinct events, each refused four times before it is stored, at
// herald's default write rate (50/s, burst 100) and client-go's test's
// sleep of zero. The floor is (1,000-100)/50 = 18 s; a refused request
// gives its token back, so that refusals of single events do not halve
// the rate (before, 40 s against the real broadcaster). Target: 20 s,
// 0.9 of the configured rate after the burst (issue 25 asks 22 s).
func TestLoneEngineLotsOfEvents(t *testing.T) {
	r := simulateLone(loneConfig{opts: Options{MaxDelay: NoWait}, events: 1000, latency: 50 * time.Microsecond,
		end: 100 * time.Second, answer: refusedFourTimes()})
	t.Log(r)
	if r.stored != 1000 || r.allStored < 0 || r.allStored > 20*time.Second {
		t.Errorf("%v, want all 1000 stored within 20 s", r)
	}
}

// A sink that fails 10% of its writes at random (503, no answer) gets at
// least 0.85 of the configured rate after the burst of 100, as the bench's
// x-configured-rate: one failure while the server answers the others is
// not an outage, and gives its token back.
func TestLoneEngineRandomFailures(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		rnd := rand.New(rand.NewPCG(seed, 7))
		r := simulateLone(loneConfig{events: 2000, latency: time.Millisecond, end: 200 * time.Second, seed: seed,
			answer: func(*task, time.Duration) result {
				if rnd.Float64() < 0.1 {
					return result{out: outFailed, fault: faultTransport}
				}
				return result{out: outWritten}
			}})
		rate := float64(r.stored-defaultBurst) / r.allStored.Seconds()
		t.Logf("seed %d: %v, %.1f writes/s after the burst", seed, r, rate)
		if r.stored != 2000 || rate < 0.85*defaultQPS {
			t.Errorf("seed %d: %v, %.1f writes/s, want all stored at >= %v/s", seed, r, rate, 0.85*defaultQPS)
		}
	}
}

// A lone engine with the write limit off drains the events an outage
// answered 503 held within a second of the server's return, in each of 40
// runs: at the defaults, 1,500 events after a 2 or 3 s outage (the bench's
// lone outage), and 2,000 after 3 s with 16 workers and a backoff of
// 100 ms to 500 ms (the bench's outage rows). Holding that many events,
// the engine probes about half a second apart (see probeSpacing), where
// its backoff alone would reach 2 s. After a longer outage it probes less
// often, as probeSpacing says, and drains within that spacing and half a
// second (1,500 writes of 1 ms on 4 workers take 0.4 s). Probes never come
// more often than one per half BaseDelay.
func TestLoneEngineOutageDrain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    Options
		events  int
		outages []time.Duration
	}{
		{"defaults", Options{QPS: Unlimited}, 1500, []time.Duration{2 * time.Second, 3 * time.Second, 5 * time.Second, 10 * time.Second}},
		{"16 workers, backoff 100-500ms", Options{Workers: 16, QPS: Unlimited, BaseDelay: 100 * time.Millisecond, MaxDelay: 500 * time.Millisecond}, 2000, []time.Duration{3 * time.Second}},
	} {
		o, _ := tc.opts.withDefaults()
		for _, outage := range tc.outages {
			within := time.Second
			if outage > 3*time.Second {
				within = probeSpacing(outage+o.BaseDelay, int64(tc.events), o.BaseDelay) + 500*time.Millisecond
			}
			mostDown := o.Workers + int(outage/(o.BaseDelay/2))
			var worst time.Duration
			for seed := uint64(1); seed <= 40; seed++ {
				down := 0
				r := simulateLone(loneConfig{
					opts:   tc.opts,
					events: tc.events, latency: time.Millisecond, end: 40 * time.Second, seed: seed,
					answer: func(_ *task, at time.Duration) result {
						if at < outage {
							down++
							return result{out: outFailed, fault: faultTransport}
						}
						return result{out: outWritten}
					}})
				drained := r.allStored - outage
				worst = max(worst, drained)
				if r.stored != tc.events || drained > within || down > mostDown {
					t.Errorf("%s, outage %v, seed %d: %v, %d requests while down, drained %v after the return; want all stored within %v, at most %d requests while down",
						tc.name, outage, seed, r, down, drained, within, mostDown)
				}
			}
			t.Logf("%s, outage %v: drained at worst %v after the return (bound %v)", tc.name, outage, worst, within)
		}
	}
}

// A server that shows no load (flat latency, no 429) gets the configured
// rate from the first instant: the burst as fast as one write under way
// carries it (one a round trip, 500 writes/s here, ten times QPS), then
// QPS writes/s, with no slow start.
func TestLoneEngineFlatServerGetsConfiguredRate(t *testing.T) {
	const latency = 2 * time.Millisecond
	r := simulateLone(loneConfig{events: 1000, latency: latency, end: 60 * time.Second,
		answer: func(*task, time.Duration) result { return result{out: outWritten} }})
	for i, at := range r.storedAt {
		// The i-th write (from 0) comes no later than the configured
		// bucket lets it or the writes under way can carry it (one, once
		// the usual round trip is known: the rate needs 0.4 at four
		// round trips; see pacer.concurrency), plus its latency and one
		// interval.
		bucket := time.Duration(float64(max(0, i+1-defaultBurst)) / defaultQPS * float64(time.Second))
		underWay := time.Duration(i+1) * latency
		limit := max(bucket, underWay) + latency + time.Second/defaultQPS
		if at > limit {
			t.Fatalf("write %d stored at %v, the configured rate allows it by %v", i, at, limit)
		}
	}
	if r.stored != 1000 {
		t.Fatalf("%v", r)
	}
}

// A lone engine does not read its own writes as load, and reading the
// server's queue costs it nothing: a server with 4 seats of 40 ms (100
// writes/s), a queue of 25 and a wait of at most a second, which from
// 10 s on another tenant sends 80 requests/s. The engine writes 1,500
// events at its defaults (50/s, burst 100, 4 workers): no trim while it
// is alone, trims once the tenant's requests queue before its writes, and
// all stored no later than by an engine that reads only 429s (its four
// workers already keep it from filling the queue: neither meets a 429).
func TestLoneEngineReadsTheQueueOfOthersOnly(t *testing.T) {
	run := func(readLatency bool) loneResult {
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		srv := &server.Tenant{API: server.NewQueue(100), Next: t0.Add(10 * time.Second), Period: time.Second / 80}
		cfg := loneConfig{events: 1500, latency: 2 * time.Millisecond, end: 300 * time.Second, server: srv}
		if !readLatency {
			cfg.tweak = readNoLatency
		}
		return simulateLone(cfg)
	}
	with, without := run(true), run(false)
	t.Logf("reading latency: %v, 429s %d, first trim at %v", with, with.tooMany, with.firstTrim)
	t.Logf("reading 429s only: %v, 429s %d", without, without.tooMany)
	if with.stored != 1500 || without.stored != 1500 || with.tooMany != 0 {
		t.Fatalf("want all stored and no 429")
	}
	if with.firstTrim < 10*time.Second {
		t.Errorf("first trim at %v, before the other tenant came (10 s): the engine read its own writes as load", with.firstTrim)
	}
	if with.firstTrim < 0 {
		t.Errorf("no trim: the tenant's queue was not read")
	}
	if with.allStored > without.allStored+without.allStored/100 {
		t.Errorf("all stored at %v reading latency, %v without", with.allStored, without.allStored)
	}
	// Stats count the trims as rate cuts (no 429 cut here).
	if with.stats.RateCuts != with.trims || without.stats.RateCuts != 0 {
		t.Errorf("RateCuts %d with %d trims, %d without", with.stats.RateCuts, with.trims, without.stats.RateCuts)
	}
}

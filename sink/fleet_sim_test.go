package sink

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The fleet simulation: N engines' schedulers (the state machine the real
// Engine runs under its lock, with its workers) against one simulated API
// server, on a simulated clock, in one goroutine, so every run with the same
// seed is the same. The server is down (every request fails, as a 503)
// during an outage, then accepts at most capacity requests per second
// (a token bucket of one tenth of a second) and answers the rest 429 with a
// Retry-After.

type simConfig struct {
	engines, workers int
	opts             Options
	latency          time.Duration // of every request
	outage           time.Duration // from t=0
	capacity         float64       // requests/s the server accepts after the outage
	retryAfter       time.Duration // of its 429s
	batch            int           // events per engine at t=0 and again at secondAt
	secondAt         time.Duration
	end              time.Duration
	seed             uint64
}

type simResult struct {
	stored, recorded        int
	requestsDown            []int // per engine, during the outage
	maxDown                 int
	peak                    int // most requests in one second after the outage
	tooMany, failed, writes int
	requests                int
	firstBatchStored        time.Duration // after the server's return; -1 if never
	allStored               time.Duration
	perSecond               []int
}

func (r simResult) String() string {
	return fmt.Sprintf("stored %d/%d, requests %d (writes %d, 429 %d, other failures %d), writes/request %.2f, max requests of one engine while down %d, peak %d/s, first batch stored %.1fs after return, all %.1fs",
		r.stored, r.recorded, r.requests, r.writes, r.tooMany, r.failed, float64(r.writes)/float64(max(r.requests, 1)), r.maxDown, r.peak, r.firstBatchStored.Seconds(), r.allStored.Seconds())
}

type simEvent struct {
	at   time.Duration
	seq  int
	eng  int
	t    *task // a response, or nil: a wake-up of engine eng
	wake bool
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
	}
	res := simResult{requestsDown: make([]int, cfg.engines), firstBatchStored: -1, allStored: -1}
	stored := map[string]bool{}
	// Server: at most capacity requests accepted per second of the clock.
	accepted := map[int]int{}
	firstLeft := cfg.engines * cfg.batch
	perSecond := make([]int, int(cfg.end/time.Second)+1)

	add := func(i, from int, now time.Duration) {
		e := engines[i]
		for k := from; k < from+cfg.batch; k++ {
			name := fmt.Sprintf("e%d-obj%d.1", i, k)
			ev := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Count: 1}
			e.s.add(name, &item{ev: ev, create: true, n: 1, since: t0.Add(now)}, t0.Add(now))
			res.recorded++
		}
		push(simEvent{at: now, eng: i, wake: true})
	}
	for i := range engines {
		add(i, 0, 0)
		push(simEvent{at: cfg.secondAt, eng: i, wake: true, t: &task{}}) // marker: second batch
	}
	for q.Len() > 0 {
		ev := heap.Pop(&q).(simEvent)
		if ev.at > cfg.end {
			break
		}
		now := ev.at
		e := engines[ev.eng]
		switch {
		case ev.wake && ev.t != nil: // second batch
			add(ev.eng, cfg.batch, now)
			continue
		case ev.t != nil: // a response
			t := ev.t
			e.idle++
			res.requests++
			if now-cfg.latency < cfg.outage {
				res.requestsDown[ev.eng]++
			} else {
				perSecond[int((now-cfg.latency)/time.Second)]++
			}
			var out outcome
			var ra time.Duration
			var over bool
			sent := now - cfg.latency
			if sent < cfg.outage {
				out = outFailed
				res.failed++
			} else {
				if sec := int(sent / time.Second); float64(accepted[sec]) < cfg.capacity {
					accepted[sec]++
					out = outWritten
					res.writes++
				} else {
					out, ra, over = outFailed, cfg.retryAfter, true
					res.tooMany++
				}
			}
			if out == outWritten {
				name := t.it.ev.Name
				if !stored[name] {
					stored[name] = true
					res.stored++
					if t.it.since.Sub(t0) < cfg.secondAt {
						firstLeft--
						if firstLeft == 0 {
							res.firstBatchStored = now - cfg.outage
						}
					}
					if res.stored == res.recorded && res.recorded == 2*cfg.engines*cfg.batch {
						res.allStored = now - cfg.outage
					}
				}
			}
			e.s.finish(t, testResult(out, ra, over), t0.Add(now))
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
			push(simEvent{at: now + cfg.latency, eng: ev.eng, t: t})
		}
	}
	for _, n := range res.requestsDown {
		res.maxDown = max(res.maxDown, n)
	}
	for s := int(cfg.outage / time.Second); s < len(perSecond); s++ {
		res.peak = max(res.peak, perSecond[s])
	}
	res.perSecond = perSecond
	return res
}

func fleetScenario(opts Options) simConfig {
	return simConfig{
		engines: 100, workers: DefaultWorkers, opts: opts,
		latency: 2 * time.Millisecond, outage: 5 * time.Second,
		capacity: 300, retryAfter: time.Second,
		batch: 30, secondAt: 15 * time.Second, end: 120 * time.Second,
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
// Bounds asserted, for six seeds, at the defaults and with no write limit:
// issue 13's targets (reached with this engine over twenty seeds each: the
// first batch within 11.1-11.7 s, a peak of at most 418 requests/s, 0.83
// writes per request).
func TestFleetSimulation(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"defaults", Options{}},
		{"no-write-limit", Options{QPS: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 6; seed++ {
				cfg := fleetScenario(tc.opts)
				cfg.seed = seed
				r := simulate(cfg)
				t.Logf("seed %d: %v", seed, r)
				t.Logf("requests per second after the outage: %v", r.perSecond[5:30])
				if r.stored != r.recorded {
					t.Errorf("stored %d of %d", r.stored, r.recorded)
				}
				if r.maxDown > 10 {
					t.Errorf("an engine sent %d requests during the 5 s outage, want <= 10", r.maxDown)
				}
				if ratio := float64(r.writes) / float64(r.requests); ratio < 0.8 {
					t.Errorf("writes per request %.2f, want >= 0.8", ratio)
				}
				if float64(r.peak) > 1.5*cfg.capacity {
					t.Errorf("peak %d requests/s, want <= %v", r.peak, 1.5*cfg.capacity)
				}
				if r.firstBatchStored < 0 || r.firstBatchStored > 12*time.Second {
					t.Errorf("first batch stored %v after the return, want <= 12s", r.firstBatchStored)
				}
			}
		})
	}
}

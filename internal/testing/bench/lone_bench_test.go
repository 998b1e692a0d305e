package bench_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clientrecord "k8s.io/client-go/tools/record"

	"github.com/heraldk8s/herald/internal/testing/bench"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// The lone-engine scenarios (issue 25): one broadcaster at herald's
// defaults against a sink of its own, which a fleet's pacing must not slow
// down. They run in BenchmarkDelivery beside the other delivery scenarios.

const (
	// heraldQPS and heraldBurst are herald's default write limit.
	heraldQPS   = 50
	heraldBurst = 100
	loneQuiet   = 10 * time.Second // herald may wait seconds between retries
	loneMax     = 120 * time.Second
)

// lotsOfEvents is client-go's TestLotsOfEvents (tools/record/event_test.go)
// at herald's defaults: 1,000 events, each about its own object with its
// own reason (no aggregation, no spam filter) and the message i, into a
// sink that refuses each message four times with a plain error before it
// accepts it. Both run as client-go's test makes its broadcaster, with
// WithSleepDuration(0) (herald: MaxDelay sink.NoWait, its equivalent; at
// client-go's default of 10 s between tries it would take hours), herald
// otherwise at its defaults (a write limit of 50/s). s-to-all: from the
// first Eventf to the last write; its floor, the burst of 100 at once and
// 900 writes at 50/s (a refused write gives its token back), is 18 s.
var lotsOfEvents = scenario{
	name: "lone-lots-of-events-1000",
	herald: options[record.BroadcasterOption]{}.
		with("record.WithSinkOptions(sink.Options{MaxDelay: sink.NoWait}) (WithSleepDuration(0), as client-go's test)", record.WithSinkOptions(sink.Options{MaxDelay: sink.NoWait})),
	client: options[clientrecord.BroadcasterOption]{}.
		with("record.WithSleepDuration(0) (as client-go's test)", clientrecord.WithSleepDuration(0)),
	run: func(b *testing.B, p *pipeline) metrics {
		const n, refusals = 1000, 4
		var mu sync.Mutex
		tries := map[string]int{}
		delay := sinktest.Latency(sinkLatency)
		s := bench.NewCountingSink(func(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
			if err := delay(ctx, op, ev); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			tries[ev.Message]++
			if tries[ev.Message] <= refusals {
				return errors.New("fake error")
			}
			return nil
		})
		p.quiet, p.maxObserve = loneQuiet, loneMax
		p.start(s)
		start := time.Now()
		for i, o := range bench.Pods(n) {
			p.rec.Eventf(o, v1.EventTypeNormal, fmt.Sprintf("Reason-%d", i), "%d", i)
		}
		m, prog := drained(p, s, n, start)
		m.add("writes", float64(s.Calls()))
		m.add("s-to-all", prog.Last.Sub(start).Seconds())
		return m
	},
}

// random503 records 600 distinct events at herald's defaults into a 1 ms
// sink that fails 10% of its calls at random with a 503 (no Retry-After):
// a server that fails now and then, not one that is loaded. x-configured-
// rate: the writes that succeeded after the burst per second, over the
// configured 50/s: (delivered − 100) / (50 × s-to-all). A write refused
// other than with a 429 gives its token back, so 1.0 is its ceiling.
// client-go does not retry a 503 (a StatusError): it loses the tenth.
var random503 = scenario{
	name: "lone-random-503-600",
	run: func(b *testing.B, p *pipeline) metrics {
		const n = 600
		var mu sync.Mutex
		rng := rand.New(rand.NewPCG(25, 10))
		delay := sinktest.Latency(sinkLatency)
		s := bench.NewCountingSink(func(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
			if err := delay(ctx, op, ev); err != nil {
				return err
			}
			mu.Lock()
			fail := rng.Float64() < 0.1
			mu.Unlock()
			if fail {
				return bench.Unavailable()
			}
			return nil
		})
		p.quiet, p.maxObserve = loneQuiet, loneMax
		p.start(s)
		start := time.Now()
		p.burst(bench.Pods(n))
		m, prog := drained(p, s, n, start)
		took := prog.Last.Sub(start).Seconds()
		m.add("writes", float64(s.Calls()))
		m.add("s-to-all", took)
		m.add("events/s", float64(prog.N)/took)
		if p.impl == "herald" {
			m.add("x-configured-rate", (float64(prog.N)-heraldBurst)/(heraldQPS*took))
		}
		return m
	},
}

// loneOutageRuns is how many times loneOutage runs its outage.
const loneOutageRuns = 5

// loneOutage records 1,500 distinct events at the start of a 3 s outage
// (every call of the 1 ms sink answers 503), the write limit off, five
// times with a new broadcaster each; ms-to-drain-worst is the longest
// from the return to the last write of the five, ms-to-drain-mean their
// mean. client-go at its defaults does not retry a 503.
var loneOutage = scenario{
	name: fmt.Sprintf("lone-outage-3s-503-1500-x%d", loneOutageRuns),
	herald: options[record.BroadcasterOption]{}.
		with("record.WithSinkOptions(sink.Options{QPS: sink.Unlimited})", record.WithSinkOptions(sink.Options{QPS: sink.Unlimited})),
	run: func(b *testing.B, p *pipeline) metrics {
		const n = 1500
		var written, dropped, failed, leaked int64
		var worst, sum float64
		for range loneOutageRuns {
			s := bench.NewCountingSink(nil)
			p.start(s)
			start := time.Now()
			recovery := start.Add(outage)
			s.SetFault(bench.Outage(sinkLatency, recovery, bench.Unavailable))
			p.burst(bench.Pods(n))
			prog := p.observe(start, recovery, s, n)
			dropped += p.dropped()
			_, l := p.shutdown()
			leaked += int64(l)
			events, _ := s.Stored()
			written += int64(events)
			failed += s.Calls() - s.Written()
			d := since(recovery, prog.Last)
			worst, sum = max(worst, d), sum+d
		}
		var m metrics
		m.add("recorded", n*loneOutageRuns)
		m.add("written", float64(written))
		m.add("dropped", float64(dropped))
		m.add("lost", float64(n*loneOutageRuns-written-dropped))
		m.add("failed-writes", float64(failed))
		m.add("ms-to-drain-worst", worst)
		m.add("ms-to-drain-mean", sum/loneOutageRuns)
		m.add("goroutines-leaked", float64(leaked))
		return m
	},
}

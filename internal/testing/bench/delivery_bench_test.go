package bench_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	clientrecord "k8s.io/client-go/tools/record"

	"github.com/heraldk8s/herald/internal/testing/bench"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The delivery scenarios. Each runs once per benchmark iteration (make bench
// uses -benchtime 1x) on the real clock, against a sinktest.Sink whose every
// call takes 1 ms, first with herald and then with client-go's
// tools/record, and reports with b.ReportMetric:
//
//   - recorded: Eventf calls made.
//   - delivered / written: events stored in the sink (for one repeated
//     event: its final count).
//   - dropped: events the library says it gave up on. Herald counts them
//     (Stats().Dropped.Total() + Stats().Abandoned); client-go counts
//     nothing, so its per-event error logs are counted instead ("too many
//     queued events", "Server rejected event", "retry limit exceeded", ...).
//   - lost: recorded - delivered - dropped, the events that vanished without
//     a count or a log line.
//   - events/s: delivered / (time of the last write - start of the burst).
//   - ms-to-final, ms-to-drain, shutdown-ms: see each scenario.
//   - writes, failed-writes: sink calls made, and those that failed.
//   - ms-per-write: mean wall time of one sink call (the 1 ms latency as
//     the machine delivers it); with W workers, W / ms-per-write bounds
//     the events/s herald can reach.
//   - goroutines-leaked: goroutines left over after Shutdown (after waiting
//     up to 2 s for the ones told to stop).
//
// Herald is told when it is done (Flush returns); client-go cannot be, so it
// is observed until its sink has seen no new write for 2 s (15 s at most),
// then shut down. Each scenario logs the options it used ("benchnote:"),
// which the table printer shows under the table.

const (
	sinkLatency = time.Millisecond
	quiet       = 2 * time.Second  // no progress for this long: client-go is done
	maxObserve  = 15 * time.Second // observation window after a burst, at most
	outage      = 3 * time.Second
	retryBase   = 100 * time.Millisecond // herald's first retry delay in the outage scenarios
	retrySleep  = 500 * time.Millisecond // herald's longest retry delay, client-go's sleep
	manyTokens  = 1 << 30                // a spam-filter burst that is never reached
	workers     = 16
	queueLength = 10000
)

// options is a list of broadcaster options with their description.
type options[T any] struct {
	list []T
	desc []string
}

func (o options[T]) with(desc string, opt T) options[T] {
	return options[T]{list: append(append([]T(nil), o.list...), opt), desc: append(append([]string(nil), o.desc...), desc)}
}

func (o options[T]) String() string {
	if len(o.desc) == 0 {
		return "defaults"
	}
	return strings.Join(o.desc, ", ")
}

// throughput is the herald configuration of the burst scenarios: enough
// workers for a 1 ms sink, the write limit (default 50/s) off, and queues
// (default 1000) that hold a whole burst.
var throughput = options[record.BroadcasterOption]{}.
	with(fmt.Sprintf("record.WithSinkOptions(sink.Options{Workers: %d, QPS: sink.Unlimited})", workers), record.WithSinkOptions(sink.Options{Workers: workers, QPS: sink.Unlimited})).
	with(fmt.Sprintf("record.WithQueueLength(%d)", queueLength), record.WithQueueLength(queueLength))

var noSpamFilter = record.CorrelatorOptions{BurstSize: manyTokens}

var clientNoSpamFilter = clientrecord.CorrelatorOptions{BurstSize: manyTokens}

// scenario is one delivery scenario.
type scenario struct {
	name   string
	herald options[record.BroadcasterOption]
	client options[clientrecord.BroadcasterOption]
	run    func(b *testing.B, p *pipeline) metrics
}

// metric is one reported value.
type metric struct {
	unit  string
	value float64
}

type metrics []metric

func (m *metrics) add(unit string, v float64) { *m = append(*m, metric{unit, v}) }

var scenarios = []scenario{
	{
		name:   "burst-distinct-10000",
		herald: throughput,
		run:    burstDistinct(10000),
	},
	{
		name:   "burst-identical-10000",
		herald: throughput.with("CorrelatorOptions{BurstSize: 1<<30}", record.WithCorrelatorOptions(noSpamFilter)),
		client: options[clientrecord.BroadcasterOption]{}.
			with("CorrelatorOptions{BurstSize: 1<<30}", clientrecord.WithCorrelatorOptions(clientNoSpamFilter)),
		run: burstIdentical(10000),
	},
	{
		name: "burst-identical-10000-defaults",
		herald: options[record.BroadcasterOption]{}.
			with("CorrelatorOptions{BurstSize: 1<<30}", record.WithCorrelatorOptions(noSpamFilter)),
		client: options[clientrecord.BroadcasterOption]{}.
			with("CorrelatorOptions{BurstSize: 1<<30}", clientrecord.WithCorrelatorOptions(clientNoSpamFilter)),
		run: burstIdentical(10000),
	},
	{
		name:   "shutdown-5000",
		herald: throughput,
		run:    shutdownAfterBurst(5000),
	},
	{
		name: "outage-3s-connrefused-2000",
		herald: throughput.
			with(fmt.Sprintf("record.WithSinkOptions(sink.Options{BaseDelay: %v, MaxDelay: %v})", retryBase, retrySleep), record.WithSinkOptions(sink.Options{BaseDelay: retryBase, MaxDelay: retrySleep})),
		client: options[clientrecord.BroadcasterOption]{}.
			with(fmt.Sprintf("record.WithSleepDuration(%v)", retrySleep), clientrecord.WithSleepDuration(retrySleep)),
		run: outageDuringBurst(2000, bench.ConnRefused),
	},
	{
		name: "outage-3s-503-2000",
		herald: throughput.
			with(fmt.Sprintf("record.WithSinkOptions(sink.Options{BaseDelay: %v, MaxDelay: %v})", retryBase, retrySleep), record.WithSinkOptions(sink.Options{BaseDelay: retryBase, MaxDelay: retrySleep})),
		client: options[clientrecord.BroadcasterOption]{}.
			with(fmt.Sprintf("record.WithSleepDuration(%v)", retrySleep), clientrecord.WithSleepDuration(retrySleep)),
		run: outageDuringBurst(2000, bench.Unavailable),
	},
	{
		name: "goroutines",
		run:  goroutines,
	},
	lotsOfEvents,
	random503,
	loneOutage,
}

func BenchmarkDelivery(b *testing.B) {
	for _, sc := range scenarios {
		b.Run(sc.name, func(b *testing.B) {
			for _, impl := range []string{"herald", "client-go"} {
				b.Run("impl="+impl, func(b *testing.B) {
					// Logs of a benchmark with sub-benchmarks are not
					// printed; the leaves' are.
					if impl == "herald" {
						b.Logf("benchnote: Delivery/%s: herald options: %v; client-go options: %v.", sc.name, sc.herald, sc.client)
					}
					logs := bench.CaptureKlog()
					defer logs.Restore()
					var order []string
					sums := map[string]float64{}
					for range b.N {
						p := &pipeline{impl: impl, logs: logs, herald: sc.herald.list, client: sc.client.list}
						for _, m := range sc.run(b, p) {
							if _, ok := sums[m.unit]; !ok {
								order = append(order, m.unit)
							}
							sums[m.unit] += m.value
						}
					}
					for _, unit := range order {
						b.ReportMetric(sums[unit]/float64(b.N), unit)
					}
				})
			}
		})
	}
}

// pipeline is one implementation under test: a broadcaster recording to a
// sink, and a recorder.
type pipeline struct {
	impl   string
	logs   *bench.LogCounter
	herald []record.BroadcasterOption
	client []clientrecord.BroadcasterOption
	// quiet and maxObserve replace the constants of the same names in
	// observe when quiet is set (the lone-engine scenarios take longer).
	quiet, maxObserve time.Duration

	// Set by start.
	rec      clientrecord.EventRecorder
	heraldEB record.EventBroadcaster
	clientEB clientrecord.EventBroadcaster
	before   int // goroutines before start
}

// start builds the broadcaster and the recorder, recording to s.
func (p *pipeline) start(s clientrecord.EventSink) {
	p.logs.Reset()
	p.before = runtime.NumGoroutine()
	if p.impl == "herald" {
		p.heraldEB = record.NewBroadcaster(p.herald...)
		p.heraldEB.StartRecordingToSink(s)
		p.rec = p.heraldEB.NewRecorder(scheme.Scheme, bench.Source)
		return
	}
	p.clientEB = clientrecord.NewBroadcaster(p.client...)
	p.clientEB.StartRecordingToSink(s)
	p.rec = p.clientEB.NewRecorder(scheme.Scheme, bench.Source)
}

// burst records one event per object, as a reconcile loop would.
func (p *pipeline) burst(objs []*v1.Pod) {
	for _, o := range objs {
		p.rec.Eventf(o, "Warning", "InvalidSpec", "key %q: %d", "mode", 3)
	}
}

// observe watches s until every one of want writes has succeeded, herald
// says it has flushed, or (client-go) the sink has been quiet for the quiet
// period after quietFrom.
func (p *pipeline) observe(start, quietFrom time.Time, s *bench.CountingSink, want int64) bench.Progress {
	q, most := quiet, maxObserve
	if p.quiet > 0 {
		q, most = p.quiet, p.maxObserve
	}
	if p.impl != "herald" {
		return bench.Observe(start, quietFrom, s.Written, want, nil, q, time.Since(start)+most)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.heraldEB.Flush(ctx)
	}()
	prog := bench.Observe(start, quietFrom, s.Written, want, done, q, time.Since(start)+most)
	cancel()
	<-done
	return prog
}

// shutdown shuts the broadcaster down (herald: flushing for up to 60 s) and
// returns how long that took and how many goroutines it left behind.
func (p *pipeline) shutdown() (took time.Duration, leaked int) {
	start := time.Now()
	if p.impl == "herald" {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		_ = p.heraldEB.ShutdownWithContext(ctx)
		cancel()
	} else {
		p.clientEB.Shutdown()
	}
	took = time.Since(start)
	return took, bench.Leaked(p.before, 2*time.Second)
}

// dropped returns the events the implementation reported as given up:
// herald's counted drops and abandoned events; client-go's drop logs.
func (p *pipeline) dropped() int64 {
	if p.impl == "herald" {
		s := p.heraldEB.Stats()
		return s.Dropped.Total() + s.Abandoned
	}
	return p.logs.Drops()
}

// since returns the milliseconds from t0 to t, or 0 if t is before t0.
func since(t0, t time.Time) float64 {
	if t.Before(t0) {
		return 0
	}
	return float64(t.Sub(t0)) / float64(time.Millisecond)
}

// burstDistinct records one event for each of n objects in one burst into a
// sink with 1 ms latency and measures how many arrive, and how fast.
func burstDistinct(n int) func(*testing.B, *pipeline) metrics {
	return func(b *testing.B, p *pipeline) metrics {
		objs := bench.Pods(n)
		s := bench.NewCountingSink(sinktest.Latency(sinkLatency))
		p.start(s)
		start := time.Now()
		p.burst(objs)
		m, prog := drained(p, s, int64(n), start)
		m.add("events/s", float64(prog.N)/prog.Last.Sub(start).Seconds())
		m.add("ms-to-final", since(start, prog.Last))
		m.add("ms-per-write", float64(s.MeanCall())/float64(time.Millisecond))
		return m
	}
}

// drained observes p until the n distinct events recorded from start are
// written (or it stops trying), shuts it down and returns what was
// recorded, delivered, dropped, lost and leaked, and what it observed.
func drained(p *pipeline, s *bench.CountingSink, n int64, start time.Time) (metrics, bench.Progress) {
	prog := p.observe(start, start, s, n)
	dropped := p.dropped()
	_, leaked := p.shutdown()
	events, _ := s.Stored()
	var m metrics
	m.add("recorded", float64(n))
	m.add("delivered", float64(events))
	m.add("dropped", float64(dropped))
	m.add("lost", float64(n-int64(events)-dropped))
	m.add("goroutines-leaked", float64(leaked))
	return m, prog
}

// burstIdentical records the same event n times in one burst (spam filter
// off) into a sink with 1 ms latency and measures how many writes it takes
// and the count the stored event ends with.
func burstIdentical(n int) func(*testing.B, *pipeline) metrics {
	return func(b *testing.B, p *pipeline) metrics {
		obj := []*v1.Pod{bench.Pod(0)}
		s := bench.NewCountingSink(sinktest.Latency(sinkLatency))
		p.start(s)
		start := time.Now()
		for range n {
			p.burst(obj)
		}
		prog := p.observe(start, start, s, int64(n)) // the writes never reach n: done or quiet ends it
		dropped := p.dropped()
		_, leaked := p.shutdown()
		events, count := s.Stored()
		if events > 1 {
			b.Logf("%s: %d events stored for one object", p.impl, events)
		}
		var m metrics
		m.add("recorded", float64(n))
		m.add("writes", float64(s.Calls()))
		m.add("finalcount", float64(count))
		m.add("dropped", float64(dropped))
		m.add("lost", float64(int64(n)-count-dropped))
		m.add("ms-to-final", since(start, prog.Last))
		m.add("goroutines-leaked", float64(leaked))
		return m
	}
}

// shutdownAfterBurst records one event for each of n objects and shuts the
// broadcaster down at once (herald: ShutdownWithContext with a 60 s
// context), then counts what reached the 1 ms sink.
func shutdownAfterBurst(n int) func(*testing.B, *pipeline) metrics {
	return func(b *testing.B, p *pipeline) metrics {
		objs := bench.Pods(n)
		s := bench.NewCountingSink(sinktest.Latency(sinkLatency))
		p.start(s)
		p.burst(objs)
		took, leaked := p.shutdown()
		dropped := p.dropped()
		events, _ := s.Stored()
		var m metrics
		m.add("recorded", float64(n))
		m.add("written", float64(events))
		m.add("dropped", float64(dropped))
		m.add("lost", float64(int64(n)-int64(events)-dropped))
		m.add("shutdown-ms", float64(took)/float64(time.Millisecond))
		m.add("goroutines-leaked", float64(leaked))
		return m
	}
}

// outageDuringBurst records one event for each of n objects at the start of
// a 3 s outage of the 1 ms sink (every call fails with fail()), and measures
// what is written in the end and how long after recovery the last write
// came.
func outageDuringBurst(n int, fail func() error) func(*testing.B, *pipeline) metrics {
	return func(b *testing.B, p *pipeline) metrics {
		objs := bench.Pods(n)
		s := bench.NewCountingSink(nil)
		p.start(s)
		start := time.Now()
		recovery := start.Add(outage)
		s.SetFault(bench.Outage(sinkLatency, recovery, fail))
		p.burst(objs)
		prog := p.observe(start, recovery, s, int64(n))
		dropped := p.dropped()
		_, leaked := p.shutdown()
		events, _ := s.Stored()
		var m metrics
		m.add("recorded", float64(n))
		m.add("written", float64(events))
		m.add("dropped", float64(dropped))
		m.add("lost", float64(int64(n)-int64(events)-dropped))
		m.add("failed-writes", float64(s.Calls()-s.Written()))
		m.add("ms-to-drain", since(recovery, prog.Last))
		m.add("goroutines-leaked", float64(leaked))
		return m
	}
}

// goroutines starts a sink and two loggers, records 100 events, shuts down
// and counts the goroutines started and left behind.
func goroutines(b *testing.B, p *pipeline) metrics {
	s := bench.NewCountingSink(nil)
	p.start(s)
	if p.impl == "herald" {
		p.heraldEB.StartLogging(func(string, ...interface{}) {})
		p.heraldEB.StartStructuredLogging(10)
	} else {
		p.clientEB.StartLogging(func(string, ...interface{}) {})
		p.clientEB.StartStructuredLogging(10)
	}
	p.burst(bench.Pods(100))
	started := runtime.NumGoroutine() - p.before
	_, leaked := p.shutdown()
	var m metrics
	m.add("goroutines-started", float64(started))
	m.add("goroutines-leaked", float64(leaked))
	return m
}

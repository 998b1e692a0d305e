package table

import (
	"regexp"
	"sync"
)

// Target is one of herald's performance targets: a check of one metric of
// the scenarios whose ID ("pkg/Name") matches Scenario.
type Target struct {
	// Scenario is a regular expression matched against Scenario.ID.
	Scenario string
	// Metric is the unit checked.
	Metric string
	// Desc is what the table shows in the target column.
	Desc string
	// NeedsClientGo says Check compares with client-go's run.
	NeedsClientGo bool
	// Check reports whether herald's metrics h meet the target, given
	// client-go's c (nil if it did not run).
	Check func(h, c map[string]float64) bool

	once sync.Once
	re   *regexp.Regexp
}

func (t *Target) scenario() *regexp.Regexp {
	t.once.Do(func() { t.re = regexp.MustCompile(t.Scenario) })
	return t.re
}

func ratioAtMost(unit string, q float64) func(h, c map[string]float64) bool {
	return func(h, c map[string]float64) bool { return c[unit] > 0 && h[unit] <= q*c[unit] }
}

func ratioAtLeast(unit string, q float64) func(h, c map[string]float64) bool {
	return func(h, c map[string]float64) bool { return h[unit] >= q*c[unit] }
}

func heraldAtMost(unit string, v float64) func(h, c map[string]float64) bool {
	return func(h, _ map[string]float64) bool { return h[unit] <= v }
}

// heraldAtMostPlus checks herald's unit against v plus its other metric
// (which must be there).
func heraldAtMostPlus(unit string, v float64, other string) func(h, c map[string]float64) bool {
	return func(h, _ map[string]float64) bool { o, ok := h[other]; return ok && h[unit] <= v+o }
}

// peakPastOnlyByAdmitted checks a fleet's peak second against limit times
// the capacity, counting past it only what the server refused: at most
// limit-1 times the capacity refused, and what it stored alone past the
// limit (a fleet that sent nothing the server refused would have passed
// it too).
func peakPastOnlyByAdmitted(limit float64) func(h, c map[string]float64) bool {
	return func(h, _ map[string]float64) bool {
		peak := h["peak-x-capacity"]
		if peak <= limit {
			return true
		}
		admitted, ok := h["peak-admitted-x-capacity"]
		return ok && admitted > limit && peak-admitted <= limit-1
	}
}

// heraldEquals checks herald's unit is exactly v (a count that must be
// zero: below is an over-count, above a loss).
func heraldEquals(unit string, v float64) func(h, c map[string]float64) bool {
	return func(h, _ map[string]float64) bool { return h[unit] == v }
}

// peakPastWithRefusedAtMost checks a fleet's peak second against limit
// times the capacity, or, past it, that the server refused at most limit-1
// times the capacity of it.
func peakPastWithRefusedAtMost(limit float64) func(h, c map[string]float64) bool {
	return func(h, _ map[string]float64) bool {
		peak := h["peak-x-capacity"]
		if peak <= limit {
			return true
		}
		admitted, ok := h["peak-admitted-x-capacity"]
		return ok && peak-admitted <= limit-1
	}
}

func heraldEqualsMetric(unit, other string) func(h, c map[string]float64) bool {
	return func(h, _ map[string]float64) bool { _, ok := h[other]; return ok && h[unit] == h[other] }
}

// Targets are herald's targets (DESIGN.md, "Performance", and the bench
// brief). A scenario and metric get the first target that matches.
var Targets = []*Target{
	{Scenario: `^record/Eventf`, Metric: "ns/op", Desc: "≤ 0.5×", NeedsClientGo: true, Check: ratioAtMost("ns/op", 0.5)},
	{Scenario: `^record/Eventf`, Metric: "allocs/op", Desc: "≤ 0.5×", NeedsClientGo: true, Check: ratioAtMost("allocs/op", 0.5)},
	{Scenario: `(?i)^correlator/.*(repeat|identical|same)`, Metric: "ns/op", Desc: "≤ 0.1× (≥ 10× faster)", NeedsClientGo: true, Check: ratioAtMost("ns/op", 0.1)},
	{Scenario: `^bench/Delivery/burst-distinct`, Metric: "events/s", Desc: "≥ 8×", NeedsClientGo: true, Check: ratioAtLeast("events/s", 8)},
	{Scenario: `^bench/Delivery/burst-identical`, Metric: "writes", Desc: "≤ 1×", NeedsClientGo: true, Check: ratioAtMost("writes", 1)},
	{Scenario: `^bench/Delivery/burst-identical-\d+(-defaults)?$`, Metric: "finalcount", Desc: "herald = recorded", Check: heraldEqualsMetric("finalcount", "recorded")},
	{Scenario: `^bench/Delivery/(shutdown|outage)`, Metric: "written", Desc: "herald = recorded", Check: heraldEqualsMetric("written", "recorded")},
	{Scenario: `^bench/Delivery/outage`, Metric: "ms-to-drain", Desc: "herald ≤ 1000", Check: heraldAtMost("ms-to-drain", 1000)},
	// One probe at a time while the server is down: with probes at most
	// 500 ms apart, a 3 s outage takes about 6 to 10 probes, plus the
	// requests that were under way when it began (the workers).
	{Scenario: `^bench/Delivery/outage`, Metric: "failed-writes", Desc: "herald ≤ 40 (probes, not keys × tries)", Check: heraldAtMost("failed-writes", 40)},
	// Issue 25: a lone engine at the defaults is not paced as a fleet.
	{Scenario: `^bench/Delivery/lone-lots-of-events`, Metric: "s-to-all", Desc: "herald ≤ 20 (0.9 of 50 writes/s after the burst of 100)", Check: heraldAtMost("s-to-all", 20)},
	{Scenario: `^bench/Delivery/lone-random-503`, Metric: "x-configured-rate", Desc: "herald ≥ 0.85", Check: func(h, _ map[string]float64) bool { return h["x-configured-rate"] >= 0.85 }},
	{Scenario: `^bench/Delivery/lone-outage`, Metric: "ms-to-drain-worst", Desc: "herald ≤ 1000", Check: heraldAtMost("ms-to-drain-worst", 1000)},
	{Scenario: `^bench/Delivery/lone-outage`, Metric: "written", Desc: "herald = recorded", Check: heraldEqualsMetric("written", "recorded")},
	{Scenario: `^bench/Delivery/lone-(lots|random)`, Metric: "delivered", Desc: "herald = recorded", Check: heraldEqualsMetric("delivered", "recorded")},
	{Scenario: `^bench/Delivery/`, Metric: "lost", Desc: "herald 0", Check: heraldEquals("lost", 0)},
	// Issue 8: a real kube-apiserver stopped for 5 s.
	{Scenario: `^server/Restart`, Metric: "stored", Desc: "herald = recorded", Check: heraldEqualsMetric("stored", "recorded")},
	// Counted from the server's first answer, about a second before its
	// /readyz says 200. Issue 25's 2 s was read from /readyz: from the
	// first answer, herald's write limit alone (50/s after a burst of
	// 100) takes 2 s to write the 200 events (floor-ms).
	{Scenario: `^server/Restart`, Metric: "settled-ms", Desc: "herald ≤ floor-ms + 500", Check: heraldAtMostPlus("settled-ms", 500, "floor-ms")},
	// Issue 13: a hundred controllers against one server, for each model of
	// it (issue 18: a per-second window, a token bucket; issue 25: a token
	// bucket with a second of burst, priority and fairness's queue,
	// max-in-flight, a capacity that steps), with fixed and jittered
	// latency. The peak is over the capacity within any one second. The
	// real kube-apiserver's fleet (FleetAPF) has no targets: its figures
	// are printed.
	//
	// Two models are held to their own bounds, as sink's
	// TestFleetSimulation holds them (its openTargets, which gives the
	// reasons; docs/measurements.md the figures). A token bucket with a
	// second of burst admits about twice its capacity in the second after
	// the return: its peak may pass 1.5x only by what the server stored,
	// with at most 0.5x the capacity refused in that second. Max-in-flight
	// whose latency stays flat (inflight-flat; inflight, whose latency
	// grows with its load as the API server's does, is held to the goal)
	// refuses as Erlang's B formula says, which no fleet of engines that
	// do not coordinate can meet both goals on: it is held to the bounds
	// it meets, so that a regression shows.
	// The peak is read over any one second. A per-second window admits
	// its capacity in each of its own seconds, up to twice it in one
	// second across two, and a fleet's requests bunch at its resets: its
	// peak may pass 1.5x by what the server stored, with at most 0.5x the
	// capacity refused in that second.
	{Scenario: `^server/Fleet/window/`, Metric: "peak-x-capacity", Desc: "herald ≤ 1.5, or past it with ≤ 0.5 refused in that second (the window admits up to 2x across two of its seconds)", Check: peakPastWithRefusedAtMost(1.5)},
	{Scenario: `^server/Fleet/bucket-1s/`, Metric: "peak-x-capacity", Desc: "herald ≤ 1.5, or past it only by what the server stored (≤ 0.5 refused)", Check: peakPastOnlyByAdmitted(1.5)},
	{Scenario: `^server/Fleet/inflight-flat/`, Metric: "writes/request", Desc: "herald ≥ 0.6 (Erlang B: ≥ 0.8 is out of reach)", Check: func(h, _ map[string]float64) bool { return h["writes/request"] >= 0.6 }},
	{Scenario: `^server/Fleet/inflight-flat/`, Metric: "peak-x-capacity", Desc: "herald ≤ 1.8 (Erlang B)", Check: heraldAtMost("peak-x-capacity", 1.8)},
	{Scenario: `^server/Fleet/inflight-flat/`, Metric: "s-to-first-batch", Desc: "herald ≤ 19 (Erlang B: ≥ 14.7)", Check: heraldAtMost("s-to-first-batch", 19)},
	{Scenario: `^server/Fleet/`, Metric: "stored", Desc: "herald = recorded", Check: heraldEqualsMetric("stored", "recorded")},
	{Scenario: `^server/Fleet/`, Metric: "max-requests-down-per-controller", Desc: "herald ≤ 10", Check: heraldAtMost("max-requests-down-per-controller", 10)},
	{Scenario: `^server/Fleet/`, Metric: "writes/request", Desc: "herald ≥ 0.8", Check: func(h, _ map[string]float64) bool { return h["writes/request"] >= 0.8 }},
	{Scenario: `^server/Fleet/`, Metric: "peak-x-capacity", Desc: "herald ≤ 1.5", Check: heraldAtMost("peak-x-capacity", 1.5)},
	{Scenario: `^server/Fleet/`, Metric: "s-to-first-batch", Desc: "herald ≤ 12", Check: heraldAtMost("s-to-first-batch", 12)},
	{Scenario: `^server/(Restart|Fleet/)`, Metric: "lost", Desc: "herald 0", Check: heraldEquals("lost", 0)},
	{Scenario: `^bench/Delivery/`, Metric: "goroutines-leaked", Desc: "herald 0", Check: heraldAtMost("goroutines-leaked", 0)},
	// The events package (events.k8s.io/v1) beside client-go's tools/events.
	{Scenario: `^bench/EventsEventf/`, Metric: "ns/op", Desc: "≤ 0.5×", NeedsClientGo: true, Check: ratioAtMost("ns/op", 0.5)},
	// The caller's path (nothing attached): with a sink started, allocs/op
	// also counts the pipeline's work on the other goroutines.
	{Scenario: `^bench/EventsEventf/sink=none`, Metric: "allocs/op", Desc: "herald ≤ 3 + arg-allocs/op", Check: heraldAtMostPlus("allocs/op", 3, "arg-allocs/op")},
	{Scenario: `^bench/EventsStorm`, Metric: "stale-after-flush", Desc: "herald 0", Check: heraldAtMost("stale-after-flush", 0)},
	{Scenario: `^bench/EventsStorm`, Metric: "over-counted", Desc: "herald 0", Check: heraldEquals("over-counted", 0)},
	{Scenario: `^bench/EventsShutdown`, Metric: "written", Desc: "herald = recorded", Check: heraldEqualsMetric("written", "recorded")},
	{Scenario: `^bench/Events`, Metric: "lost", Desc: "herald 0", Check: heraldEquals("lost", 0)},
	{Scenario: `^bench/Events`, Metric: "goroutines-leaked", Desc: "herald 0", Check: heraldAtMost("goroutines-leaked", 0)},
	{Scenario: `^controllerruntime/ManagerShutdown`, Metric: "lost", Desc: "herald 0", Check: heraldEquals("lost", 0)},
}

// Legend explains the table; Markdown prints it under the table.
var Legend = []string{
	"Ratio = herald / client-go (tools/record, at the version go.mod selects), both run in the same `go test` process on the same scenario; " +
		"below 1 means herald is lower (faster, fewer writes, fewer lost).",
	"Eventf, EventfParallel: `recorder.Eventf(pod, \"Warning\", \"InvalidSpec\", \"key %q: %d\", \"mode\", 3)` with default options, " +
		"a sink watcher on a sink that returns at once, klog output formatted and discarded. ns/op is the caller's time, " +
		"including the CPU the pipeline behind it takes on the same cores. The same event in a tight loop outruns both pipelines: " +
		"dropped/op is the share of calls that took the drop path at the full incoming queue (part of the cost; " +
		"client-go logs each such drop with the whole event, herald counts it and logs at a bounded rate).",
	"Delivery/*: one run per implementation on the real clock, sink = sinktest.Sink with 1 ms latency per call " +
		"(ms-per-write: the mean wall time of a sink call as this machine delivers it; with W workers herald cannot exceed " +
		"W / ms-per-write events/s, client-go, which writes from one goroutine, 1 / ms-per-write). dropped = events the library reports giving up on: herald counts them " +
		"(Stats().Dropped.Total() + Abandoned); client-go counts nothing, so its per-event error logs are counted. " +
		"lost = recorded − delivered (or written, or final count) − dropped: gone without a count or a log line. " +
		"Herald is observed until Flush returns; client-go until its sink saw no new write for 2 s (15 s at most), then both are shut down.",
	"events/s = delivered / (last write − start of the burst); ms-to-final = start of the burst → last write; " +
		"ms-to-drain = end of the outage → last write; shutdown-ms = time Shutdown took; " +
		"goroutines-leaked = goroutines left 2 s after Shutdown compared to before the broadcaster was made.",
	"Events*: herald's events package beside client-go's tools/events (the same version) (events.k8s.io/v1), both writing to the same " +
		"in-memory events.k8s.io/v1 sink (bench.EventsSink, 1 ms per call) on the real clock; after each client-go run its recording " +
		"context is cancelled and its goroutines are waited for, so they do not run during the next measurement. " +
		"EventsEventf: `Eventf(pod, nil, \"Warning\", \"InvalidSpec\", \"Sync\", \"key %q: %d\", \"mode\", 3)` with default options, " +
		"sink=none before any StartRecordingToSinkWithContext, sink=started after it (the same event each time: one series). " +
		"client-go's Eventf starts one goroutine per call and its pipeline one more per event: ns/op is what the caller pays, " +
		"with that work running on the other core; allocs/op counts every allocation made during the loop, the pipeline's included; " +
		"arg-allocs/op is what the caller's arguments cost alone (the variadic slice). " +
		"stale-* = Σ over the objects of (occurrences − stored series count). writes = Create + Patch calls.",
	"Delivery/lone-*: one broadcaster at herald's defaults against a sink with 1 ms latency (issue 25): lone-lots-of-events is client-go's " +
		"TestLotsOfEvents (1,000 events, each refused four times with a plain error), both with WithSleepDuration(0) as that test; " +
		"lone-random-503 fails 10% of the calls at random with 503, x-configured-rate = (delivered − the burst of 100) / (50/s × s-to-all); " +
		"lone-outage records 1,500 at the start of a 3 s outage (503), the write limit off, five times: ms-to-drain-worst is the longest of the five.",
	"Fleet/<model>/<latency>/<settings>: the loopback server's models are in internal/testing/bench/server/model.go (each one's benchnote says its settings); " +
		"latency=fixed adds 2 ms to every request, latency=jittered 2 ms plus up to 20 ms at random; client-go runs with the fixed latency only. " +
		"peak-x-capacity = the most requests that arrived in one second over the capacity of that second; jain-early = Jain's fairness index " +
		"(Σx)² / (n·Σx²) of the requests the server admitted from each controller in the first 5 s after the return (1: equal shares). " +
		"The fleet summary under the table has one row per run.",
	"controllerruntime/ManagerShutdown: a controller-runtime v0.25.2 manager against the real kube-apiserver whose runnable records " +
		"1,000 distinct events with GetEventRecorder when its context ends, then the manager stops: herald = heraldcr.NewManager, " +
		"client-go = manager.New with controller-runtime's own recorder (client-go's tools/events). written = stored when Start has " +
		"returned; written-after-5s = stored 5 s later; lost = recorded − written-after-5s; shutdown-ms = cancel → Start returned.",
}

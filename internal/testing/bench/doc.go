// Package bench compares herald with client-go's tools/record.
//
// Its benchmarks (delivery_bench_test.go) run each delivery scenario once per
// implementation, as sub-benchmarks named .../impl=herald and
// .../impl=client-go, against the same in-memory sink (sink/sinktest) with
// the same latency and faults, and report what happened to the events with
// b.ReportMetric: delivered, dropped (counted), lost (silently), events/s,
// API writes, goroutines left behind. The package itself holds the helpers
// those benchmarks and record's Eventf benchmarks share: objects, sinks, a
// klog capture that counts client-go's per-event drop logs, and an observer
// of a sink's progress.
//
// The Events* benchmarks (events_bench_test.go) compare herald's events
// package with client-go's tools/events (events.k8s.io/v1) the same way,
// writing to an in-memory events.k8s.io/v1 sink, [EventsSink]: the cost of
// Eventf, a crash-loop storm (how stale the stored series counts are), a
// shutdown right after 3,000 events, and the goroutines of a burst.
//
// `make bench` runs these benchmarks with record's and correlator's, saves
// the raw output to bench.out and prints a table of herald / client-go
// ratios with [github.com/heraldk8s/herald/internal/cmd/benchtable].
package bench

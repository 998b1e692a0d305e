package metrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/record/metrics"
	"github.com/heraldk8s/herald/sink"
)

// Each event counter and gauge exports its own field of Stats: every field
// here has a value of its own, so a metric reading another field shows.
func TestEventMetricsReadTheirOwnFields(t *testing.T) {
	src := fixedStats{record.Stats{
		Recorded: 101, Aggregated: 102, CacheEvictions: 103, Filtered: 104, Queued: 105,
		Stats: sink.Stats{Created: 106, Patched: 107, Coalesced: 108, Retried: 109, Abandoned: 110,
			Pending: 111, InFlight: 112, Dropped: sink.Drops{Invalid: 113, AfterShutdown: 114}},
	}}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(src, prometheus.Labels{"controller": "c"}))
	want := `
# HELP herald_events_recorded_total Events passed to a recorder (Event, Eventf, AnnotatedEventf).
# TYPE herald_events_recorded_total counter
herald_events_recorded_total{controller="c"} 101
# HELP herald_events_aggregated_total Events folded into a combined event by the aggregator.
# TYPE herald_events_aggregated_total counter
herald_events_aggregated_total{controller="c"} 102
# HELP herald_events_cache_evictions_total Entries evicted from the correlators' LRU caches.
# TYPE herald_events_cache_evictions_total counter
herald_events_cache_evictions_total{controller="c"} 103
# HELP herald_events_filtered_total Events skipped by the spam filter.
# TYPE herald_events_filtered_total counter
herald_events_filtered_total{controller="c"} 104
# HELP herald_events_queued Events accepted by the broadcaster but not yet taken by a sink.
# TYPE herald_events_queued gauge
herald_events_queued{controller="c"} 105
# HELP herald_events_written_total Successful event writes to the API server.
# TYPE herald_events_written_total counter
herald_events_written_total{controller="c",op="create"} 106
herald_events_written_total{controller="c",op="patch"} 107
# HELP herald_events_coalesced_total Events whose count reached the API server in a later write of the same event.
# TYPE herald_events_coalesced_total counter
herald_events_coalesced_total{controller="c"} 108
# HELP herald_events_retries_total Failed event writes that were scheduled again.
# TYPE herald_events_retries_total counter
herald_events_retries_total{controller="c"} 109
# HELP herald_events_abandoned_total Events still unwritten when shutdown gave up.
# TYPE herald_events_abandoned_total counter
herald_events_abandoned_total{controller="c"} 110
# HELP herald_events_pending Events waiting in the delivery engines.
# TYPE herald_events_pending gauge
herald_events_pending{controller="c"} 111
# HELP herald_events_in_flight Events in a write under way.
# TYPE herald_events_in_flight gauge
herald_events_in_flight{controller="c"} 112
`
	names := []string{"herald_events_recorded_total", "herald_events_aggregated_total", "herald_events_cache_evictions_total",
		"herald_events_filtered_total", "herald_events_queued", "herald_events_written_total", "herald_events_coalesced_total",
		"herald_events_retries_total", "herald_events_abandoned_total", "herald_events_pending", "herald_events_in_flight"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	for reason, v := range map[string]float64{"invalid": 113, "after_shutdown": 114, "queue_full": 0} {
		if got := testutil.ToFloat64(droppedFor(t, reg, reason)); got != v {
			t.Errorf("herald_events_dropped_total{reason=%q} = %v, want %v", reason, got, v)
		}
	}
}

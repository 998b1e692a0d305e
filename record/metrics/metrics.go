package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldk8s/herald/internal/nilcheck"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// StatsSource is what the collector reads; record.EventBroadcaster is one.
type StatsSource interface {
	Stats() record.Stats
}

// Collector is a prometheus.Collector over a broadcaster's Stats. It is safe
// for concurrent use.
type Collector struct {
	src StatsSource
	err error // the source is nil: registering fails, collecting reports it

	recorded, written, coalesced, filtered, aggregated, dropped, retries, abandoned,
	evictions, queued, pending, inFlight *prometheus.Desc

	// The delivery engines' view of the API server.
	probing, shedding, probes, writeRate, rateCuts, heldBack, oldestPending *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// errNilSource is what a collector of a nil source reports.
var errNilSource = errors.New("herald metrics: NewCollector was given a nil source")

// NewCollector returns a collector reading src. constLabels may be nil. A
// nil src (or a typed nil) makes a collector that a registry refuses
// (Register returns the error, MustRegister panics, at startup) and that,
// collected unregistered, reports the error instead of panicking at a
// scrape.
func NewCollector(src StatsSource, constLabels prometheus.Labels) *Collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("herald_events_"+name, help, labels, constLabels)
	}
	var err error
	if nilcheck.IsNil(src) {
		err = errNilSource
	}
	return &Collector{
		src:        src,
		err:        err,
		recorded:   d("recorded_total", "Events passed to a recorder (Event, Eventf, AnnotatedEventf)."),
		written:    d("written_total", "Successful event writes to the API server.", "op"),
		coalesced:  d("coalesced_total", "Events whose count reached the API server in a later write of the same event."),
		filtered:   d("filtered_total", "Events skipped by the spam filter."),
		aggregated: d("aggregated_total", "Events folded into a combined event by the aggregator."),
		dropped:    d("dropped_total", "Events given up for good, by reason.", "reason"),
		retries:    d("retries_total", "Failed event writes that were scheduled again."),
		abandoned:  d("abandoned_total", "Events still unwritten when shutdown gave up."),
		evictions:  d("cache_evictions_total", "Entries evicted from the correlators' LRU caches."),
		queued:     d("queued", "Events accepted by the broadcaster but not yet taken by a sink."),
		pending:    d("pending", "Events waiting in the delivery engines."),
		inFlight:   d("in_flight", "Events in a write under way."),

		probing: prometheus.NewDesc("herald_server_probing",
			"1 while a sink has seen the API server fail (transport errors, timeouts, 5xx, or 429 with nothing accepted lately) and sends one probe at a time, else 0.", nil, constLabels),
		shedding: prometheus.NewDesc("herald_server_shedding",
			"1 while a sink's API server sheds load (it answered 429 within its Retry-After while accepting other writes) and no sink sees it down, else 0.", nil, constLabels),
		probes: prometheus.NewDesc("herald_server_probes_total",
			"Requests sent as probes while the API server was seen down.", nil, constLabels),
		writeRate: prometheus.NewDesc("herald_write_rate",
			"Current write budget of the sinks in writes per second: the configured limit, or less after 429s (+Inf: no limit).", nil, constLabels),
		rateCuts: prometheus.NewDesc("herald_write_rate_cuts_total",
			"Times a 429 from the API server, or its round trips telling of a queue, cut a sink's write rate.", nil, constLabels),
		heldBack:      d("held_back", "Pending events waiting only because the API server is seen down, asked them to retry later (429 Retry-After), or the write rate (or the in-flight window) is spent."),
		oldestPending: d("oldest_pending_seconds", "Age of the oldest event not yet written (0 when none is)."),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	if c.err != nil {
		ch <- prometheus.NewInvalidDesc(c.err)
		return
	}
	for _, d := range []*prometheus.Desc{c.recorded, c.written, c.coalesced, c.filtered, c.aggregated,
		c.dropped, c.retries, c.abandoned, c.evictions, c.queued, c.pending, c.inFlight,
		c.probing, c.shedding, c.probes, c.writeRate, c.rateCuts, c.heldBack, c.oldestPending} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if c.err != nil {
		ch <- prometheus.NewInvalidMetric(prometheus.NewInvalidDesc(c.err), c.err)
		return
	}
	s := c.src.Stats()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	counter(c.recorded, s.Recorded)
	counter(c.written, s.Created, "create")
	counter(c.written, s.Patched, "patch")
	counter(c.coalesced, s.Coalesced)
	counter(c.filtered, s.Filtered)
	counter(c.aggregated, s.Aggregated)
	for reason, n := range s.Dropped.ByReason() {
		counter(c.dropped, n, reason)
	}
	counter(c.retries, s.Retried)
	counter(c.abandoned, s.Abandoned)
	counter(c.evictions, s.CacheEvictions)
	gauge(c.queued, float64(s.Queued))
	gauge(c.pending, float64(s.Pending))
	gauge(c.inFlight, float64(s.InFlight))
	probing := 0.0
	if s.Server == sink.ServerProbing {
		probing = 1
	}
	gauge(c.probing, probing)
	shedding := 0.0
	if s.Server == sink.ServerShedding {
		shedding = 1
	}
	gauge(c.shedding, shedding)
	counter(c.probes, s.Probes)
	gauge(c.writeRate, s.WriteRate)
	counter(c.rateCuts, s.RateCuts)
	gauge(c.heldBack, float64(s.HeldBack))
	gauge(c.oldestPending, s.OldestPending.Seconds())
}

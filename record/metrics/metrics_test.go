package metrics_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/record/metrics"
	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestScrape(t *testing.T) {
	eb := record.NewBroadcaster(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited}),
		record.WithCorrelatorOptions(record.CorrelatorOptions{DisableSpamFilter: true}))
	defer eb.Shutdown()
	eb.StartRecordingToSink(sinktest.New())
	rec := eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: "test"})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	rec.Event(pod, v1.EventTypeNormal, "Started", "first")
	if err := eb.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec.Event(pod, v1.EventTypeNormal, "Started", "first")
	rec.Event(nil, v1.EventTypeNormal, "Bad", "nil object")
	rec.Event(pod, "Bogus", "Bad", "bad type")
	if err := eb.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(eb, prometheus.Labels{"controller": "demo"}))
	want := `
# HELP herald_events_recorded_total Events passed to a recorder (Event, Eventf, AnnotatedEventf).
# TYPE herald_events_recorded_total counter
herald_events_recorded_total{controller="demo"} 4
# HELP herald_events_written_total Successful event writes to the API server.
# TYPE herald_events_written_total counter
herald_events_written_total{controller="demo",op="create"} 1
herald_events_written_total{controller="demo",op="patch"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "herald_events_recorded_total", "herald_events_written_total"); err != nil {
		t.Fatal(err)
	}
	got, err := testutil.GatherAndCount(reg, "herald_events_dropped_total")
	if err != nil || got != len(sink.Drops{}.ByReason()) {
		t.Fatalf("dropped series %d, %v", got, err)
	}
	invalid := testutil.ToFloat64(droppedFor(t, reg, "invalid"))
	if invalid != 2 {
		t.Fatalf("dropped{reason=invalid} = %v", invalid)
	}
	if problems, err := testutil.CollectAndLint(metrics.NewCollector(eb, nil)); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}

// droppedFor returns a collector exposing just one series of the gathered
// dropped counter.
func droppedFor(t *testing.T, reg *prometheus.Registry, reason string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "herald_events_dropped_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x"}, func() float64 { return m.GetCounter().GetValue() })
				}
			}
		}
	}
	t.Fatalf("no dropped series for %q", reason)
	return nil
}

type fixedStats struct{ s record.Stats }

func (f fixedStats) Stats() record.Stats { return f.s }

// The engines' view of the API server is exported as it is in Stats.
func TestServerStateMetrics(t *testing.T) {
	src := fixedStats{record.Stats{Stats: sink.Stats{Server: sink.ServerProbing, Probes: 4, WriteRate: 12.5, RateCuts: 2, HeldBack: 7, OldestPending: 3 * time.Second}}}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(src, nil))
	want := `
# HELP herald_server_probing 1 while a sink has seen the API server fail (transport errors, timeouts, 5xx, or 429 with nothing accepted lately) and sends one probe at a time, else 0.
# TYPE herald_server_probing gauge
herald_server_probing 1
# HELP herald_server_shedding 1 while a sink's API server sheds load (it answered 429 within its Retry-After while accepting other writes) and no sink sees it down, else 0.
# TYPE herald_server_shedding gauge
herald_server_shedding 0
# HELP herald_server_probes_total Requests sent as probes while the API server was seen down.
# TYPE herald_server_probes_total counter
herald_server_probes_total 4
# HELP herald_write_rate Current write budget of the sinks in writes per second: the configured limit, or less after 429s (+Inf: no limit).
# TYPE herald_write_rate gauge
herald_write_rate 12.5
# HELP herald_write_rate_cuts_total Times a 429 from the API server, or its round trips telling of a queue, cut a sink's write rate.
# TYPE herald_write_rate_cuts_total counter
herald_write_rate_cuts_total 2
# HELP herald_events_held_back Pending events waiting only because the API server is seen down, asked them to retry later (429 Retry-After), or the write rate (or the in-flight window) is spent.
# TYPE herald_events_held_back gauge
herald_events_held_back 7
# HELP herald_events_oldest_pending_seconds Age of the oldest event not yet written (0 when none is).
# TYPE herald_events_oldest_pending_seconds gauge
herald_events_oldest_pending_seconds 3
`
	names := []string{"herald_server_probing", "herald_server_shedding", "herald_server_probes_total", "herald_write_rate", "herald_write_rate_cuts_total",
		"herald_events_held_back", "herald_events_oldest_pending_seconds"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	// Shedding, short of probing.
	shed := prometheus.NewPedanticRegistry()
	shed.MustRegister(metrics.NewCollector(fixedStats{record.Stats{Stats: sink.Stats{Server: sink.ServerShedding}}}, nil))
	for name, v := range map[string]float64{"herald_server_probing": 0, "herald_server_shedding": 1} {
		mfs, err := shed.Gather()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, mf := range mfs {
			if mf.GetName() == name {
				found = true
				if got := mf.GetMetric()[0].GetGauge().GetValue(); got != v {
					t.Errorf("%s = %v while shedding, want %v", name, got, v)
				}
			}
		}
		if !found {
			t.Errorf("%s not exported", name)
		}
	}
	if problems, err := testutil.CollectAndLint(metrics.NewCollector(src, nil)); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}

// A collector of a nil source (or a typed nil) is refused when registered,
// with its error, and collected unregistered it reports the error: it never
// panics at a scrape, where nothing would recover it.
func TestNilSourceIsRefused(t *testing.T) {
	var typedNil record.EventBroadcaster = (*nilBroadcaster)(nil)
	for name, src := range map[string]metrics.StatsSource{"nil": nil, "typed nil": typedNil} {
		reg := prometheus.NewPedanticRegistry()
		if err := reg.Register(metrics.NewCollector(src, nil)); err == nil || !strings.Contains(err.Error(), "nil source") {
			t.Errorf("%s: Register = %v, want the nil source's error", name, err)
		}
		unchecked := prometheus.NewRegistry()
		unchecked.MustRegister(uncheckedCollector{metrics.NewCollector(src, nil)})
		if _, err := unchecked.Gather(); err == nil || !strings.Contains(err.Error(), "nil source") {
			t.Errorf("%s: Gather = %v, want the nil source's error", name, err)
		}
	}
}

// nilBroadcaster is a broadcaster type whose nil pointer is a typed nil
// source.
type nilBroadcaster struct{ record.EventBroadcaster }

// uncheckedCollector hides Describe's descriptors: the registry collects it
// without checking them.
type uncheckedCollector struct{ c *metrics.Collector }

func (u uncheckedCollector) Describe(chan<- *prometheus.Desc)    {}
func (u uncheckedCollector) Collect(ch chan<- prometheus.Metric) { u.c.Collect(ch) }

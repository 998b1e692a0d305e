package monitoring

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/record/metrics"
	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// targetLabels are the labels Prometheus attaches to every series it
// scrapes; the rules and the dashboard may use them on any metric.
var targetLabels = []string{"job", "instance"}

// family is what the registry says about one metric family: its type, its
// label names and the label values seen.
type family struct {
	typ    dto.MetricType
	labels map[string]bool
	values map[string]map[string]bool // label -> values seen
	series []map[string]string        // the label sets gathered
}

// catalog maps metric family names to what was gathered.
type catalog map[string]*family

func newCatalog(mfs []*dto.MetricFamily) catalog {
	c := catalog{}
	for _, mf := range mfs {
		f := &family{typ: mf.GetType(), labels: map[string]bool{}, values: map[string]map[string]bool{}}
		for _, m := range mf.GetMetric() {
			ls := map[string]string{}
			for _, lp := range m.GetLabel() {
				ls[lp.GetName()] = lp.GetValue()
				f.labels[lp.GetName()] = true
				if f.values[lp.GetName()] == nil {
					f.values[lp.GetName()] = map[string]bool{}
				}
				f.values[lp.GetName()][lp.GetValue()] = true
			}
			f.series = append(f.series, ls)
		}
		c[mf.GetName()] = f
	}
	return c
}

// lookup returns the labels a series named name carries as scraped (the
// family's labels, le for a histogram's buckets, quantile for a summary's
// quantiles, and the target labels), the family, and whether the name is
// exported at all. Histograms and summaries are exposed as name_bucket,
// name_sum and name_count series (and the summary's quantiles under name
// itself), and a query names those.
func (c catalog) lookup(name string) (map[string]bool, *family, bool) {
	with := func(f *family, extra ...string) (map[string]bool, *family, bool) {
		ls := map[string]bool{}
		for l := range f.labels {
			ls[l] = true
		}
		for _, l := range append(extra, targetLabels...) {
			ls[l] = true
		}
		return ls, f, true
	}
	if f, ok := c[name]; ok {
		switch f.typ {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			// A classic histogram has no series under its bare name.
			return nil, nil, false
		case dto.MetricType_SUMMARY:
			return with(f, "quantile")
		}
		return with(f)
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		f, ok := c[base]
		if !ok {
			continue
		}
		switch {
		case f.typ == dto.MetricType_HISTOGRAM || f.typ == dto.MetricType_GAUGE_HISTOGRAM:
			if suffix == "_bucket" {
				return with(f, "le")
			}
			return with(f)
		case f.typ == dto.MetricType_SUMMARY && suffix != "_bucket":
			return with(f)
		}
	}
	return nil, nil, false
}

// names returns the family names, sorted.
func (c catalog) names() []string {
	var ns []string
	for n := range c {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// heraldCatalog runs a broadcaster over a fake sink, records events of every
// kind the metrics count (written by create and patch, one dropped by the
// recorder as invalid, one dropped by the engine as forbidden), registers
// record/metrics' collector in a registry of its own, and gathers it.
func heraldCatalog(t *testing.T) catalog {
	t.Helper()
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	b := record.NewBroadcaster(record.WithSinkOptions(sink.Options{Clock: clock, QPS: sink.Unlimited}),
		record.WithLogger(logr.Discard())) // the drops below are meant
	defer b.Shutdown()
	fake := sinktest.New()
	fake.SetFault(func(_ context.Context, _ sinktest.Op, ev *v1.Event) error {
		if ev.Reason == "Denied" {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, ev.Name, errors.New("RBAC says no"))
		}
		return nil
	})
	w := b.StartRecordingToSink(fake)
	defer w.Stop()
	rec := b.NewRecorder(scheme.Scheme, v1.EventSource{Component: "monitoring-test"})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web-0"}}
	rec.Event(pod, v1.EventTypeNormal, "Started", "started")
	if err := b.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec.Event(pod, v1.EventTypeNormal, "Started", "started") // a patch of the same event
	rec.Event(pod, "Critical", "Bad", "not an event type")   // dropped as invalid
	rec.Event(pod, v1.EventTypeWarning, "Denied", "refused") // dropped as forbidden
	if err := b.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(b, nil))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	c := newCatalog(mfs)

	// The registry saw what was recorded, so the names and labels compared
	// below are those of a working broadcaster.
	value := func(name string, label, val string) float64 {
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					if lp.GetName() == label && lp.GetValue() == val {
						return m.GetCounter().GetValue()
					}
				}
			}
		}
		return -1
	}
	for _, want := range []struct {
		name, label, value string
		n                  float64
	}{
		{"herald_events_written_total", "op", "create", 1},
		{"herald_events_written_total", "op", "patch", 1},
		{"herald_events_dropped_total", "reason", "invalid", 1},
		{"herald_events_dropped_total", "reason", "forbidden", 1},
	} {
		if got := value(want.name, want.label, want.value); got != want.n {
			t.Fatalf("%s{%s=%q} = %v, want %v", want.name, want.label, want.value, got, want.n)
		}
	}
	return c
}

func TestCatalogHasEveryReason(t *testing.T) {
	c := heraldCatalog(t)
	f := c["herald_events_dropped_total"]
	if f == nil {
		t.Fatal("herald_events_dropped_total not gathered")
	}
	for r := range (sink.Drops{}).ByReason() {
		if !f.values["reason"][r] {
			t.Errorf("reason %q has no series", r)
		}
	}
}

func TestCatalogLookup(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "demo_latency_seconds", Help: "h"}, []string{"op"})
	h.WithLabelValues("create").Observe(0.1)
	s := prometheus.NewSummary(prometheus.SummaryOpts{Name: "demo_size_bytes", Help: "s", Objectives: map[float64]float64{0.5: 0.05}})
	s.Observe(3)
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "demo_queue", Help: "g"})
	reg.MustRegister(h, s, g)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	c := newCatalog(mfs)
	for _, tc := range []struct {
		name   string
		labels string // sorted, comma-separated; "-" when not exported
	}{
		{"demo_latency_seconds_bucket", "instance,job,le,op"},
		{"demo_latency_seconds_sum", "instance,job,op"},
		{"demo_latency_seconds_count", "instance,job,op"},
		{"demo_latency_seconds", "-"},
		{"demo_size_bytes", "instance,job,quantile"},
		{"demo_size_bytes_count", "instance,job"},
		{"demo_size_bytes_bucket", "-"},
		{"demo_queue", "instance,job"},
		{"demo_queue_count", "-"},
		{"demo_missing", "-"},
	} {
		ls, _, ok := c.lookup(tc.name)
		got := "-"
		if ok {
			got = strings.Join(sortedKeys(ls), ",")
		}
		if got != tc.labels {
			t.Errorf("lookup(%q) = %s, want %s", tc.name, got, tc.labels)
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func describe(ls map[string]bool) string {
	return fmt.Sprintf("{%s}", strings.Join(sortedKeys(ls), ", "))
}

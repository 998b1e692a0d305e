package monitoring

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// The rules are evaluated here with Prometheus' own PromQL engine over
// series written in promtool's notation ("0+10x30": 31 samples, one a
// minute, from 0 up by 10), once a minute as a rule group does, and an
// alert fires as Prometheus' AlertingRule makes it: a series the
// expression returned at every evaluation since it first appeared fires
// once that is at least the rule's for: ago.

const step = time.Minute

// fsample is a float sample.
type fsample struct {
	t int64
	f float64
}

func (s fsample) T() int64                      { return s.t }
func (s fsample) ST() int64                     { return 0 }
func (s fsample) F() float64                    { return s.f }
func (s fsample) H() *histogram.Histogram       { return nil }
func (s fsample) FH() *histogram.FloatHistogram { return nil }
func (s fsample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s fsample) Copy() chunks.Sample           { return s }

// seriesSet iterates over a slice of series.
type seriesSet struct {
	s []storage.Series
	i int
}

func (s *seriesSet) Next() bool                        { s.i++; return s.i < len(s.s) }
func (s *seriesSet) At() storage.Series                { return s.s[s.i] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }

// load returns a storage holding the series described, one sample per
// step from time 0.
func load(t *testing.T, descs ...string) storage.Queryable {
	t.Helper()
	p := parser.NewParser(parser.Options{})
	var all []storage.Series
	for _, d := range descs {
		lset, vals, err := p.ParseSeriesDesc(d)
		if err != nil {
			t.Fatalf("series %q: %v", d, err)
		}
		var ss []chunks.Sample
		for i, v := range vals {
			if !v.Omitted {
				ss = append(ss, fsample{t: int64(i) * step.Milliseconds(), f: v.Value})
			}
		}
		all = append(all, storage.NewListSeries(lset, ss))
	}
	slices.SortFunc(all, func(a, b storage.Series) int { return labels.Compare(a.Labels(), b.Labels()) })
	return &storage.MockQueryable{MockQuerier: &storage.MockQuerier{
		SelectMockFunction: func(_ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
			var out []storage.Series
			for _, s := range all {
				if matchAll(s.Labels(), ms) {
					out = append(out, s)
				}
			}
			return &seriesSet{s: out, i: -1}
		},
	}}
}

func matchAll(ls labels.Labels, ms []*labels.Matcher) bool {
	for _, m := range ms {
		if !m.Matches(ls.Get(m.Name)) {
			return false
		}
	}
	return true
}

func newEngine() *promql.Engine {
	return promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
}

// instant evaluates expr at time at.
func instant(t *testing.T, engine *promql.Engine, q storage.Queryable, expr string, at time.Duration) promql.Vector {
	t.Helper()
	qry, err := engine.NewInstantQuery(context.Background(), q, nil, expr, time.UnixMilli(at.Milliseconds()))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	defer qry.Close()
	vec, err := qry.Exec(context.Background()).Vector()
	if err != nil {
		t.Fatalf("%s at %v: %v", expr, at, err)
	}
	return vec
}

// firstFiring evaluates rule every step from 0 to end and returns, for
// every series that fired, the first evaluation at which it was firing.
func firstFiring(t *testing.T, q storage.Queryable, rule rulefmt.Rule, end time.Duration) map[string]time.Duration {
	t.Helper()
	engine := newEngine()
	defer engine.Close()
	activeAt := map[string]time.Duration{}
	fired := map[string]time.Duration{}
	for at := time.Duration(0); at <= end; at += step {
		vec := instant(t, engine, q, rule.Expr, at)
		now := map[string]bool{}
		for _, s := range vec {
			k := s.Metric.DropMetricName().String()
			now[k] = true
			if _, ok := activeAt[k]; !ok {
				activeAt[k] = at
			}
			if _, ok := fired[k]; !ok && at-activeAt[k] >= time.Duration(rule.For) {
				fired[k] = at
			}
		}
		for k := range activeAt {
			if !now[k] {
				delete(activeAt, k) // resolved: pending starts over
			}
		}
	}
	return fired
}

// TestAlertsFire feeds each alert series that must make it fire (within
// the window given) and series that must not, among them the expected drop
// reasons, a short burst of drops, a server seen down for two minutes and
// a state that flaps.
func TestAlertsFire(t *testing.T) {
	rules := map[string]rulefmt.Rule{}
	for _, g := range parseRules(t).Groups {
		for _, r := range g.Rules {
			rules[r.Alert] = r
		}
	}
	type want struct {
		series             string // labels of the alert, as PromQL prints them
		earliest, deadline time.Duration
	}
	const end = 40 * time.Minute
	for _, tc := range []struct {
		alert  string
		series []string
		fire   []want
	}{{
		alert: "HeraldEventsDropped",
		series: []string{
			`herald_events_dropped_total{job="c",instance="a",reason="forbidden"} 0+10x40`,
			`herald_events_dropped_total{job="c",instance="a",reason="already_exists"} 0+10x40`,
			`herald_events_dropped_total{job="c",instance="a",reason="namespace_terminating"} 0+10x40`,
			`herald_events_dropped_total{job="c",instance="a",reason="after_shutdown"} 0+10x40`,
			`herald_events_dropped_total{job="c",instance="a",reason="invalid"} 0x40`,
			// One burst of 30 drops: not for 15 minutes.
			`herald_events_dropped_total{job="c",instance="a",reason="queue_full"} 0x10 30x30`,
			// A controller that restarted (the counter reset) while
			// dropping all along.
			`herald_events_dropped_total{job="c",instance="b",reason="pending_full"} 0+5x20 0+5x20`,
		},
		fire: []want{
			{`{instance="a", job="c", reason="forbidden"}`, 15 * time.Minute, 17 * time.Minute},
			{`{instance="b", job="c", reason="pending_full"}`, 15 * time.Minute, 17 * time.Minute},
		},
	}, {
		alert: "HeraldEventsDroppedHighRatio",
		series: []string{
			`herald_events_recorded_total{job="c",instance="a"} 0+100x40`,
			`herald_events_dropped_total{job="c",instance="a",reason="forbidden"} 0+15x40`,
			`herald_events_dropped_total{job="c",instance="a",reason="rejected"} 0+5x40`,
			`herald_events_dropped_total{job="c",instance="a",reason="already_exists"} 0+100x40`,
			// 5% dropped: not enough.
			`herald_events_recorded_total{job="c",instance="b"} 0+100x40`,
			`herald_events_dropped_total{job="c",instance="b",reason="forbidden"} 0+5x40`,
			`herald_events_dropped_total{job="c",instance="b",reason="namespace_terminating"} 0+90x40`,
			// Nothing recorded, nothing dropped.
			`herald_events_recorded_total{job="c",instance="d"} 0x40`,
			`herald_events_dropped_total{job="c",instance="d",reason="forbidden"} 0x40`,
		},
		fire: []want{{`{instance="a", job="c"}`, 15 * time.Minute, 17 * time.Minute}},
	}, {
		alert: "HeraldAPIServerUnreachable",
		series: []string{
			`herald_server_probing{job="c",instance="down"} 0 0 1x38`,
			// Two of three scrapes probing: down, with short recoveries.
			`herald_server_probing{job="c",instance="flaps"} ` + strings.Repeat("1 1 0 ", 14),
			`herald_server_probing{job="c",instance="blip"} 0 0 1 1 0x36`,
			`herald_server_probing{job="c",instance="ok"} 0x40`,
		},
		fire: []want{
			{`{instance="down", job="c"}`, 7 * time.Minute, 10 * time.Minute},
			{`{instance="flaps", job="c"}`, 5 * time.Minute, 10 * time.Minute},
		},
	}, {
		alert: "HeraldAPIServerSheddingLoad",
		series: []string{
			`herald_server_shedding{job="c",instance="shed"} 0 0 1x38`,
			`herald_server_shedding{job="c",instance="blip"} 0 0 1x4 0x34`,
			`herald_server_shedding{job="c",instance="ok"} 0x40`,
		},
		fire: []want{{`{instance="shed", job="c"}`, 12 * time.Minute, 20 * time.Minute}},
	}, {
		alert: "HeraldEventsPendingNearLimit",
		series: []string{
			`herald_events_pending{job="c",instance="full"} 0 0 9000x38`,
			`herald_events_pending{job="c",instance="busy"} 7000x40`,
			`herald_events_pending{job="c",instance="spikes"} ` + strings.Repeat("0 9000 ", 21),
		},
		fire: []want{{`{instance="full", job="c"}`, 7 * time.Minute, 8 * time.Minute}},
	}, {
		alert: "HeraldOldestPendingEventTooOld",
		series: []string{
			// An event stuck from minute 2: 60 s older every minute.
			`herald_events_oldest_pending_seconds{job="c",instance="stuck"} 0 0 0+60x38`,
			// Events written within two minutes, all along.
			`herald_events_oldest_pending_seconds{job="c",instance="busy"} 0 ` + strings.Repeat("120 60 ", 20),
		},
		fire: []want{{`{instance="stuck", job="c"}`, 13 * time.Minute, 14 * time.Minute}},
	}} {
		t.Run(tc.alert, func(t *testing.T) {
			rule, ok := rules[tc.alert]
			if !ok {
				t.Fatalf("no alert %s in alerts.yaml", tc.alert)
			}
			delete(rules, tc.alert)
			got := firstFiring(t, load(t, tc.series...), rule, end)
			for _, w := range tc.fire {
				at, ok := got[w.series]
				switch {
				case !ok:
					t.Errorf("%s did not fire (fired: %s)", w.series, firingString(got))
				case at < w.earliest || at > w.deadline:
					t.Errorf("%s fired at %v, want within [%v, %v]", w.series, at, w.earliest, w.deadline)
				}
				delete(got, w.series)
			}
			for s, at := range got {
				t.Errorf("%s fired at %v, want never", s, at)
			}
		})
	}
	for name := range rules {
		t.Errorf("alert %s has no test here", name)
	}
}

// firingString is for failure messages.
func firingString(m map[string]time.Duration) string {
	var b strings.Builder
	for k, v := range m {
		fmt.Fprintf(&b, "%s at %v; ", k, v)
	}
	return b.String()
}

// TestDashboardQueriesReturnData runs every panel query with Prometheus'
// engine over series shaped like those herald exports (every label set the
// registry gathered, for two instances of one job; counters rising, gauges
// at 1) and checks that each returns data and that its series carry the
// labels its legend shows. A query whose matching cannot succeed (two
// metrics joined on labels they do not share, a filter no value passes)
// returns nothing and fails here.
func TestDashboardQueriesReturnData(t *testing.T) {
	cat := heraldCatalog(t)
	var descs []string
	for _, name := range cat.names() {
		f := cat[name]
		vals := "1x20"
		if f.typ == dto.MetricType_COUNTER {
			vals = "0+3x20"
		}
		for _, instance := range []string{"10.0.0.1:8080", "10.0.0.2:8080"} {
			for _, ls := range f.series {
				parts := []string{`job="controller"`, fmt.Sprintf("instance=%q", instance)}
				for _, k := range slices.Sorted(maps.Keys(ls)) {
					parts = append(parts, fmt.Sprintf("%s=%q", k, ls[k]))
				}
				descs = append(descs, fmt.Sprintf("%s{%s} %s", name, strings.Join(parts, ","), vals))
			}
		}
	}
	q := load(t, descs...)
	engine := newEngine()
	defer engine.Close()
	for _, p := range flatten(readDashboard(t).Panels) {
		for _, tg := range p.Targets {
			vec := instant(t, engine, q, expand(tg.Expr), 20*time.Minute)
			if len(vec) == 0 {
				t.Errorf("panel %q query %s returns nothing: %s", p.Title, tg.RefID, tg.Expr)
			}
			for _, s := range vec {
				for _, m := range legendLabelRef.FindAllStringSubmatch(tg.LegendFormat, -1) {
					if s.Metric.Get(m[1]) == "" {
						t.Errorf("panel %q query %s: series %s has no %s for its legend", p.Title, tg.RefID, s.Metric, m[1])
					}
				}
			}
		}
	}
}

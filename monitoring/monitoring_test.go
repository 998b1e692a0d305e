package monitoring

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const runbookBase = "https://github.com/heraldk8s/herald/blob/main/monitoring/README.md#"

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// parseRules reads alerts.yaml with Prometheus' own rule-file parser, as
// Prometheus does when it loads rule_files (unknown fields refused).
func parseRules(t *testing.T) *rulefmt.RuleGroups {
	t.Helper()
	groups, errs := rulefmt.ParseFile("alerts.yaml", false, model.LegacyValidation,
		parser.NewParser(parser.Options{}), slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, err := range errs {
		t.Error(err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
	return groups
}

func TestRules(t *testing.T) {
	groups := parseRules(t)
	doc := readme(t)
	var alerts []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: recording rule %q: the file holds alerts only", g.Name, r.Record)
				continue
			}
			alerts = append(alerts, r.Alert)
			if !regexp.MustCompile(`^Herald[A-Z][A-Za-z]+$`).MatchString(r.Alert) {
				t.Errorf("%s: alert names are CamelCase and start with Herald", r.Alert)
			}
			if time.Duration(r.For) < time.Minute {
				t.Errorf("%s: for: %v, want at least a minute", r.Alert, r.For)
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" && s != "info" {
				t.Errorf("%s: severity %q, want info, warning or critical", r.Alert, s)
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("%s: no %s annotation", r.Alert, a)
				}
			}
			if want := runbookBase + strings.ToLower(r.Alert); r.Annotations["runbook_url"] != want {
				t.Errorf("%s: runbook_url %q, want %q", r.Alert, r.Annotations["runbook_url"], want)
			}
			if !strings.Contains(doc, "\n### "+r.Alert+"\n") {
				t.Errorf("%s: README.md has no runbook section \"### %s\"", r.Alert, r.Alert)
			}
		}
	}
	if len(alerts) == 0 {
		t.Fatal("no alerts")
	}
	if dup := duplicates(alerts); len(dup) > 0 {
		t.Errorf("alerts defined twice: %v", dup)
	}
}

// TestRulesMetrics checks every metric and label the rules name against
// the registry of a running broadcaster, and that the rules watch what
// the issue asks for: drops, the server down or shedding, pending events
// near their bound, and the age of the oldest one.
func TestRulesMetrics(t *testing.T) {
	groups := parseRules(t)
	c := newChecker(heraldCatalog(t))
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			ls := c.check(r.Alert, r.Expr)
			for k, v := range r.Annotations {
				c.checkRefs(r.Alert+" annotation "+k, alertLabelRef, v, ls)
			}
		}
	}
	for _, e := range c.errs {
		t.Error(e)
	}
	for _, m := range []string{
		"herald_events_dropped_total",
		"herald_server_probing",
		"herald_server_shedding",
		"herald_events_pending",
		"herald_events_oldest_pending_seconds",
	} {
		if !c.used[m] {
			t.Errorf("no alert watches %s", m)
		}
	}
}

// dashboard is the part of Grafana's dashboard model the tests read.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID          int            `json:"id"`
	Type        string         `json:"type"`
	Title       string         `json:"title"`
	Description string         `json:"description"`
	Datasource  *datasourceRef `json:"datasource"`
	Targets     []struct {
		Datasource   *datasourceRef `json:"datasource"`
		Expr         string         `json:"expr"`
		LegendFormat string         `json:"legendFormat"`
		RefID        string         `json:"refId"`
	} `json:"targets"`
	Panels  []panel `json:"panels"` // a collapsed row's
	GridPos struct {
		H, W, X, Y int
	} `json:"gridPos"`
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *datasourceRef  `json:"datasource"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile("dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// flatten returns every panel, those inside rows included, rows left out.
func flatten(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		if p.Type == "row" {
			out = append(out, flatten(p.Panels)...)
			continue
		}
		out = append(out, p)
	}
	return out
}

// grafanaVar matches a Grafana variable reference: $name or ${name}.
var grafanaVar = regexp.MustCompile(`\$(?:\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+))`)

// expand replaces Grafana's variables by what Grafana would put there: a
// duration for the interval variables, a regexp for the others (the
// dashboard uses $job and $instance inside =~ matchers).
func expand(s string) string {
	return grafanaVar.ReplaceAllStringFunc(s, func(v string) string {
		name := strings.Trim(v, "${}")
		switch name {
		case "__rate_interval", "__interval", "__range":
			return "5m"
		case "__interval_ms", "__range_ms", "__range_s":
			return "300000"
		}
		return ".+"
	})
}

var labelValues = regexp.MustCompile(`^label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\)$`)

func TestDashboard(t *testing.T) {
	d := readDashboard(t)
	doc := readme(t)
	if d.UID == "" || d.Title == "" {
		t.Error("dashboard has no uid or title")
	}
	vars := map[string]variable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if v, ok := vars["datasource"]; !ok || v.Type != "datasource" || string(v.Query) != `"prometheus"` {
		t.Errorf("no Prometheus datasource variable named datasource: %+v", v)
	}
	for _, name := range []string{"job", "instance"} {
		if v, ok := vars[name]; !ok || v.Type != "query" || v.Datasource == nil || v.Datasource.UID != "${datasource}" {
			t.Errorf("no query variable %s over ${datasource}: %+v", name, v)
		}
	}
	ids := map[int]bool{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel id %d used twice", p.ID)
			}
			ids[p.ID] = true
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	// Grafana places panels on a grid 24 wide: none may cover another.
	for i, p := range d.Panels {
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the grid", p.Title, g)
		}
		for _, o := range d.Panels[:i] {
			h := o.GridPos
			if g.X < h.X+h.W && h.X < g.X+g.W && g.Y < h.Y+h.H && h.Y < g.Y+g.H {
				t.Errorf("panels %q %+v and %q %+v overlap", o.Title, h, p.Title, g)
			}
		}
	}
	panels := flatten(d.Panels)
	if len(panels) == 0 {
		t.Fatal("no panels")
	}
	var titles []string
	for _, p := range panels {
		titles = append(titles, p.Title)
		if p.Title == "" || p.Description == "" {
			t.Errorf("panel %d: no title or description", p.ID)
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %+v, want ${datasource}", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q: no query", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q query %s: datasource %+v, want ${datasource}", p.Title, tg.RefID, tg.Datasource)
			}
			if tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: refId %q missing or used twice", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
		}
		if !strings.Contains(doc, "**"+p.Title+"**") {
			t.Errorf("panel %q is not explained in README.md (as **%s**)", p.Title, p.Title)
		}
	}
	if dup := duplicates(titles); len(dup) > 0 {
		t.Errorf("panel titles used twice: %v", dup)
	}
}

// TestDashboardMetrics parses every query of the dashboard (panels and
// variables) with Prometheus' PromQL parser, checks every metric, label and
// legend label against the registry of a running broadcaster, checks that
// every selector follows the job and instance variables, and that every
// metric record/metrics exports is on the dashboard.
func TestDashboardMetrics(t *testing.T) {
	d := readDashboard(t)
	cat := heraldCatalog(t)
	c := newChecker(cat)
	c.require = targetLabels
	for _, p := range flatten(d.Panels) {
		for _, tg := range p.Targets {
			where := p.Title + " " + tg.RefID
			expr := expand(tg.Expr)
			if strings.Contains(expr, "$") {
				t.Errorf("%s: variable left in %q", where, expr)
			}
			ls := c.check(where, expr)
			c.checkRefs(where+" legend", legendLabelRef, tg.LegendFormat, ls)
		}
	}
	c.require = nil
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Errorf("variable %s: query %s: %v", v.Name, v.Query, err)
			continue
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(selector, label)", v.Name, q.Query)
			continue
		}
		ls := c.check("variable "+v.Name, expand(m[1]))
		if ls != nil && !ls[m[2]] {
			t.Errorf("variable %s: %s has no label %q", v.Name, m[1], m[2])
		}
	}
	for _, e := range c.errs {
		t.Error(e)
	}
	for _, name := range cat.names() {
		if !c.used[name] {
			t.Errorf("%s is exported but not on the dashboard", name)
		}
	}
}

// TestCheckerCatchesMistakes shows the checks above can fail: a renamed
// metric, a label it does not have, a reason it never reports, a grouping
// or a legend on a label the series lost, a selector ignoring the
// variables, an expression that does not parse.
func TestCheckerCatchesMistakes(t *testing.T) {
	cat := heraldCatalog(t)
	for _, tc := range []struct {
		expr, legend string
		require      bool
		want         string
	}{
		{expr: `rate(herald_events_dropped[5m])`, want: `metric "herald_events_dropped" is not exported`},
		{expr: `herald_events_pending_total > 0`, want: `metric "herald_events_pending_total" is not exported`},
		{expr: `herald_events_written_total{reason="forbidden"}`, want: `has no label "reason"`},
		{expr: `rate(herald_events_dropped_total{reason!~"already_exists|namespace_gone"}[5m])`, want: `never has the value "namespace_gone"`},
		{expr: `herald_events_written_total{op="update"}`, want: `never has the value "update"`},
		{expr: `sum by (job, op) (herald_events_pending)`, want: `groups by "op"`},
		{expr: `sum by (job) (rate(herald_events_dropped_total[5m]))`, legend: "{{reason}}", want: `refers to label "reason"`},
		{expr: `sum without (reason) (rate(herald_events_dropped_total[5m]))`, legend: "{{reason}}", want: `refers to label "reason"`},
		{expr: `herald_events_pending / on (reason) herald_events_recorded_total`, want: `matches on "reason"`},
		{expr: `herald_events_pending{job=~".+"}`, require: true, want: `does not match on "instance"`},
		{expr: `rate(herald_events_recorded_total[5m]`, want: `does not parse`},
		{expr: `herald_server_probing{le="1"}`, want: `has no label "le"`},
	} {
		c := newChecker(cat)
		if tc.require {
			c.require = targetLabels
		}
		ls := c.check("test", tc.expr)
		c.checkRefs("test legend", legendLabelRef, tc.legend, ls)
		if !slices.ContainsFunc(c.errs, func(e string) bool { return strings.Contains(e, tc.want) }) {
			t.Errorf("%q (legend %q): errors %q, want one containing %q", tc.expr, tc.legend, c.errs, tc.want)
		}
	}
	// And what is right passes.
	c := newChecker(cat)
	c.require = targetLabels
	ls := c.check("test", `sum by (job, instance, reason) (rate(herald_events_dropped_total{job=~".+", instance=~".+", reason!~"already_exists|namespace_terminating"}[5m])) > 0`)
	c.checkRefs("test legend", legendLabelRef, "{{instance}} {{reason}}", ls)
	if len(c.errs) > 0 {
		t.Errorf("a valid query was refused: %q", c.errs)
	}
}

func duplicates(xs []string) []string {
	seen := map[string]int{}
	var dup []string
	for _, x := range xs {
		if seen[x]++; seen[x] == 2 {
			dup = append(dup, x)
		}
	}
	return dup
}

// Package table reads the output of `go test -bench` for benchmarks whose
// sub-benchmarks are named .../impl=herald and .../impl=client-go, pairs the
// two implementations of each scenario, and prints a markdown table of their
// metrics with the ratio herald / client-go and herald's targets (DESIGN.md,
// "Performance"). It is the library behind cmd/benchtable.
package table

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The implementations compared.
const (
	Herald   = "herald"
	ClientGo = "client-go"
)

// Results is what Parse read.
type Results struct {
	// Scenarios in the order they first appeared.
	Scenarios []*Scenario
	// Header lines (goos, goarch, cpu) and benchnote lines, deduplicated, in
	// order.
	Header, Notes []string
	// Failures are the FAIL and panic lines of the output.
	Failures []string
}

// Scenario is one benchmark with the impl element removed from its name.
type Scenario struct {
	// Pkg is the last element of the package path ("record"), Name the
	// benchmark name without "Benchmark", the impl element and the
	// GOMAXPROCS suffix ("Eventf", "Delivery/burst-distinct-10000").
	Pkg, Name string
	// Procs is the GOMAXPROCS suffix of the benchmark name (0 if none).
	Procs int
	// Impl maps an implementation to its run.
	Impl map[string]*Run
}

// Run is the result of one implementation in one scenario. Several lines
// for the same benchmark (-count > 1) are averaged.
type Run struct {
	// N is the iteration count (the largest, with -count > 1).
	N int64
	// Metrics maps a unit ("ns/op", "events/s") to its mean value.
	Metrics map[string]float64
	// Units in the order they appeared.
	Units []string
	sums  map[string]float64
	lines map[string]int
}

// ID is the scenario as targets match it: "pkg/Name".
func (s *Scenario) ID() string { return s.Pkg + "/" + s.Name }

var (
	benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-(\d+))?\s+(\d+)\s+(.+)$`)
	noteLine  = regexp.MustCompile(`benchnote: (.*)$`)
)

// Parse reads `go test -bench` output (several packages may follow each
// other). Benchmarks without an impl=... element in their name are ignored.
func Parse(r io.Reader) (*Results, error) {
	res := &Results{}
	byKey := map[string]*Scenario{}
	seenHeader, seenNote := map[string]bool{}, map[string]bool{}
	pkg := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t\r")
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "pkg: "):
			pkg = path.Base(strings.TrimPrefix(line, "pkg: "))
			continue
		case strings.HasPrefix(line, "goos: "), strings.HasPrefix(line, "goarch: "), strings.HasPrefix(line, "cpu: "):
			if !seenHeader[line] {
				seenHeader[line] = true
				res.Header = append(res.Header, line)
			}
			continue
		case strings.HasPrefix(trimmed, "--- FAIL"), strings.HasPrefix(line, "FAIL"), strings.HasPrefix(line, "panic:"):
			res.Failures = append(res.Failures, trimmed)
			continue
		}
		if m := noteLine.FindStringSubmatch(line); m != nil {
			if !seenNote[m[1]] {
				seenNote[m[1]] = true
				res.Notes = append(res.Notes, m[1])
			}
			continue
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name, impl := splitImpl(strings.TrimPrefix(m[1], "Benchmark"))
		if impl == "" {
			continue
		}
		procs, _ := strconv.Atoi(m[2])
		n, _ := strconv.ParseInt(m[3], 10, 64)
		metrics, units, err := parseMetrics(m[4])
		if err != nil {
			return nil, fmt.Errorf("table: %q: %w", line, err)
		}
		key := pkg + "/" + name
		s := byKey[key]
		if s == nil {
			s = &Scenario{Pkg: pkg, Name: name, Procs: procs, Impl: map[string]*Run{}}
			byKey[key] = s
			res.Scenarios = append(res.Scenarios, s)
		}
		run := s.Impl[impl]
		if run == nil {
			run = &Run{Metrics: map[string]float64{}, sums: map[string]float64{}, lines: map[string]int{}}
			s.Impl[impl] = run
		}
		run.N = max(run.N, n)
		for _, u := range units {
			if _, ok := run.sums[u]; !ok {
				run.Units = append(run.Units, u)
			}
			run.sums[u] += metrics[u]
			run.lines[u]++
			run.Metrics[u] = run.sums[u] / float64(run.lines[u])
		}
	}
	return res, sc.Err()
}

// splitImpl removes the impl=X element from a benchmark name and returns
// the rest and X.
func splitImpl(name string) (rest, impl string) {
	parts := strings.Split(name, "/")
	out := parts[:0]
	for _, p := range parts {
		if v, ok := strings.CutPrefix(p, "impl="); ok && impl == "" {
			impl = v
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, "/"), impl
}

// parseMetrics reads "value unit value unit ...".
func parseMetrics(s string) (map[string]float64, []string, error) {
	f := strings.Fields(s)
	if len(f)%2 != 0 {
		return nil, nil, fmt.Errorf("odd number of fields")
	}
	m := map[string]float64{}
	var units []string
	for i := 0; i < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return nil, nil, err
		}
		if _, ok := m[f[i+1]]; !ok {
			units = append(units, f[i+1])
		}
		m[f[i+1]] = v
	}
	return m, units, nil
}

// standard are the metrics of the testing package. For a scenario run once
// (N == 1) they measure the whole scenario, observation windows included,
// and are not shown.
var standard = map[string]bool{"ns/op": true, "B/op": true, "allocs/op": true, "MB/s": true}

// unitOrder is the order of metrics in a scenario; others follow,
// alphabetically.
var unitOrder = []string{
	"ns/op", "B/op", "allocs/op", "arg-allocs/op", "dropped/op",
	"recorded", "delivered", "written", "writes", "creates", "patches", "finalcount",
	"stale-at-end", "stale-after-3s", "stale-after-flush", "dropped", "abandoned", "lost",
	"events/s", "ms-per-write", "failed-writes", "ms-to-final", "ms-to-drain", "ms-to-drain-worst", "ms-to-drain-mean", "s-to-all", "x-configured-rate", "shutdown-ms",
	"goroutines-started", "goroutines-peak", "goroutines-leaked",
}

// units returns the metrics of s to show, in display order.
func (s *Scenario) units() []string {
	seen := map[string]bool{}
	var all []string
	once := true
	for _, impl := range []string{ClientGo, Herald} {
		r := s.Impl[impl]
		if r == nil {
			continue
		}
		once = once && r.N == 1
		for _, u := range r.Units {
			if !seen[u] {
				seen[u] = true
				all = append(all, u)
			}
		}
	}
	rank := func(u string) int {
		if i := slices.Index(unitOrder, u); i >= 0 {
			return i
		}
		return len(unitOrder)
	}
	slices.SortStableFunc(all, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	if once {
		all = slices.DeleteFunc(all, func(u string) bool { return standard[u] })
	}
	return all
}

// Markdown writes the table, then the notes: the header of the runs, what
// the columns mean, the benchnote lines of the benchmarks, the targets no
// benchmark measured, and any failure.
func (r *Results) Markdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "| scenario | metric | client-go | herald | herald / client-go | target | met |")
	fmt.Fprintln(bw, "|---|---|--:|--:|--:|---|---|")
	used := make([]bool, len(Targets))
	for _, s := range r.Scenarios {
		h, c := s.Impl[Herald], s.Impl[ClientGo]
		for _, u := range s.units() {
			hv, hok := value(h, u)
			cv, cok := value(c, u)
			target, met := "", ""
			for i, t := range Targets {
				if t.Metric != u || !t.scenario().MatchString(s.ID()) {
					continue
				}
				used[i] = true
				target = t.Desc
				switch {
				case !hok || (t.NeedsClientGo && !cok):
					met = "not measured"
				case t.Check(h.Metrics, metricsOf(c)):
					met = "yes"
				default:
					met = "**NO**"
				}
				break
			}
			fmt.Fprintf(bw, "| %s | %s | %s | %s | %s | %s | %s |\n",
				s.Name, u, format(cv, cok), format(hv, hok), ratio(hv, hok, cv, cok), target, met)
		}
	}
	r.fleetSummary(bw)
	fmt.Fprintln(bw)
	fmt.Fprintln(bw, "Notes:")
	fmt.Fprintln(bw)
	if len(r.Header) > 0 {
		procs := 0
		for _, s := range r.Scenarios {
			procs = max(procs, s.Procs)
		}
		fmt.Fprintf(bw, "- Machine: %s, GOMAXPROCS %d.\n", strings.Join(r.Header, ", "), procs)
	}
	for _, l := range Legend {
		fmt.Fprintf(bw, "- %s\n", l)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(bw, "- %s\n", n)
	}
	for i, t := range Targets {
		if !used[i] {
			fmt.Fprintf(bw, "- Not measured (no benchmark matched %s, metric %s): target %s.\n", t.Scenario, t.Metric, t.Desc)
		}
	}
	for _, f := range r.Failures {
		fmt.Fprintf(bw, "- FAILURE in the run: `%s`\n", f)
	}
	return bw.Flush()
}

// Missed returns the targets measured and not met, as "scenario metric".
func (r *Results) Missed() []string {
	var out []string
	for _, s := range r.Scenarios {
		for _, u := range r.missedIn(s) {
			out = append(out, s.Name+" "+u)
		}
	}
	return out
}

// missedIn returns the metrics of s whose target is measured and not met.
func (r *Results) missedIn(s *Scenario) []string {
	var out []string
	h, c := s.Impl[Herald], s.Impl[ClientGo]
	for _, u := range s.units() {
		for _, t := range Targets {
			if t.Metric != u || !t.scenario().MatchString(s.ID()) {
				continue
			}
			if _, ok := value(h, u); ok && (!t.NeedsClientGo || c != nil) && !t.Check(h.Metrics, metricsOf(c)) {
				out = append(out, u)
			}
			break
		}
	}
	return out
}

func metricsOf(r *Run) map[string]float64 {
	if r == nil {
		return nil
	}
	return r.Metrics
}

func value(r *Run, unit string) (float64, bool) {
	if r == nil {
		return 0, false
	}
	v, ok := r.Metrics[unit]
	return v, ok
}

// format prints a value: whole numbers as such, others with 3 significant
// digits.
func format(v float64, ok bool) string {
	switch {
	case !ok:
		return "—"
	case v == math.Trunc(v) || math.Abs(v) >= 100:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// ratio prints herald / client-go.
func ratio(h float64, hok bool, c float64, cok bool) string {
	switch {
	case !hok || !cok:
		return "—"
	case c == 0 && h == 0:
		return "—"
	case c == 0:
		return "∞"
	}
	q := h / c
	switch a := math.Abs(q); {
	case a >= 100:
		return strconv.FormatFloat(q, 'f', 0, 64) + "×"
	case a >= 10:
		return strconv.FormatFloat(q, 'f', 1, 64) + "×"
	case a >= 0.1 || q == 0:
		return strconv.FormatFloat(q, 'f', 2, 64) + "×"
	}
	return strconv.FormatFloat(q, 'g', 2, 64) + "×"
}

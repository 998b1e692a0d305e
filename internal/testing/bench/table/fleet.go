package table

import (
	"fmt"
	"io"
	"regexp"
	"strings"
)

// fleetScenario matches the fleet runs that fleetSummary sums up.
var fleetScenario = regexp.MustCompile(`^server/Fleet/`)

// fleetColumns are the metrics of the fleet summary, with their headers.
var fleetColumns = []struct{ unit, header string }{
	{"stored", "stored"},
	{"lost", "lost"},
	{"max-requests-down-per-controller", "max down / controller"},
	{"writes/request", "writes / request"},
	{"peak-x-capacity", "peak / capacity"},
	{"peak-admitted-x-capacity", "of it admitted"},
	{"s-to-first-batch", "first batch s"},
	{"s-to-all", "all s"},
	{"jain-early", "Jain"},
}

// fleetSummary writes, when the results hold fleet runs, one row per run
// (server model, latency, settings, implementation) with its main figures
// and the herald targets it misses.
func (r *Results) fleetSummary(w io.Writer) {
	var rows []string
	for _, s := range r.Scenarios {
		if !fleetScenario.MatchString(s.ID()) {
			continue
		}
		for _, impl := range []string{Herald, ClientGo} {
			run := s.Impl[impl]
			if run == nil {
				continue
			}
			cells := []string{strings.TrimPrefix(s.Name, "Fleet/"), impl}
			for _, c := range fleetColumns {
				v, ok := value(run, c.unit)
				cells = append(cells, format(v, ok))
			}
			missed := ""
			if impl == Herald {
				missed = strings.Join(r.missedIn(s), ", ")
				if missed == "" {
					missed = "none"
				}
			}
			rows = append(rows, "| "+strings.Join(append(cells, missed), " | ")+" |")
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "The fleet, one row per run:")
	fmt.Fprintln(w)
	head, rule := []string{"model/latency/settings", "impl"}, []string{"---", "---"}
	for _, c := range fleetColumns {
		head, rule = append(head, c.header), append(rule, "--:")
	}
	fmt.Fprintln(w, "| "+strings.Join(append(head, "herald targets missed"), " | ")+" |")
	fmt.Fprintln(w, "|"+strings.Join(append(rule, "---"), "|")+"|")
	for _, row := range rows {
		fmt.Fprintln(w, row)
	}
}

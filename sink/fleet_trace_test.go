package sink

import (
	"flag"
	"testing"
)

var fleetTrace = flag.Bool("fleet.trace", false, "TestFleetTrace: log the fleet simulation second by second")

// TestFleetTrace logs the fleet simulation second by second, for each server
// model, at the defaults (go test -run TestFleetTrace -fleet.trace -v
// ./sink). It checks that the trace covers the run.
func TestFleetTrace(t *testing.T) {
	if !*fleetTrace {
		t.Skip("a diagnostic: run with -fleet.trace")
	}
	for _, m := range simModels {
		for _, opts := range []Options{{}, {QPS: -1}} {
			cfg := fleetScenario(opts)
			cfg.model = m.mk
			cfg.trace = true
			r := simulate(cfg)
			t.Logf("%s QPS %v: %v", m.name, opts.QPS, r)
			for _, l := range r.trace {
				t.Log(l)
			}
			if len(r.trace) < 30 {
				t.Errorf("trace of %d seconds", len(r.trace))
			}
		}
	}
}

## bench: herald and client-go's tools/record (the version go.mod selects, v0.35.10) side by side on the
## same scenarios (sub-benchmarks .../impl=herald and .../impl=client-go, in
## the same `go test` process): Eventf cost (record), correlator
## (correlator), delivery scenarios (internal/testing/bench, the lone-engine
## ones included: client-go's TestLotsOfEvents, 10% random 503s, a 3 s
## outage run five times), herald's events
## package beside client-go's tools/events (internal/testing/bench, Events*:
## Eventf cost, a crash-loop storm, shutdown, goroutines), and the scenarios that
## need a server (internal/testing/bench/server: a real kube-apiserver restarted; a
## hundred controllers against one loopback Events API with an outage and a
## capacity, once per server model of internal/testing/bench/server/model.go
## (a per-second window, token buckets with a tenth and a whole second of
## burst, priority and fairness's queue, max-in-flight with latency that
## grows with its load and with flat latency, a capacity that steps) and
## per latency (fixed, jittered; client-go with the fixed one);
## and 25 controllers against the real kube-apiserver with priority and
## fairness set to one seat, coming back from an outage (FleetAPF) and
## stepping from 30% to 120% of the seat (FleetAPFRise; more controllers
## and a longer queue on a fast seat), and coming back from an outage to
## its max-in-flight limit of one mutating request with priority and
## fairness off (FleetMaxInFlight), figures printed only; `apiserver` is built first). The raw output goes to
## $(BENCH_OUT), then internal/cmd/benchtable prints a markdown table of
## the ratios herald / client-go and of herald's targets, and one row per
## fleet run. About 35 minutes on a 2-core machine, 20 of them the fleet.
## BENCH_STRICT=1 fails the target when a herald target is missed.
BENCH_OUT ?= bench.out
BENCH_MICRO_TIME ?= 1s
BENCH_CORRELATOR_TIME ?= 500ms
BENCH_SCENARIO_TIME ?= 1x
BENCH_STRICT ?=

bench: SHELL := /bin/bash
bench: apiserver
	@set -o pipefail; \
	{ status=0; \
	  $(GO) test -run '^$$' -bench '^BenchmarkEventf' -benchmem -benchtime $(BENCH_MICRO_TIME) ./record || status=1; \
	  $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCH_CORRELATOR_TIME) ./correlator || status=1; \
	  $(GO) test -run '^$$' -bench '^BenchmarkEventsEventf$$' -benchmem -benchtime $(BENCH_MICRO_TIME) ./internal/testing/bench || status=1; \
	  $(GO) test -run '^$$' -bench '^Benchmark(Delivery|Memory|EventsStorm|EventsShutdown|EventsBurstGoroutines)$$' -benchmem -benchtime $(BENCH_SCENARIO_TIME) -timeout 20m ./internal/testing/bench || status=1; \
	  $(GO) test -run '^$$' -bench . -benchtime $(BENCH_SCENARIO_TIME) -timeout 60m ./internal/testing/bench/server || status=1; \
	  $(GO) run ./internal/cmd/testserver -- sh -c "cd controllerruntime && $(GO) test -run '^$$' -bench '^BenchmarkManagerShutdown$$' -benchtime $(BENCH_SCENARIO_TIME) -timeout 10m ." || status=1; \
	  exit $$status; \
	} 2>&1 | tee $(BENCH_OUT); status=$$?; \
	echo; \
	$(GO) run ./internal/cmd/benchtable $(if $(BENCH_STRICT),-strict) < $(BENCH_OUT) || status=$$?; \
	exit $$status

## fleet-workloads: the fleet's simulation (sink's TestFleetSimulation,
## every server model, both latencies, at the defaults and with no write
## limit) on issue 13's workload and on others, one factor changed at a
## time, a line each: the ranges over the models held to the goal (the
## time all are stored, the engines' refused shares and the 429s per rate
## cut among them), the runs whose first batch came past its target, and
## the cases failed. The targets are met on issue 13's workload (the first
## batch's in all but about 1% of the runs, which `make test` allows at 1
## in 60); on the others they do not all hold yet (docs/measurements.md,
## "Other workloads"), so this prints, and fails only if the simulation does
## not run; `make test` holds the largest backlog to bounds of its own
## (TestFleetLargeBacklogDoesNotClimb).
## FLEET_SEEDS seeds per case; FLEET_WORKLOADS, name:flags with commas
## between the flags (sink's -fleet.* flags).
FLEET_SEEDS ?= 6
FLEET_WORKLOADS ?= issue13: batch10:-fleet.batch=10 batch60:-fleet.batch=60 \
  batch100:-fleet.batch=100 outage2s:-fleet.outage=2s outage15s:-fleet.outage=15s \
  engines30:-fleet.engines=30,-fleet.capacity=90 engines300:-fleet.engines=300,-fleet.capacity=900 \
  capacity150:-fleet.capacity=150 capacity100:-fleet.capacity=100 capacity1000:-fleet.capacity=1000
.PHONY: fleet-workloads
fleet-workloads:
	@dir=$$(mktemp -d) && trap 'rm -rf "$$dir"' EXIT && bin=$$dir/sink.test && \
	$(GO) test -c -o $$bin ./sink && \
	for w in $(FLEET_WORKLOADS); do \
	  out=$$(cd sink && $$bin -test.run '^TestFleetSimulation$$' -test.v -test.count 1 \
	    -fleet.seeds $(FLEET_SEEDS) $$(echo $${w#*:} | tr , ' ') 2>&1 | grep -o 'over [0-9]* runs.*'); \
	  [ -n "$$out" ] || { echo "$${w%%:*}: the simulation did not run"; exit 1; }; \
	  printf '%-13s %s\n' "$${w%%:*}" "$$out"; \
	done

package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/heraldk8s/herald/internal/testing/testenv"
)

// The fleet scenario of FleetAPF against the real kube-apiserver with
// priority and fairness off: its max-in-flight filter then answers 429
// (Retry-After: 1) at once to a mutating request of the restricted user
// past maxInFlightMutating under way, a loss system as the simulation's
// inflight-flat model is (latency cannot grow with a load the limit
// refuses). The seat's capacity is measured first (riseCapacity: eight
// writers, each sending its next create as soon as the last is answered,
// stored or refused). Uncoordinated clients meet such a server as Erlang's
// B formula says: at 0.8 writes per request or more, one seat carries at
// most a fifth of its capacity (server.TestInFlightLosesAsErlangB, for the
// model's six seats). Printed, with no targets.
const maxInFlightMutating = 1

var maxInFlightArgs = []string{
	"--enable-priority-and-fairness=false",
	"--max-requests-inflight=10",
	fmt.Sprintf("--max-mutating-requests-inflight=%d", maxInFlightMutating),
}

func BenchmarkFleetMaxInFlight(b *testing.B) {
	env := startServer(b, maxInFlightArgs, func(ctx context.Context, env *testenv.Env) error {
		if err := burstSees429(ctx, env, 60); err != nil {
			return fmt.Errorf("%w: the in-flight limit does not apply", err)
		}
		return nil
	})
	defer env.Stop()
	capacity, err := riseCapacity(context.Background(), env)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range fleetCases {
		b.Run(c.scenario+"/impl="+c.impl, func(b *testing.B) {
			b.Logf("benchnote: FleetMaxInFlight/%s: a real kube-apiserver (%s): the restricted user's creates past %d under way are answered 429 at once, and the seat took %.0f writes/s on this machine before the run (seat-writes/s); %d controllers, each with its own clientset (QPS 20/Burst 30) through a proxy that answers 503 for %v, record %d events each at the start of the outage, %d more each %v after its return. %s. Counted at each client's transport; no targets (the capacity is the server's). s-to-first-batch: from the return until the first %d are stored (%v: never); rtt-ms: the median round trip of the creates stored.",
				c.scenario, strings.Join(maxInFlightArgs, " "), maxInFlightMutating, capacity, apfControllers, fleetOutage, fleetBatch, fleetBatch, fleetSecond, c.note, apfControllers*fleetBatch, fleetMax)
			var sums fleetResult
			for range b.N {
				sums.add(runFleetAPF(b, env, c.impl, c.herald))
			}
			sums.report(b, b.N)
			b.ReportMetric(capacity, "seat-writes/s")
			if c.impl == "herald" {
				b.ReportMetric(sums.rateCuts/float64(b.N), "rate-cuts")
			}
		})
	}
}

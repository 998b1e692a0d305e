package soak

import (
	"testing"
	"time"
)

// TestSoak is the short seeded soak of `make test`: one run of 30 s of load
// on a kube-apiserver of its own, with every kind of fault of the schedule
// (a load of 30 s gets each at least once: the server killed and
// restarted, partitions, lost answers, the webhook failing namespaces,
// latency, resets, injected errors, recorders restarted and flushed with
// short deadlines, a namespace deleted), and the ledger must balance (see
// RunTest). The seed is fixed so that CI runs the same schedule every time;
// `make soak` runs others.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak takes a minute; -short skips it")
	}
	RunTest(t, Config{Seed: 27, Duration: 30 * time.Second})
}

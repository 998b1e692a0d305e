package main

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/heraldk8s/herald/internal/testing/soak"
)

// TestSoakManager is the short seeded soak of `make test` with the
// controller-runtime managers among its recorders (the root module's
// TestSoak runs the soak without them): 30 s of load on a kube-apiserver of
// its own, every kind of fault, and the ledger must balance (see
// soak.RunTest), the managers' recorders included, each of which must
// have recorded and written. Seed 37 restarts the events.k8s.io/v1 manager (its
// Start's context cancelled, a GracefulShutdownTimeout of 2.82 s) and
// flushes the core/v1 one with a short deadline.
func TestSoakManager(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak takes a minute; -short skips it")
	}
	ctrllog.SetLogger(logr.Discard())
	const seed, load = 37, 30 * time.Second
	slots := managerSlots()
	first := 8 - len(slots) // the soak's own slots come first
	var restarted, flushed bool
	for _, f := range soak.Schedule(seed, load, 8, 4) {
		restarted = restarted || f.Kind == soak.SinkRestart && f.Slot >= first
		flushed = flushed || f.Kind == soak.Flush && f.Slot >= first
	}
	if !restarted || !flushed {
		t.Fatalf("seed %d no longer restarts and flushes a manager: pick another", seed)
	}
	res := soak.RunTest(t, soak.Config{Seed: seed, Duration: load, Extra: slots})
	if len(res.Slots) != 8 {
		t.Fatalf("%d slots, want 8: %+v", len(res.Slots), res.Slots)
	}
	for i, sr := range res.Slots[first:] {
		if sr.Name != slots[i].Name || sr.Recorded == 0 || sr.Written == 0 {
			t.Errorf("manager slot %d: %+v, want %q recording and writing", first+i, sr, slots[i].Name)
		}
	}
	if res.Slots[first].Incarnations+res.Slots[first+1].Incarnations != 3 {
		t.Errorf("the managers' slots had %d and %d incarnations, want 3 in all (one restart)", res.Slots[first].Incarnations, res.Slots[first+1].Incarnations)
	}
}

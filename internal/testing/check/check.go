// Package check holds the assertions the root module's tests share: a bounded
// wait for a condition on the real clock, and the Stats accounting identity.
// It is test infrastructure, imported only by _test.go files. It imports
// record, so the in-package tests of record and of the packages record
// imports (sink, watch, ...) cannot use it; their external tests
// (package x_test) can.
package check

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
	"k8s.io/klog/v2"
)

// timeout bounds Eventually. It only turns a hang into a failure: a
// condition that holds is seen within a poll interval of holding. (A
// variable for this package's own tests.)
var timeout = 30 * time.Second

// Eventually polls cond on the real clock until it returns nil, and fails t
// (Fatal) with cond's last error if it still does not after 30 s. cond's
// error says why the state waited for is not there yet (what it saw), so
// that the failure does. The polls start 1 ms apart and slow down to 50 ms,
// so that a wait on a real API server does not flood it.
//
// It is for conditions no channel reports; tests on a fake clock step it
// instead of polling.
func Eventually(t testing.TB, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	interval := time.Millisecond
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(interval)
		interval = min(2*interval, 50*time.Millisecond)
	}
}

// Errorf returns fmt.Errorf(format, args...) unless ok: for a condition of
// Eventually written as one expression with what it saw.
func Errorf(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf(format, args...)
}

// Identity fails t unless st places every event in exactly one bucket
// (st.Unaccounted() == 0; see [record.Stats]). It holds whenever no event
// is on its way between two buckets, whatever the number of sinks.
func Identity(t testing.TB, st record.Stats) {
	t.Helper()
	if u := st.Unaccounted(); u != 0 {
		t.Errorf("Stats identity broken: %d events in no bucket (Recorded + Offered - Broadcast minus the buckets); stats %+v", u, st)
	}
}

// Settled fails t unless st is the Stats of a broadcaster with one sink,
// started before the first event and not stopped, once Flush or Shutdown
// returned: [Identity] holds, every event broadcast was offered to the
// sink exactly once (Offered == Broadcast, so Recorded is the sum of the
// buckets), and none is queued, pending or in flight.
func Settled(t testing.TB, st record.Stats) {
	t.Helper()
	Identity(t, st)
	if st.Offered != st.Broadcast {
		t.Errorf("one sink: offered %d events, broadcast %d, want equal; stats %+v", st.Offered, st.Broadcast, st)
	}
	if st.Queued != 0 || st.Pending != 0 || st.InFlight != 0 {
		t.Errorf("settled: queued %d, pending %d, in flight %d, want 0; stats %+v", st.Queued, st.Pending, st.InFlight, st)
	}
}

// Engine fails t unless st, the Stats of a delivery engine that was handed
// added events, places each in exactly one bucket (see [sink.Stats]).
func Engine(t testing.TB, added int64, st sink.Stats) {
	t.Helper()
	in := st.Created + st.Patched + st.Coalesced + st.Dropped.Total() + st.Abandoned + st.Pending + st.InFlight
	if in != added {
		t.Errorf("engine identity broken: added %d events, %d in buckets (Created + Patched + Coalesced + Dropped + Abandoned + Pending + InFlight); stats %+v", added, in, st)
	}
}

// Logger returns a logger that keeps every line it is given, in funcr's
// format ("level"=0 "msg"="..." "key"="value" ...), safe for concurrent
// use, and a function that returns a copy of the lines so far.
func Logger() (klog.Logger, func() []string) {
	var mu sync.Mutex
	var lines []string
	logger := funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	return logger, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
}

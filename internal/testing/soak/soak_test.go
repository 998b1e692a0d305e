package soak

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestSoak is the short seeded soak of `make test`: one run of 30 s of load
// on a kube-apiserver of its own, with every kind of fault of the schedule
// (a load of 30 s gets each at least once: the server killed and
// restarted, partitions, lost answers, the webhook failing namespaces,
// latency, resets, injected errors, recorders restarted and flushed with
// short deadlines, a namespace deleted), and the ledger must balance. The
// seed is fixed so that CI runs the same schedule every time; `make soak`
// runs others.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak takes a minute; -short skips it")
	}
	const seed = 27
	res, err := Run(context.Background(), Config{
		Seed:     seed,
		Duration: 30 * time.Second,
		Out:      testWriter{t},
		// The packages of `go test ./...` share the machine: a Flush or
		// Shutdown may be scheduled late.
		Slack: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res.FaultLine())
	t.Log(res.Line())
	for _, p := range res.Problems {
		t.Errorf("ledger: %s", p)
	}
	if res.Recorded == 0 || res.Written == 0 {
		t.Errorf("nothing recorded or written: %s", res.Line())
	}
	for _, k := range []Kind{Kill, Partition, Lost, Webhook, NamespaceDelete, SinkRestart} {
		if res.Faults[k] == 0 {
			t.Errorf("no %s fault injected", k)
		}
	}
}

// testWriter writes the soak's lines to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

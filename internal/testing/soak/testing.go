package soak

import (
	"context"
	"strings"
	"testing"
	"time"
)

// RunTest runs a short soak for a test (TestSoak, and controllerruntime's
// TestSoakManager): the soak's lines go to t.Log, and t fails for every
// problem of the ledger, if nothing was recorded or written, or if one of
// the main faults (a kill, a partition, lost answers, the webhook, a
// namespace deleted, a recorder restarted) was not injected. Slack
// defaults to 2 s: the packages of `go test ./...` share the machine, so a
// Flush or Shutdown may be scheduled late.
func RunTest(t testing.TB, cfg Config) *Result {
	t.Helper()
	cfg.Out = testWriter{t}
	if cfg.Slack <= 0 {
		cfg.Slack = 2 * time.Second
	}
	res, err := Run(context.Background(), cfg)
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
	return res
}

// testWriter writes the soak's lines to t.Log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

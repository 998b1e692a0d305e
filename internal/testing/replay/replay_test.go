package replay

import (
	"fmt"
	"strings"
	"testing"
)

func TestCommandSelectsTheSubtest(t *testing.T) {
	got := Command("TestX/seed 5.1")
	want := "go test -race -count=1 -run '^TestX$/^seed 5\\.1$' ./internal/testing/replay/"
	if got != want {
		t.Fatalf("Command = %q, want %q", got, want)
	}
}

// OnFailure logs the replay line when the test fails, and nothing when it
// passes.
func TestOnFailureLogsOnlyOnFailure(t *testing.T) {
	for _, fail := range []bool{false, true} {
		rec := &recorder{TB: t}
		OnFailure(rec, "lru %d", 65)
		if fail {
			rec.failed = true
		}
		rec.runCleanups()
		logged := strings.Join(rec.logs, "\n")
		if want := "replay: go test -race -count=1 -run '^" + t.Name() + "$' ./internal/testing/replay/ (lru 65)"; fail && logged != want {
			t.Errorf("failed test logged %q, want %q", logged, want)
		}
		if !fail && logged != "" {
			t.Errorf("passing test logged %q", logged)
		}
	}
}

// recorder is a testing.TB that keeps its cleanups and logs, and fails when
// told.
type recorder struct {
	testing.TB
	failed   bool
	cleanups []func()
	logs     []string
}

func (r *recorder) Helper()          {}
func (r *recorder) Failed() bool     { return r.failed }
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Logf(f string, a ...any) {
	r.logs = append(r.logs, strings.TrimSpace(fmt.Sprintf(f, a...)))
}
func (r *recorder) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

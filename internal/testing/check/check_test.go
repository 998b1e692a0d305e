package check

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// fakeT records what a check reports instead of failing the test.
type fakeT struct {
	testing.TB
	failures []string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Errorf(format string, args ...any) {
	f.failures = append(f.failures, fmt.Sprintf(format, args...))
}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}

// run calls check with a fakeT on a goroutine of its own (Fatalf ends it)
// and returns what it reported.
func run(check func(t testing.TB)) []string {
	f := &fakeT{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(f)
	}()
	<-done
	return f.failures
}

func TestEventuallyReturnsOnceCondHolds(t *testing.T) {
	calls := 0
	got := run(func(t testing.TB) {
		Eventually(t, "the third call", func() error {
			calls++
			return Errorf(calls == 3, "call %d", calls)
		})
	})
	if len(got) != 0 || calls != 3 {
		t.Errorf("failures %q after %d calls, want none after 3", got, calls)
	}
}

func TestEventuallyFailsWithTheLastComplaint(t *testing.T) {
	defer func(d time.Duration) { timeout = d }(timeout)
	timeout = 20 * time.Millisecond
	calls := 0
	got := run(func(t testing.TB) {
		Eventually(t, "a state never reached", func() error {
			calls++
			return fmt.Errorf("saw %d", calls)
		})
		t.Errorf("Eventually returned")
	})
	want := fmt.Sprintf("waiting for a state never reached: saw %d", calls)
	if len(got) != 1 || !strings.Contains(got[0], want) {
		t.Errorf("failures %q, want one containing %q", got, want)
	}
}

func TestErrorf(t *testing.T) {
	if err := Errorf(true, "no"); err != nil {
		t.Errorf("Errorf(true) = %v, want nil", err)
	}
	if err := Errorf(false, "n=%d", 3); err == nil || err.Error() != "n=3" {
		t.Errorf("Errorf(false) = %v, want n=3", err)
	}
}

func TestIdentityAndSettled(t *testing.T) {
	settled := record.Stats{Recorded: 5, Broadcast: 5, Offered: 5, Stats: sink.Stats{Created: 4, Patched: 1}}
	for _, c := range []struct {
		name             string
		st               record.Stats
		identity, settle int // failures wanted
	}{
		{"settled", settled, 0, 0},
		{"an event in no bucket", func() record.Stats { s := settled; s.Recorded++; return s }(), 1, 1},
		{"two sinks", record.Stats{Recorded: 1, Broadcast: 1, Offered: 2, Stats: sink.Stats{Created: 2}}, 0, 1},
		{"pending", record.Stats{Recorded: 2, Broadcast: 2, Offered: 2, Stats: sink.Stats{Created: 1, Pending: 1}}, 0, 1},
	} {
		if got := run(func(t testing.TB) { Identity(t, c.st) }); len(got) != c.identity {
			t.Errorf("%s: Identity reported %q, want %d failures", c.name, got, c.identity)
		}
		if got := run(func(t testing.TB) { Settled(t, c.st) }); len(got) != c.settle {
			t.Errorf("%s: Settled reported %q, want %d failures", c.name, got, c.settle)
		}
	}
	got := run(func(t testing.TB) { Identity(t, record.Stats{Recorded: 3}) })
	if len(got) != 1 || !strings.Contains(got[0], "3 events in no bucket") {
		t.Errorf("Identity of 3 unplaced events reported %q", got)
	}
}

func TestEngine(t *testing.T) {
	st := sink.Stats{Created: 1, Patched: 1, Coalesced: 1, Abandoned: 1, Pending: 1, InFlight: 1, Dropped: sink.Drops{QueueFull: 1}}
	if got := run(func(t testing.TB) { Engine(t, 7, st) }); len(got) != 0 {
		t.Errorf("7 added, 7 placed: %q", got)
	}
	if got := run(func(t testing.TB) { Engine(t, 8, st) }); len(got) != 1 || !strings.Contains(got[0], "added 8 events, 7 in buckets") {
		t.Errorf("8 added, 7 placed: %q", got)
	}
}

func TestLogger(t *testing.T) {
	logger, lines := Logger()
	logger.Info("hello", "k", "v")
	logger.Error(nil, "bad", "option", "Workers")
	got := lines()
	if len(got) != 2 || !strings.Contains(got[0], `"msg"="hello" "k"="v"`) || !strings.Contains(got[1], `"option"="Workers"`) {
		t.Fatalf("lines %q", got)
	}
}

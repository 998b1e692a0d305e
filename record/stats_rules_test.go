package record_test

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// Server is the worst view of a live sink (record.Stats): one sink that
// sees its server down makes the broadcaster's Server probing, whichever
// order the sinks were started in; OldestPending is the oldest of any sink.
func TestStatsServerIsTheWorstSinks(t *testing.T) {
	down := sinktest.New()
	down.SetFault(func(context.Context, sinktest.Op, *v1.Event) error {
		return apierrors.NewServiceUnavailable("down")
	})
	clk := clocktesting.NewFakeClock(t0)
	eb := record.NewBroadcaster(record.WithSinkOptions(sink.Options{Clock: clk, QPS: sink.Unlimited, MaxDelay: time.Second}))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		_ = eb.ShutdownWithContext(ctx) // the down sink's event is abandoned
	}()
	eb.StartRecordingToSink(down)
	up := sinktest.New()
	eb.StartRecordingToSink(up) // healthy, started last
	eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: "ctrl"}).Eventf(pod("ns", "p"), v1.EventTypeWarning, "Failed", "m")
	check.Eventually(t, "one sink to see its server down and the other to write", func() error {
		st := eb.Stats()
		return check.Errorf(st.Pending == 1 && st.Created == 1, "stats %+v", st)
	})
	clk.Step(time.Second / 2)
	st := eb.Stats()
	if st.Server != sink.ServerProbing {
		t.Errorf("Server = %v with one of two sinks probing, want %v; stats %+v", st.Server, sink.ServerProbing, st)
	}
	if st.OldestPending < time.Second/2 {
		t.Errorf("OldestPending = %v, want the down sink's event's age, at least %v", st.OldestPending, time.Second/2)
	}
}

// Drops are logged at error level at most once per reason and interval:
// a loud line for one reason does not quiet the first drop of another.
func TestFirstDropOfEachReasonIsLoud(t *testing.T) {
	e := newEnv(t)
	e.rec.Event(nil, v1.EventTypeNormal, "R", "invalid: nil object") // loud: the first invalid drop
	e.rec.Event(nil, v1.EventTypeNormal, "R", "invalid again")       // quiet: same reason
	e.flush()
	e.eb.Shutdown()
	e.rec.Event(pod("ns", "p"), v1.EventTypeNormal, "R", "after shutdown") // loud: the first after_shutdown drop
	var loud []string
	for _, line := range strings.Split(e.logs(), "\n") {
		if strings.HasPrefix(line, "E") {
			loud = append(loud, line)
		}
	}
	var invalid, afterShutdown int
	for _, line := range loud {
		switch {
		case strings.Contains(line, `dropReason="invalid"`):
			invalid++
		case strings.Contains(line, `dropReason="after_shutdown"`):
			afterShutdown++
		}
	}
	if invalid != 1 || afterShutdown != 1 {
		t.Errorf("error-level drop lines: %d invalid, %d after_shutdown; want 1 each:\n%s", invalid, afterShutdown, strings.Join(loud, "\n"))
	}
	if s := e.eb.Stats(); s.Dropped.Invalid != 2 || s.Dropped.AfterShutdown != 1 {
		t.Errorf("stats %+v", s)
	}
}

// The correlator runs on CorrelatorOptions.Clock when it is set, not on the
// engine's clock (WithSinkOptions' doc): its spam filter refills by that
// clock's time.
func TestCorrelatorClockOptionIsKept(t *testing.T) {
	corrClk := clocktesting.NewFakeClock(t0)
	e := newEnv(t, record.WithCorrelatorOptions(record.CorrelatorOptions{BurstSize: 1, QPS: 1, Clock: corrClk}))
	p := pod("ns", "p")
	e.rec.Event(p, v1.EventTypeNormal, "R", "first") // takes the spam bucket's only token
	e.flush()
	corrClk.Step(time.Minute) // refills it, by the correlator's clock only
	e.rec.Event(p, v1.EventTypeNormal, "R", "second")
	e.flush()
	if s := e.eb.Stats(); s.Filtered != 0 || s.Created != 2 {
		t.Errorf("stats %+v: want both events created, the second after the correlator's clock refilled the bucket", s)
	}
}

// A drop's log line carries the reason cut to 128 bytes, as every field
// it logs: a caller's huge reason is not logged whole (after Shutdown, or
// with invalid annotations).
func TestDropLogCutsTheReason(t *testing.T) {
	e := newEnv(t)
	huge := strings.Repeat("r", 10000)
	e.rec.AnnotatedEventf(pod("ns", "p"), map[string]string{"bad key!": "v"}, v1.EventTypeNormal, huge, "m")
	e.flush()
	e.eb.Shutdown()
	e.rec.Event(pod("ns", "p"), v1.EventTypeNormal, huge, "after shutdown")
	logs := e.logs()
	if s := e.eb.Stats(); s.Dropped.Invalid != 1 || s.Dropped.AfterShutdown != 1 {
		t.Fatalf("stats %+v", s)
	}
	if strings.Contains(logs, strings.Repeat("r", 129)) || !strings.Contains(logs, strings.Repeat("r", 128)) {
		t.Errorf("a drop's log line carries the reason longer than 128 bytes (or not at all):\n%.2000s", logs)
	}
}

package record_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// ShutdownWithContext's error counts the events that shutdown abandoned,
// and is nil when it abandoned none: the events a sink whose watch was
// stopped earlier abandoned (its grace period ran out) stay in
// Stats().Abandoned but are not the shutdown's.
func TestShutdownErrorCountsOnlyItsOwnAbandoned(t *testing.T) {
	e := newEnv(t, record.WithShutdownGracePeriod(time.Millisecond))
	hung := sinktest.New()
	hung.SetFault(func(ctx context.Context, _ sinktest.Op, _ *v1.Event) error {
		<-ctx.Done()
		return ctx.Err()
	})
	w := e.eb.StartRecordingToSink(hung)
	for i := range 3 {
		e.rec.Event(pod("ns", fmt.Sprint("p", i)), v1.EventTypeNormal, "R", "m")
	}
	w.Stop() // the hung sink retires: its grace period runs out
	check.Eventually(t, "the stopped sink to abandon its events", func() error {
		s := e.eb.Stats()
		return check.Errorf(s.Abandoned == 3 && s.Pending == 0 && s.InFlight == 0, "stats %+v", s)
	})
	e.flush() // the other sink wrote them
	if err := e.eb.ShutdownWithContext(context.Background()); err != nil {
		t.Fatalf("ShutdownWithContext = %v, want nil: it abandoned nothing itself", err)
	}
	if s := e.eb.Stats(); s.Abandoned != 3 || s.Created != 3 || s.Unaccounted() != 0 {
		t.Errorf("stats %+v, unaccounted %d; want the 3 abandoned by the stopped sink and 3 created", s, s.Unaccounted())
	}
	if got := e.logs(); strings.Contains(got, "shut down before every event was written") {
		t.Errorf("shutdown logged events abandoned although it abandoned none:\n%s", got)
	}
}

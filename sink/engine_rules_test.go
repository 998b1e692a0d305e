package sink_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// lostAnswer stores its first Create and answers it with a 500, as a
// server whose answer is lost after the event was stored (a webhook or a
// proxy timing out after etcd stored it).
type lostAnswer struct {
	*sinktest.Sink
	lost atomic.Bool
}

func (l *lostAnswer) CreateContext(ctx context.Context, ev *v1.Event) (*v1.Event, error) {
	out, err := l.Sink.CreateContext(ctx, ev)
	if err == nil && !l.lost.Swap(true) {
		return nil, apierrors.NewInternalError(errors.New("the answer was lost"))
	}
	return out, err
}

func (l *lostAnswer) Create(ev *v1.Event) (*v1.Event, error) {
	return l.CreateContext(context.Background(), ev)
}

// "an AlreadyExists answering the retry of a create whose answer was lost is
// the event written, and counted so": Created, not a drop.
func TestRetryOfALostCreateAnsweredAlreadyExistsIsWritten(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clock := clocktesting.NewFakeClock(t0)
	l := &lostAnswer{Sink: sinktest.New()}
	eng, err := sink.NewEngine(l, sink.Options{QPS: sink.Unlimited, BaseDelay: time.Second, MaxDelay: time.Second, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	eng.Start(ctx)
	defer eng.Stop(context.Background())
	eng.Add("k", event("e", 1), nil)
	check.Eventually(t, "the lost answer's retry", func() error {
		s := eng.Stats()
		if s.Created+s.Dropped.Total() == 1 {
			return nil
		}
		clock.Step(time.Second) // past the key's backoff
		return check.Errorf(false, "stats %+v", s)
	})
	if s := eng.Stats(); s.Created != 1 || s.Dropped.Total() != 0 || len(l.Events()) != 1 {
		t.Fatalf("a create whose answer was lost, retried and answered AlreadyExists: stats %+v, %d stored; want created once, no drop", s, len(l.Events()))
	}
}

// A drop for a namespace being deleted is expected in normal operation
// (client-go logs it at V(5)): it is counted, and never logged at error
// level.
func TestNamespaceTerminatingDropIsQuiet(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx := klog.NewContext(context.Background(), logger)
	s := sinktest.New()
	s.SetFault(func(_ context.Context, _ sinktest.Op, ev *v1.Event) error {
		err := apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, ev.Name, errors.New("namespace ns is being terminated"))
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: v1.NamespaceTerminatingCause}}
		return err
	})
	eng, err := sink.NewEngine(s, sink.Options{QPS: sink.Unlimited, Clock: clocktesting.NewFakeClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	eng.Start(ctx)
	eng.Add("k", event("e", 1), nil)
	if err := eng.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	eng.Stop(context.Background()) // waits for the workers, so for the log line
	if st := eng.Stats(); st.Dropped.NamespaceTerminating != 1 {
		t.Fatalf("stats %+v, want one namespace_terminating drop", st)
	}
	for _, l := range strings.Split(logger.GetSink().(ktesting.Underlier).GetBuffer().String(), "\n") {
		if strings.HasPrefix(l, "E") {
			t.Fatalf("a namespace-terminating drop logged at error level: %s", l)
		}
	}
}

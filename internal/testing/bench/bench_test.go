package bench_test

import (
	"context"
	"errors"
	"net/http"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/internal/testing/bench"
	"github.com/heraldk8s/herald/sink/sinktest"
)

func TestCaptureKlogCountsClientGoDrops(t *testing.T) {
	logs := bench.CaptureKlog()
	defer logs.Restore()
	// What client-go's recorder logs (through klog.Background()) for each
	// event it drops at a full incoming queue, and for a rejected write.
	ev := &v1.Event{Message: "m"}
	klog.Background().Error(nil, "Unable to record event: too many queued events, dropped event", "event", ev)
	klog.Background().Error(errors.New("503"), "Server rejected event (will not retry!)", "event", ev)
	klog.Background().Error(nil, "Unable to write event (may retry after sleeping)", "event", ev)
	klog.Background().Info("Not an error")
	if got := logs.Drops(); got != 2 {
		t.Errorf("Drops() = %d, want 2", got)
	}
	if got := logs.Errors(); got != 3 {
		t.Errorf("Errors() = %d, want 3 (info lines are not counted)", got)
	}
	logs.Reset()
	if logs.Drops() != 0 || logs.Errors() != 0 {
		t.Errorf("Reset left %d drops, %d errors", logs.Drops(), logs.Errors())
	}
}

func TestCountingSink(t *testing.T) {
	s := bench.NewCountingSink(nil)
	ev := &v1.Event{}
	ev.Namespace, ev.Name = bench.Namespace, "e1"
	if _, err := s.Create(ev); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateContext(context.Background(), ev); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second Create: got %v, want AlreadyExists", err)
	}
	if _, err := s.Patch(ev, []byte(`{"count":2}`)); err != nil {
		t.Fatal(err)
	}
	if got, want := s.Written(), int64(2); got != want {
		t.Errorf("Written() = %d, want %d", got, want)
	}
	if got, want := s.Calls(), int64(3); got != want {
		t.Errorf("Calls() = %d, want %d", got, want)
	}
	if events, count := s.Stored(); events != 1 || count != 2 {
		t.Errorf("Stored() = %d, %d; want 1, 2", events, count)
	}
	if s.MeanCall() <= 0 {
		t.Errorf("MeanCall() = %v, want > 0", s.MeanCall())
	}
}

func TestOutageErrorsAreClassifiedAsRetriable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"connrefused", bench.ConnRefused()},
		{"503", bench.Unavailable()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// What the engine retries as no answer from the server: not
			// an API status, or a 503.
			var status apierrors.APIStatus
			if errors.As(tc.err, &status) && status.Status().Code != http.StatusServiceUnavailable {
				t.Errorf("%v is an answer of the server (%d), want a transport error or a 503", tc.err, status.Status().Code)
			}
		})
	}
}

func TestOutageFailsUntilRecovery(t *testing.T) {
	ev := &v1.Event{}
	ended := bench.Outage(0, time.Now().Add(-time.Second), bench.Unavailable)
	if err := ended(context.Background(), sinktest.OpCreate, ev); err != nil {
		t.Errorf("after the outage: got %v, want nil", err)
	}
	ongoing := bench.Outage(0, time.Now().Add(time.Hour), bench.ConnRefused)
	if err := ongoing(context.Background(), sinktest.OpCreate, ev); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("during the outage: got %v, want connection refused", err)
	}
}

func TestEventsSink(t *testing.T) {
	s := bench.NewEventsSink(0)
	ctx := context.Background()
	ev := &eventsv1.Event{}
	ev.Namespace, ev.Name = bench.Namespace, "e1"
	ev.Regarding = v1.ObjectReference{Namespace: bench.Namespace, Name: "pod-00000"}
	if _, err := s.Create(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, ev); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second Create: got %v, want AlreadyExists", err)
	}
	out, err := s.Patch(ctx, ev, []byte(`{"series":{"count":7,"lastObservedTime":"2026-01-02T03:04:05.000006Z"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if out.Series == nil || out.Series.Count != 7 {
		t.Fatalf("Patch returned series %+v, want count 7", out.Series)
	}
	missing := ev.DeepCopy()
	missing.Name = "e2"
	if _, err := s.Patch(ctx, missing, []byte(`{"series":{"count":2}}`)); !apierrors.IsNotFound(err) {
		t.Fatalf("Patch of a missing event: got %v, want NotFound", err)
	}
	if got, want := s.Writes(), int64(4); got != want {
		t.Errorf("Writes() = %d, want %d", got, want)
	}
	if s.Creates() != 2 || s.Patches() != 2 || s.Failed() != 2 || s.Stored() != 1 {
		t.Errorf("creates %d, patches %d, failed %d, stored %d; want 2, 2, 2, 1", s.Creates(), s.Patches(), s.Failed(), s.Stored())
	}
	if got := s.Counts()[bench.Namespace+"/pod-00000"]; got != 7 {
		t.Errorf("Counts() = %d for the pod, want 7", got)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := bench.NewEventsSink(time.Hour).Create(cancelled, ev); !errors.Is(err, context.Canceled) {
		t.Errorf("Create with a cancelled context: got %v, want context.Canceled", err)
	}
}

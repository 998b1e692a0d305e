package sink_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"

	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// blockingSink is a plain EventSink (no context methods) whose writes
// never return until released.
type blockingSink struct {
	release chan struct{}
	entered chan struct{}
	once    sync.Once
}

func (s *blockingSink) Create(ev *v1.Event) (*v1.Event, error) {
	s.once.Do(func() { close(s.entered) })
	<-s.release
	return ev, nil
}
func (s *blockingSink) Update(ev *v1.Event) (*v1.Event, error) { return ev, nil }
func (s *blockingSink) Patch(ev *v1.Event, _ []byte) (*v1.Event, error) {
	return s.Create(ev)
}

// ctxIgnoringSink has context methods but ignores the context.
type ctxIgnoringSink struct{ *blockingSink }

func (s ctxIgnoringSink) CreateContext(_ context.Context, ev *v1.Event) (*v1.Event, error) {
	return s.Create(ev)
}
func (s ctxIgnoringSink) PatchContext(_ context.Context, ev *v1.Event, _ []byte) (*v1.Event, error) {
	return s.Create(ev)
}

// Stop returns by its deadline whatever the sink does; a write stuck then
// is abandoned, and not counted again when it returns.
func TestStopKeepsDeadlineWithStuckSinks(t *testing.T) {
	for _, tc := range []struct {
		name string
		sink func(*blockingSink) sink.EventSink
	}{
		{"plain sink", func(b *blockingSink) sink.EventSink { return b }},
		{"context sink ignoring its context", func(b *blockingSink) sink.EventSink { return ctxIgnoringSink{b} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			b := &blockingSink{release: make(chan struct{}), entered: make(chan struct{})}
			s := tc.sink(b)
			eng, err := sink.NewEngine(s, sink.Options{Workers: 2, QPS: sink.Unlimited})
			if err != nil {
				t.Fatal(err)
			}
			eng.Start(ctx)
			for i := range 5 {
				eng.Add(fmt.Sprint("k", i), event(fmt.Sprint("e", i), 1), nil)
			}
			<-b.entered
			if n := stopWithin(t, eng, 50*time.Millisecond); n != 5 {
				t.Fatalf("Stop abandoned %d, want 5", n)
			}
			close(b.release) // the stuck writes return now
			eng.Stop(context.Background())
			goleak.VerifyNone(t, goleak.IgnoreCurrent())
			if s := eng.Stats(); s.Created != 0 || s.Abandoned != 5 || s.InFlight != 0 {
				t.Fatalf("a write that returned after Stop was counted again: %+v", s)
			}
		})
	}
}

// A write the server stored is counted written, not abandoned, when Stop
// gives up while its OnWritten callback still runs (record's callback feeds
// the correlator there), and not counted again when the callback returns.
func TestStopDuringOnWrittenCountsItWritten(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	s := sinktest.New()
	entered, release := make(chan struct{}), make(chan struct{})
	eng, err := sink.NewEngine(s, sink.Options{QPS: sink.Unlimited, OnWritten: func(string, *v1.Event, *v1.Event) {
		close(entered)
		<-release
	}})
	if err != nil {
		t.Fatal(err)
	}
	eng.Start(ctx)
	eng.Add("k", event("e", 1), nil)
	<-entered
	if n := stopWithin(t, eng, 10*time.Millisecond); n != 0 {
		t.Errorf("Stop abandoned %d events, want 0: the server has the one written", n)
	}
	if st := eng.Stats(); st.Created != 1 || st.Abandoned != 0 || st.InFlight != 0 {
		t.Errorf("after Stop: %+v, want created 1, nothing abandoned or in flight", st)
	}
	close(release)
	goleak.VerifyNone(t, goleak.IgnoreCurrent())
	if st := eng.Stats(); st.Created != 1 || st.Abandoned != 0 || st.InFlight != 0 {
		t.Errorf("after the callback returned: %+v, want created 1 once", st)
	}
	if _, ok := s.Get("ns", "e"); !ok {
		t.Error("the sink does not hold the event")
	}
}

// client-go's own EventSinkImpl against a server that accepts the
// connection and never answers: herald uses its client's context, so Stop
// cancels the request and returns by its deadline, leaving no goroutine.
func TestStopCancelsClientGoSink(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	entered := make(chan struct{}, 10)
	unblock := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-unblock:
		}
	}))
	defer srv.Close()
	defer close(unblock)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	s := &typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")}
	eng, err := sink.NewEngine(s, sink.Options{Workers: 1, QPS: sink.Unlimited})
	if err != nil {
		t.Fatal(err)
	}
	eng.Start(ctx)
	eng.Add("k", event("e", 1), nil)
	<-entered
	if n := stopWithin(t, eng, 50*time.Millisecond); n != 1 {
		t.Fatalf("abandoned %d", n)
	}
}

// stopWithin calls Stop with a context of d and returns what it abandoned,
// failing the test if Stop does not return (well past d plus its slack).
func stopWithin(t *testing.T, eng *sink.Engine, d time.Duration) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan int64)
	go func() { done <- eng.Stop(ctx) }()
	select {
	case n := <-done:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return")
		return 0
	}
}

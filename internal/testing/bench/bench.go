package bench

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// Namespace is the namespace of every object the benchmarks record events
// about.
const Namespace = "bench"

// Source is the event source of every recorder in the benchmarks.
var Source = v1.EventSource{Component: "bench-controller", Host: "node-1"}

// Pod returns pod i of the benchmarks: a Pod without TypeMeta (its kind comes
// from the scheme, as for a typed object a controller holds), with a
// namespace, a name, a UID and a resource version.
func Pod(i int) *v1.Pod {
	name := fmt.Sprintf("pod-%05d", i)
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace:       Namespace,
		Name:            name,
		UID:             types.UID("uid-" + name),
		ResourceVersion: "42",
	}}
}

// Pods returns pods 0..n-1.
func Pods(n int) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		out[i] = Pod(i)
	}
	return out
}

// NopSink is an EventSink (herald's and client-go's) that stores nothing and
// returns at once: the cheapest downstream, for measuring the caller's cost.
// It returns the event it is given, as an API server returns the stored
// event (client-go crashes on a nil one). The zero value is ready to use; it
// is safe for concurrent use.
type NopSink struct{ calls atomic.Int64 }

var _ sink.EventSink = (*NopSink)(nil)

// Create implements EventSink.
func (s *NopSink) Create(ev *v1.Event) (*v1.Event, error) { s.calls.Add(1); return ev, nil }

// Update implements EventSink.
func (s *NopSink) Update(ev *v1.Event) (*v1.Event, error) { s.calls.Add(1); return ev, nil }

// Patch implements EventSink.
func (s *NopSink) Patch(ev *v1.Event, _ []byte) (*v1.Event, error) { s.calls.Add(1); return ev, nil }

// Calls returns how many calls the sink received.
func (s *NopSink) Calls() int64 { return s.calls.Load() }

// CountingSink wraps a sinktest.Sink and counts its successful writes with
// an atomic counter, so progress can be polled without taking the sink's
// lock or copying its events. It keeps the context methods of the sink it
// wraps (herald cancels requests through them; client-go never calls them).
type CountingSink struct {
	*sinktest.Sink
	ok           atomic.Int64
	calls, nanos atomic.Int64 // calls timed, and their total wall time
}

var _ sink.ContextEventSink = (*CountingSink)(nil)

// NewCountingSink returns a CountingSink over a new sinktest.Sink whose every
// call first goes through fault (nil: none).
func NewCountingSink(fault sinktest.Fault) *CountingSink {
	s := &CountingSink{Sink: sinktest.New()}
	s.SetFault(fault)
	return s
}

// timed runs one call, timing it and counting its success.
func (s *CountingSink) timed(call func() (*v1.Event, error)) (*v1.Event, error) {
	start := time.Now()
	ev, err := call()
	s.nanos.Add(int64(time.Since(start)))
	s.calls.Add(1)
	if err == nil {
		s.ok.Add(1)
	}
	return ev, err
}

// Create implements EventSink.
func (s *CountingSink) Create(ev *v1.Event) (*v1.Event, error) {
	return s.timed(func() (*v1.Event, error) { return s.Sink.Create(ev) })
}

// Patch implements EventSink.
func (s *CountingSink) Patch(ev *v1.Event, data []byte) (*v1.Event, error) {
	return s.timed(func() (*v1.Event, error) { return s.Sink.Patch(ev, data) })
}

// CreateContext implements sink.ContextEventSink.
func (s *CountingSink) CreateContext(ctx context.Context, ev *v1.Event) (*v1.Event, error) {
	return s.timed(func() (*v1.Event, error) { return s.Sink.CreateContext(ctx, ev) })
}

// PatchContext implements sink.ContextEventSink.
func (s *CountingSink) PatchContext(ctx context.Context, ev *v1.Event, data []byte) (*v1.Event, error) {
	return s.timed(func() (*v1.Event, error) { return s.Sink.PatchContext(ctx, ev, data) })
}

// MeanCall returns the mean wall time of the calls made so far (latency
// included), or 0.
func (s *CountingSink) MeanCall() time.Duration {
	n := s.calls.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(s.nanos.Load() / n)
}

// Written returns how many writes succeeded so far.
func (s *CountingSink) Written() int64 { return s.ok.Load() }

// Calls returns how many writes the sink received, failed ones included.
func (s *CountingSink) Calls() int64 {
	return int64(s.Sink.Calls(sinktest.OpCreate) + s.Sink.Calls(sinktest.OpPatch) + s.Sink.Calls(sinktest.OpUpdate))
}

// Stored returns how many events the sink holds and the sum of their counts.
func (s *CountingSink) Stored() (events int, count int64) {
	return len(s.Sink.Events()), s.Sink.TotalCount()
}

// ConnRefused returns the error a client gets from a dead API server: a
// transport error, which herald and client-go both retry.
func ConnRefused() error {
	return &url.Error{Op: "Post", URL: "https://127.0.0.1:6443/api/v1/namespaces/" + Namespace + "/events",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
}

// Unavailable returns a 503 StatusError without Retry-After: herald retries
// it, client-go does not (it retries no StatusError).
func Unavailable() error {
	return apierrors.NewServiceUnavailable("the server is currently unable to handle the request")
}

// Outage returns a fault that delays every call by latency and then fails it
// with err while now is before until.
func Outage(latency time.Duration, until time.Time, err func() error) sinktest.Fault {
	delay := sinktest.Latency(latency)
	return func(ctx context.Context, op sinktest.Op, ev *v1.Event) error {
		if e := delay(ctx, op, ev); e != nil {
			return e
		}
		if time.Now().Before(until) {
			return err()
		}
		return nil
	}
}

// Progress is what Observe saw.
type Progress struct {
	// N is the last value of the progress function.
	N int64
	// Last is when N last changed (the start if it never did).
	Last time.Time
}

// Observe polls progress every 5 ms from start until it reaches want, done
// is closed, max has passed since start, or it has not changed for quiet,
// whichever comes first, and returns the last value and when it changed.
// The quiet period is counted from quietFrom at the earliest (the end of an
// outage, say), so a stall before quietFrom does not end the observation.
func Observe(start, quietFrom time.Time, progress func() int64, want int64, done <-chan struct{}, quiet, max time.Duration) Progress {
	p := Progress{N: progress(), Last: start}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for p.N < want {
		finished := false
		select {
		case <-done:
			finished = true
		case <-tick.C:
		}
		now := time.Now()
		if n := progress(); n != p.N {
			p.N, p.Last = n, now
		}
		stalledSince := p.Last
		if quietFrom.After(stalledSince) {
			stalledSince = quietFrom
		}
		if finished || now.Sub(stalledSince) >= quiet || now.Sub(start) >= max {
			break
		}
	}
	return p
}

// Leaked waits up to wait for the number of goroutines to fall back to
// before (goroutines that were told to stop may take a moment to return)
// and returns how many more there are than before, or 0.
func Leaked(before int, wait time.Duration) int {
	deadline := time.Now().Add(wait)
	for {
		n := runtime.NumGoroutine() - before
		if n <= 0 {
			return 0
		}
		if time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

package sink_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/sink"
)

// eventServer answers every request with a stored event, but refuses the
// first PATCH with a 429 (Retry-After: 1), and counts the requests by
// method.
type eventServer struct {
	creates, patches atomic.Int32
}

func (s *eventServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodPatch && s.patches.Add(1) == 1 {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429,"details":{"retryAfterSeconds":1}}`)
		return
	}
	if r.Method == http.MethodPost {
		s.creates.Add(1)
	}
	fmt.Fprint(w, `{"kind":"Event","apiVersion":"v1","metadata":{"name":"e","namespace":"ns"},"count":2}`)
}

// startEventServer serves an eventServer until the test ends, and returns
// it with a clientset for it.
func startEventServer(t *testing.T) (*eventServer, *kubernetes.Clientset) {
	srv := &eventServer{}
	return srv, serve(t, srv)
}

// serve serves h until the test ends and returns a clientset for it.
func serve(t *testing.T, h http.Handler) *kubernetes.Clientset {
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestClientGoSinkPatchedWithoutItsRetries: an engine given client-go's own
// EventSinkImpl patches through herald's request, so a 429 reaches the
// engine after one request (client-go's Patch would retry it inside, up to
// ten times, hiding the overload from the rate), and is retried by the
// engine after its Retry-After.
func TestClientGoSinkPatchedWithoutItsRetries(t *testing.T) {
	srv, cs := startEventServer(t)
	_, ctx := ktesting.NewTestContext(t)
	clock := clocktesting.NewFakeClock(t0)
	eng, err := sink.NewEngine(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")}, sink.Options{Clock: clock, QPS: sink.Unlimited})
	if err != nil {
		t.Fatal(err)
	}
	eng.Start(ctx)
	defer eng.Stop(context.Background())
	h := &harness{t: t, eng: eng, clock: clock}
	eng.Add("k", event("e", 2), patchFor(2))
	h.until("the 429 seen by the engine", func(s sink.Stats) bool { return s.Retried == 1 })
	if n := srv.patches.Load(); n != 1 {
		t.Fatalf("%d PATCH requests before the engine saw the 429, want 1", n)
	}
	h.stepUntil("the patch written", 500*time.Millisecond, func(s sink.Stats) bool { return s.Patched == 1 })
	if p, c := srv.patches.Load(), srv.creates.Load(); p != 2 || c != 0 {
		t.Fatalf("%d PATCH and %d POST requests, want 2 and 0", p, c)
	}
}

// TestNamespacedClientRefusesOtherNamespaces: a sink whose client was made
// for one namespace refuses, as client-go does and without a request, an
// event of another; the engine drops it as rejected and writes the rest.
func TestNamespacedClientRefusesOtherNamespaces(t *testing.T) {
	srv, cs := startEventServer(t)
	s := &sink.EventSinkImpl{Interface: cs.CoreV1().Events("ns")}
	other := event("e", 1)
	other.Namespace = "other"
	if _, err := s.CreateContext(context.Background(), other); err == nil {
		t.Fatal("a client of namespace ns created an event in namespace other")
	}
	if _, err := s.PatchContext(context.Background(), other, patchFor(2)); err == nil {
		t.Fatal("a client of namespace ns patched an event in namespace other")
	}
	if n := srv.creates.Load() + srv.patches.Load(); n != 0 {
		t.Fatalf("%d requests sent for an event of another namespace", n)
	}
	_, ctx := ktesting.NewTestContext(t)
	eng, err := sink.NewEngine(s, sink.Options{QPS: sink.Unlimited, Clock: clocktesting.NewFakeClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	eng.Start(ctx)
	defer eng.Stop(context.Background())
	eng.Add("other", other, nil)
	eng.Add("mine", event("e", 1), nil)
	h := &harness{t: t, eng: eng}
	h.flush()
	if st := eng.Stats(); st.Dropped.Rejected != 1 || st.Created != 1 || st.Retried != 0 || srv.creates.Load() != 1 {
		t.Fatalf("stats %+v, %d POST requests; want one rejected, one created, one request", st, srv.creates.Load())
	}
}

package events_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/heraldk8s/herald/events"
)

// TestNewForConfigAndNoClientRetries: NewForConfig leaves the caller's
// config alone, sends herald's user agent, and a 429 reaches the caller
// after one request (client-go's REST client would retry it up to ten
// times), classified as an overload to retry.
func TestNewForConfigAndNoClientRetries(t *testing.T) {
	if _, err := events.NewForConfig(nil); err == nil {
		t.Fatal("nil config accepted")
	}
	var requests atomic.Int32
	var ua, path atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := requests.Add(1)
		ua.Store(r.UserAgent())
		path.Store(r.Method + " " + r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429,"details":{"retryAfterSeconds":1}}`)
			return
		}
		fmt.Fprint(w, `{"kind":"Event","apiVersion":"events.k8s.io/v1","metadata":{"name":"e","namespace":"ns"},"series":{"count":3,"lastObservedTime":"2026-01-01T00:00:00.000000Z"}}`)
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL, QPS: 5, Burst: 10, UserAgent: "my-controller"}
	s, err := events.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QPS != 5 || cfg.Burst != 10 || cfg.UserAgent != "my-controller" {
		t.Fatalf("NewForConfig modified the caller's config: %+v", cfg)
	}
	ev := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"}}
	_, err = s.Create(context.Background(), ev)
	if requests.Load() != 1 || !apierrors.IsTooManyRequests(err) {
		t.Fatalf("requests %d, err %v, want one request answered 429 (the engine's load shedding)", requests.Load(), err)
	}
	out, err := s.Patch(context.Background(), ev, []byte(`{"series":{"count":3}}`))
	if err != nil || out.Name != "e" || out.Series == nil || out.Series.Count != 3 {
		t.Fatalf("patch: %v %+v", err, out)
	}
	if got := path.Load(); got != "PATCH /apis/events.k8s.io/v1/namespaces/ns/events/e" {
		t.Fatalf("request %v", got)
	}
	if got := ua.Load(); got != "my-controller herald-events" {
		t.Fatalf("user agent %q", got)
	}
	for _, call := range []func() error{
		func() error { _, err := s.Create(context.Background(), &eventsv1.Event{}); return err },
		func() error { _, err := s.Update(context.Background(), &eventsv1.Event{}); return err },
		func() error { _, err := s.Patch(context.Background(), &eventsv1.Event{}, nil); return err },
	} {
		if err := call(); err == nil {
			t.Fatal("an event without a namespace was accepted")
		}
	}
}

// TestEmptyNamespaceIsRejected: an event without a namespace is refused
// before any request, with an error the engine drops as rejected (a 400)
// instead of retrying it as the server failing for everyone.
func TestEmptyNamespaceIsRejected(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	s, err := events.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ev := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}}
	_, errCreate := s.Create(ctx, ev)
	_, errPatch := s.Patch(ctx, ev, []byte(`{}`))
	_, errUpdate := s.Update(ctx, ev)
	for op, err := range map[string]error{"Create": errCreate, "Patch": errPatch, "Update": errUpdate} {
		if !apierrors.IsBadRequest(err) {
			t.Errorf("%s of an event without a namespace: %v, want a BadRequest", op, err)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}

package sink_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/heraldk8s/herald/sink"
)

// herald's requests are not retried inside client-go's REST client: a 429
// reaches the engine after one request (client-go's own typed client would
// retry it up to 10 times, honouring Retry-After, hiding the overload).
func TestSinkSeesTooManyRequests(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429,"details":{"retryAfterSeconds":1}}`)
	}))
	defer srv.Close()
	s, err := sink.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.CreateContext(context.Background(), event("e", 1))
	after, _ := apierrors.SuggestsClientDelay(err)
	if requests.Load() != 1 || !apierrors.IsTooManyRequests(err) || after != 1 {
		t.Fatalf("requests %d, err %v (Retry-After %d s), want one request answered 429 with Retry-After 1 s", requests.Load(), err, after)
	}
}

func TestNewForConfig(t *testing.T) {
	if _, err := sink.NewForConfig(nil); err == nil {
		t.Fatal("nil config accepted")
	}
	var ua atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ua.Store(r.UserAgent())
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"Event","apiVersion":"v1","metadata":{"name":"e","namespace":"ns"},"count":1}`)
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL, QPS: 5, Burst: 10, UserAgent: "my-controller"}
	s, err := sink.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QPS != 5 || cfg.Burst != 10 || cfg.UserAgent != "my-controller" {
		t.Fatalf("NewForConfig modified the caller's config: %+v", cfg)
	}
	out, err := s.Create(event("e", 1))
	if err != nil || out.Name != "e" {
		t.Fatalf("create: %v %+v", err, out)
	}
	if got := ua.Load(); got != "my-controller herald-events" {
		t.Fatalf("user agent %q", got)
	}
	// Its own budget: 100 writes in a row are not held to the caller's 5 QPS.
	deadline := time.Now().Add(5 * time.Second)
	for i := range 100 {
		if _, err := s.Create(event(fmt.Sprint("e", i), 1)); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d writes in 5 s: the caller's 5 QPS applies", i)
		}
	}
}

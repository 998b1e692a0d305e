// Package server_test holds the benchmarks that need a server: the fleet
// scenario (many controllers against one loopback Events API with a
// capacity and an outage) and the restart of a real kube-apiserver.
package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/heraldk8s/herald/internal/testing/bench/server"
)

// discard is a logger that drops everything: a hundred controllers' retry
// logs would drown the benchmark output.
var discard = logr.Discard()

var downMu sync.Mutex

// countDown wraps api, counting the requests each client (by user agent,
// up to its first space) makes while the server is down.
func countDown(api *eventsAPI, by map[string]int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if time.Now().Before(api.downUntil) {
			ua, _, _ := strings.Cut(r.UserAgent(), " ")
			downMu.Lock()
			by[ua]++
			downMu.Unlock()
		}
		api.ServeHTTP(w, r)
	})
}

// TestEventsAPI checks the bench server itself: 503 while down, then the
// capacity per second with 429 Retry-After above it, creates and patches.
func TestEventsAPI(t *testing.T) {
	api := newEventsAPI(time.Now(), 0, server.NewWindow(time.Now(), 2), nil)
	srv := httptest.NewServer(api)
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	rc := cs.CoreV1().RESTClient()
	ev := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"}, Count: 1}
	if err := rc.Post().Namespace("ns").Resource("events").Body(ev).MaxRetries(0).Do(t.Context()).Error(); err != nil {
		t.Fatal(err)
	}
	err = rc.Patch("application/strategic-merge-patch+json").Namespace("ns").Resource("events").Name("e").
		Body([]byte(`{"count":2,"message":"m"}`)).MaxRetries(0).Do(t.Context()).Error()
	if err != nil {
		t.Fatal(err)
	}
	err = rc.Post().Namespace("ns").Resource("events").Body(ev).MaxRetries(0).Do(t.Context()).Error()
	if err == nil || !strings.Contains(err.Error(), "too many requests") {
		// The third request within the second may fall into the next
		// second; then it is an AlreadyExists.
		if err == nil || !strings.Contains(err.Error(), "already exists") {
			t.Fatalf("third request: %v", err)
		}
	}
	if got := api.events["ns/e"]; got == nil || got.Count != 2 || got.Message != "m" {
		t.Fatalf("stored %+v", got)
	}
	down := newEventsAPI(time.Now(), time.Hour, server.NewWindow(time.Now(), 10), nil)
	srv2 := httptest.NewServer(down)
	defer srv2.Close()
	cs2, _ := kubernetes.NewForConfig(&rest.Config{Host: srv2.URL, QPS: -1})
	err = cs2.CoreV1().RESTClient().Post().Namespace("ns").Resource("events").Body(ev).MaxRetries(0).Do(t.Context()).Error()
	if err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("while down: %v", err)
	}
}

// TestEventsAPIHoldsTheAnswer: the server answers when the model says the
// answer leaves, and refuses what the model refuses meanwhile.
func TestEventsAPIHoldsTheAnswer(t *testing.T) {
	model := &server.InFlight{Limit: 1, Service: 300 * time.Millisecond, RetryAfter: time.Second}
	api := newEventsAPI(time.Now(), 0, model, func() time.Duration { return 10 * time.Millisecond })
	srv := httptest.NewServer(api)
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	post := func(name string) (time.Duration, error) {
		start := time.Now()
		ev := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Count: 1}
		err := cs.CoreV1().RESTClient().Post().Namespace("ns").Resource("events").Body(ev).MaxRetries(0).Do(t.Context()).Error()
		return time.Since(start), err
	}
	first := make(chan error, 1)
	var took time.Duration
	go func() {
		var err error
		took, err = post("a")
		first <- err
	}()
	time.Sleep(100 * time.Millisecond) // the first is being served
	if d, err := post("b"); err == nil || !strings.Contains(err.Error(), "too many requests") || d > 250*time.Millisecond {
		t.Fatalf("second request while the first is served: %v after %v, want a 429 at once", err, d)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if took < 300*time.Millisecond {
		t.Fatalf("the first answer came after %v, before its service time", took)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if api.writes != 1 || api.tooMany != 1 || api.events["ns/a"] == nil {
		t.Fatalf("writes %d, 429 %d", api.writes, api.tooMany)
	}
}

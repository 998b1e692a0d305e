package events_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

type request struct{ method, path, contentType, body, userAgent string }

// apiServer is a tiny events.k8s.io/v1 server: it stores created events,
// applies series patches and answers 503 to the first fail requests.
func apiServer(t *testing.T, fail int) (*httptest.Server, func() []request) {
	var mu sync.Mutex
	var reqs []request
	store := map[string]*eventsv1.Event{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		reqs = append(reqs, request{r.Method, r.URL.Path, r.Header.Get("Content-Type"), string(body), r.UserAgent()})
		w.Header().Set("Content-Type", "application/json")
		if fail > 0 {
			fail--
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Code: 503, Reason: metav1.StatusReasonServiceUnavailable})
			return
		}
		switch r.Method {
		case http.MethodPost:
			var ev eventsv1.Event
			if err := json.Unmarshal(body, &ev); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			ev.ResourceVersion = "1"
			store[r.URL.Path+"/"+ev.Name] = &ev
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(&ev)
		case http.MethodPatch:
			ev, ok := store[r.URL.Path]
			if !ok {
				w.WriteHeader(http.StatusNotFound)
				_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Code: 404, Reason: metav1.StatusReasonNotFound})
				return
			}
			if err := applySeriesPatch(ev, body); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			_ = json.NewEncoder(w).Encode(ev)
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() []request {
		mu.Lock()
		defer mu.Unlock()
		return append([]request(nil), reqs...)
	}
}

func TestEventSinkImplOverHTTP(t *testing.T) {
	srv, reqs := apiServer(t, 1)
	cfg := &rest.Config{Host: srv.URL, QPS: 1, Burst: 1, UserAgent: "mine"}
	s, err := events.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QPS != 1 || cfg.UserAgent != "mine" {
		t.Errorf("NewForConfig changed cfg: %+v", cfg)
	}
	b := events.NewBroadcaster(s, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited, BaseDelay: 1, MaxDelay: 1})))
	defer b.Shutdown()
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := b.NewRecorder(scheme.Scheme, "example.com/ctl")
	r.Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "n")
	flush(t, b)
	r.Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "n")
	flush(t, b)
	got := reqs()
	// A 503, retried by herald's engine (not by the REST client), then the
	// create and the series patch.
	if len(got) != 3 {
		t.Fatalf("requests %+v", got)
	}
	if got[0].method != "POST" || got[1].method != "POST" || got[1].path != "/apis/events.k8s.io/v1/namespaces/ns/events" {
		t.Errorf("creates %+v %+v", got[0], got[1])
	}
	if !strings.HasSuffix(got[1].userAgent, " herald-events") || !strings.HasPrefix(got[1].userAgent, "mine") {
		t.Errorf("user agent %q", got[1].userAgent)
	}
	p := got[2]
	if p.method != "PATCH" || !strings.HasPrefix(p.path, "/apis/events.k8s.io/v1/namespaces/ns/events/p.") ||
		p.contentType != "application/strategic-merge-patch+json" || !patchBody.MatchString(p.body) {
		t.Errorf("patch %+v", p)
	}
	st := b.Stats()
	if st.Created != 1 || st.Patched != 1 || st.Retried != 1 {
		t.Errorf("stats %+v", st)
	}
	check.Settled(t, st)
}

func TestEventSinkImplEmptyNamespace(t *testing.T) {
	s := &events.EventSinkImpl{Interface: nil}
	ctx := context.Background()
	ev := &eventsv1.Event{}
	if _, err := s.Create(ctx, ev); err == nil || !strings.Contains(err.Error(), "empty namespace") {
		t.Errorf("Create: %v", err)
	}
	if _, err := s.Update(ctx, ev); err == nil || !strings.Contains(err.Error(), "empty namespace") {
		t.Errorf("Update: %v", err)
	}
	if _, err := s.Patch(ctx, ev, nil); err == nil || !strings.Contains(err.Error(), "empty namespace") {
		t.Errorf("Patch: %v", err)
	}
	if _, err := events.NewForConfig(nil); err == nil {
		t.Error("NewForConfig(nil): no error")
	}
}

package soak

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// TestHTTPTap: the tap on an extra slot's transport tells the incarnation
// of every event write and its outcome, as the sink taps do: a write whose
// answer was lost (the connection closed after the server read it) or a
// 5xx of the server is uncertain, with the count it carried; a refusal
// (403) is not, and its reason is kept; other requests pass untouched.
func TestHTTPTap(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		// The clientset sends protobuf.
		var name string
		if obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil); err == nil {
			name = obj.(metav1.Object).GetName()
		}
		status := func(code int, reason metav1.StatusReason, msg string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg})
		}
		switch {
		case name == "lost":
			// The answer is lost: the connection closes without one.
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		case name == "refused":
			status(http.StatusForbidden, metav1.StatusReasonForbidden, "no")
		case r.Method == http.MethodPatch:
			status(http.StatusInternalServerError, metav1.StatusReasonInternalError, "etcd is down")
		case r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"ns"}}`))
		default:
			w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(body)
		}
	}))
	defer srv.Close()

	inc := &incarnation{id: "s6.0", kind: slotKind{api: coreAPI}, events: map[string]*written{}, refusals: map[string]string{}}
	cs, err := kubernetes.NewForConfig(tapConfig(&rest.Config{Host: srv.URL}, inc))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	event := func(name string, count int32) *v1.Event {
		return &v1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Count: count}
	}
	if _, err := cs.CoreV1().Events("ns").Create(ctx, event("ok", 3), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := cs.CoreV1().Events("ns").Create(ctx, event("refused", 1), metav1.CreateOptions{}); err == nil {
		t.Fatal("refused create: no error")
	}
	if _, err := cs.CoreV1().Events("ns").Create(ctx, event("lost", 2), metav1.CreateOptions{}); err == nil {
		t.Fatal("lost create: no error")
	}
	if _, err := cs.EventsV1().Events("ns").Patch(ctx, "e2", types.MergePatchType, []byte(`{"series":{"count":4}}`), metav1.PatchOptions{}); err == nil {
		t.Fatal("patch: no error")
	}
	if _, err := cs.EventsV1().Events("ns").Create(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e3"}, Series: &eventsv1.EventSeries{Count: 5}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("events.k8s.io/v1 create: %v", err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "ns", metav1.GetOptions{}); err != nil {
		t.Fatalf("get: %v", err)
	}

	uncertain := map[string][]int32{}
	for key, w := range inc.events {
		for c := range w.uncertain {
			uncertain[key] = append(uncertain[key], c)
		}
	}
	want := map[string][]int32{"ns/lost": {2}, "ns/e2": {4}}
	if len(uncertain) != len(want) || uncertain["ns/lost"] == nil || uncertain["ns/lost"][0] != 2 || uncertain["ns/e2"] == nil || uncertain["ns/e2"][0] != 4 {
		t.Errorf("uncertain writes %v, want %v", uncertain, want)
	}
	if _, ok := inc.refusals[string(metav1.StatusReasonForbidden)]; !ok || len(inc.refusals) != 2 {
		t.Errorf("refusals %v, want Forbidden and InternalError", inc.refusals)
	}
}

// TestShutdownWithin: an extra slot's incarnation is built with the
// deadline of the schedule's next restart of its slot (in the order of the
// schedule), and the last one with settleShutdown.
func TestShutdownWithin(t *testing.T) {
	s := &soak{sched: []Fault{
		{At: 1 * time.Second, Kind: SinkRestart, Slot: 6, For: 300 * time.Millisecond},
		{At: 2 * time.Second, Kind: Flush, Slot: 6, For: 50 * time.Millisecond},
		{At: 3 * time.Second, Kind: SinkRestart, Slot: 1, For: 700 * time.Millisecond},
		{At: 4 * time.Second, Kind: SinkRestart, Slot: 6, For: 2 * time.Second},
	}}
	for _, c := range []struct {
		slot, gen int
		want      time.Duration
	}{
		{6, 0, 300 * time.Millisecond}, {6, 1, 2 * time.Second}, {6, 2, settleShutdown},
		{1, 0, 700 * time.Millisecond}, {1, 1, settleShutdown}, {7, 0, settleShutdown},
	} {
		if got := s.shutdownWithin(c.slot, c.gen); got != c.want {
			t.Errorf("slot %d generation %d: Shutdown within %v, want %v", c.slot, c.gen, got, c.want)
		}
	}
}

package events_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/heraldk8s/herald/events"
)

// NewForConfig gives herald's events.k8s.io/v1 writes a client of their
// own, made from the controller's rest.Config (no client-side rate limit,
// " herald-events" added to the user agent). Here a test server stands in
// for the API server.
func ExampleNewForConfig() {
	apiserver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println(r.Method, r.URL.Path, "user agent:", r.UserAgent())
		body, _ := io.ReadAll(r.Body) // the API server stores the event and returns it
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	}))
	defer apiserver.Close()

	cfg := &rest.Config{Host: apiserver.URL, UserAgent: "my-controller"} // in a controller: ctrl.GetConfigOrDie(), clientcmd...
	s, err := events.NewForConfig(cfg)
	if err != nil {
		fmt.Println("NewForConfig:", err)
		return
	}
	broadcaster := events.NewBroadcaster(s)
	if err := broadcaster.StartRecordingToSinkWithContext(context.Background()); err != nil {
		fmt.Println("start:", err)
		return
	}
	recorder := broadcaster.NewRecorder(scheme.Scheme, "example.com/my-controller")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web-0"}}
	recorder.Eventf(pod, nil, v1.EventTypeNormal, "Started", "Start", "started container %s", "web")
	broadcaster.Shutdown() // writes what is pending, then stops

	st := broadcaster.Stats()
	fmt.Printf("recorded %d, created %d, dropped %d\n", st.Recorded, st.Created, st.Dropped.Total())
	// Output:
	// POST /apis/events.k8s.io/v1/namespaces/demo/events user agent: my-controller herald-events
	// recorded 1, created 1, dropped 0
}

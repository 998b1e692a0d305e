package sink_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// NewForConfig gives herald's writes a client of their own, made from the
// controller's rest.Config: no client-side rate limit (the engine's write
// limit is herald's one budget) and " herald-events" added to the user
// agent. Here a test server stands in for the API server.
func ExampleNewForConfig() {
	apiserver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println(r.Method, r.URL.Path, "user agent:", r.UserAgent())
		body, _ := io.ReadAll(r.Body) // the API server stores the event and returns it
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	}))
	defer apiserver.Close()

	cfg := &rest.Config{Host: apiserver.URL, QPS: 5, Burst: 10, UserAgent: "my-controller"} // ctrl.GetConfigOrDie(), clientcmd...
	s, err := sink.NewForConfig(cfg)
	if err != nil {
		fmt.Println("NewForConfig:", err)
		return
	}
	stored, err := s.CreateContext(context.Background(), &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "demo", Name: "web-0.1"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "demo", Name: "web-0"},
		Type:           v1.EventTypeNormal, Reason: "Started", Message: "Started container web", Count: 1,
	})
	if err != nil {
		fmt.Println("create:", err)
		return
	}
	fmt.Println("stored:", stored.Namespace+"/"+stored.Name, stored.Reason)
	fmt.Println("caller's config unchanged:", cfg.QPS, cfg.Burst, cfg.UserAgent)
	// Output:
	// POST /api/v1/namespaces/demo/events user agent: my-controller herald-events
	// stored: demo/web-0.1 Started
	// caller's config unchanged: 5 10 my-controller
}

// The engine is what record's broadcaster runs around the sink it is given;
// it can be used on its own. Add hands it the newest state of an event
// (never blocking), Flush waits until what was added is written, Stop ends
// its goroutines. A newer state of an event still waiting replaces it: the
// two become one write carrying the latest count.
func ExampleNewEngine() {
	store := sinktest.New() // in a controller: sink.NewForConfig(cfg)
	engine, err := sink.NewEngine(store, sink.Options{Workers: 2})
	if err != nil {
		fmt.Println("NewEngine:", err)
		return
	}

	ev := &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "demo", Name: "web-0.1"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "demo", Name: "web-0"},
		Type:           v1.EventTypeWarning, Reason: "BackOff", Message: "Back-off restarting failed container web",
	}
	for count := int32(1); count <= 3; count++ {
		state := ev.DeepCopy()
		state.Count = count
		engine.Add("demo/web-0/BackOff", state, nil) // nil patch: the server does not have it yet, create it
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	engine.Start(ctx)
	if err := engine.Flush(ctx); err != nil {
		fmt.Println("flush:", err)
	}
	abandoned := engine.Stop(ctx)

	for _, e := range store.Events() {
		fmt.Printf("%s %s: %s (count %d)\n", e.Name, e.Reason, e.Message, e.Count)
	}
	s := engine.Stats()
	fmt.Printf("created %d, coalesced %d, dropped %d, abandoned %d\n", s.Created, s.Coalesced, s.Dropped.Total(), abandoned)
	// Output:
	// web-0.1 BackOff: Back-off restarting failed container web (count 3)
	// created 1, coalesced 2, dropped 0, abandoned 0
}

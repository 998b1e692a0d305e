package sink_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// Classify is the engine's reading of a sink's error: retry (and how soon),
// create instead of patch, or drop for good, with the reason counted in the
// metrics.
func ExampleClassify() {
	events := schema.GroupResource{Resource: "events"}
	for _, c := range []struct {
		err      error
		patching bool
	}{
		{errors.New("dial tcp 10.0.0.1:443: connect: connection refused"), false},
		{apierrors.NewTooManyRequests("slow down", 2), false},
		{apierrors.NewNotFound(events, "web-0.1"), true},
		{apierrors.NewNotFound(events, "web-0.1"), false}, // a Create: the namespace is missing
		{apierrors.NewForbidden(events, "web-0.1", errors.New("no RBAC rule")), false},
		{apierrors.NewAlreadyExists(events, "web-0.1"), false},
	} {
		cl := sink.Classify(c.err, c.patching)
		fmt.Printf("%v (patch %t): %s, overload %t\n", c.err, c.patching, cl, cl.Overload)
	}
	// Output:
	// dial tcp 10.0.0.1:443: connect: connection refused (patch false): retry, overload false
	// slow down (patch false): retry after 2s, overload true
	// events "web-0.1" not found (patch true): create instead, overload false
	// events "web-0.1" not found (patch false): drop: rejected, overload false
	// events "web-0.1" is forbidden: no RBAC rule (patch false): drop: forbidden, overload false
	// events "web-0.1" already exists (patch false): drop: already_exists, overload false
}

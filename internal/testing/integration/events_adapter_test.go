package integration

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/internal/testing/faultproxy"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// TestEventsV1Adapter runs herald's EventBroadcasterAdapter against the
// real server, through a proxy that counts requests: it chooses
// events.k8s.io/v1 (discovery answers), so NewRecorder's events are written
// there with their action, related object and series; the recorder of
// DeprecatedNewLegacyRecorder writes core/v1 events; and Shutdown, called
// right after recording, writes both. Discovery failing with 503s first
// changes nothing: the failed writes are retried, and events.k8s.io/v1 is
// still chosen. When discovery says events.k8s.io/v1 is not served, the
// same events are written through core/v1, keeping action, related object
// and series.
func TestEventsV1Adapter(t *testing.T) {
	const (
		controllerName = "example.com/adapter-it"
		legacyName     = "legacy-it"
	)
	for _, tc := range []struct {
		name  string
		fault func(p *faultproxy.Proxy)
		// discoveryFailures is how many discovery requests fail.
		discoveryFailures int
		// notServed: discovery says events.k8s.io/v1 is not served, so
		// NewRecorder's events go through core/v1.
		notServed bool
	}{
		{name: "discovery answers", fault: func(*faultproxy.Proxy) {}},
		{
			// NewRecorder's events keep their action, related object and
			// series on core/v1 (client-go's core/v1 path drops them).
			name: "events.k8s.io/v1 not served",
			fault: func(p *faultproxy.Proxy) {
				p.FailMatching(faultproxy.Match{Method: "GET", PathContains: "/apis/events.k8s.io/v1"}, http.StatusNotFound, 0, 1000)
			},
			discoveryFailures: 1,
			notServed:         true,
		},
		{
			// client-go's adapter would choose core/v1 for good here.
			name: "discovery fails twice first",
			fault: func(p *faultproxy.Proxy) {
				p.FailMatching(faultproxy.Match{Method: "GET", PathContains: "/apis/events.k8s.io/v1"}, http.StatusServiceUnavailable, 0, 2)
			},
			discoveryFailures: 2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			admin := adminClient(t)
			ns := env.CreateNamespace(t, "ev-adapter")
			proxy := newProxy(t)
			cs := newClientset(t, proxy.Config(env.Admin))
			logger := ktesting.NewLogger(t, ktesting.NewConfig())

			ad := events.NewEventBroadcasterAdapterWithContext(context.Background(), cs, events.WithBroadcasterOptions(record.WithLogger(logger)))
			stopCh := make(chan struct{})
			t.Cleanup(func() { close(stopCh) })
			t.Cleanup(ad.Shutdown) // idempotent; runs before close(stopCh)
			tc.fault(proxy)
			ad.StartRecordingToSink(stopCh)

			rec := ad.NewRecorder(controllerName)
			for range 3 {
				rec.Eventf(podRef(ns, "web-0"), podRef(ns, "web-0-sidecar"), v1.EventTypeWarning, "BackOff", "Restart", "Back-off restarting failed container")
			}
			rec.Eventf(podRef(ns, "web-1"), nil, v1.EventTypeNormal, "Scaled", "Scale", "Scaled to %d", 3)
			legacy := ad.DeprecatedNewLegacyRecorder(legacyName)
			for range 2 {
				legacy.Eventf(podRef(ns, "old-0"), v1.EventTypeNormal, "Pulled", "Pulled image")
			}
			legacy.Eventf(podRef(ns, "old-1"), v1.EventTypeWarning, "Failed", "Failed to pull image")

			ad.Shutdown()
			st, ok := ad.(interface {
				Stats() events.Stats
				LegacyStats() events.Stats
			})
			if !ok {
				t.Fatalf("the adapter %T has no Stats and LegacyStats", ad)
			}
			if s := st.Stats(); s.Recorded != 4 || written(s) != 4 || s.Created != 2 || s.Dropped.Total() != 0 || s.Abandoned != 0 {
				t.Errorf("events.k8s.io/v1 stats %+v: want 4 recorded and written, 2 created", s)
			}
			if s := st.LegacyStats(); s.Recorded != 3 || written(s) != 3 || s.Created != 2 || s.Dropped.Total() != 0 || s.Abandoned != 0 {
				t.Errorf("core/v1 stats %+v: want 3 recorded and written, 2 created", s)
			}

			// Chosen by discovery: events.k8s.io/v1 for NewRecorder's events,
			// core/v1 for the legacy recorder's only.
			wantDiscovery, wantV1Posts, wantCorePosts := tc.discoveryFailures+1, 2, 2
			if tc.notServed {
				wantDiscovery, wantV1Posts, wantCorePosts = 1, 0, 4
			}
			if got := proxy.Requests("GET", "/apis/events.k8s.io/v1"); got != wantDiscovery {
				t.Errorf("%d discovery requests for events.k8s.io/v1, want %d", got, wantDiscovery)
			}
			if fails, _ := proxy.Injected(); fails != tc.discoveryFailures {
				t.Errorf("the proxy failed %d requests, want %d", fails, tc.discoveryFailures)
			}
			if got := proxy.Requests("POST", "/apis/events.k8s.io/v1/namespaces/"+ns+"/events"); got != wantV1Posts {
				t.Errorf("%d events.k8s.io/v1 POSTs, want %d", got, wantV1Posts)
			}
			if got := proxy.Requests("POST", "/api/v1/namespaces/"+ns+"/events"); got != wantCorePosts {
				t.Errorf("%d core/v1 POSTs, want %d", got, wantCorePosts)
			}

			ctx := t.Context()
			v1evs, err := listV1(ctx, admin, ns, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("listing events.k8s.io/v1 events: %v", err)
			}
			var mine []eventsv1.Event
			for _, e := range v1evs {
				if e.ReportingController == controllerName {
					mine = append(mine, e)
				}
			}
			if err := countV1(map[string]int32{"web-0/Restart": 3, "web-1/Scale": 1})(mine); err != nil {
				t.Errorf("NewRecorder's events: %v\n%s", err, describeV1(v1evs))
			}
			for _, e := range mine {
				if e.Regarding.Name == "web-0" && (e.Related == nil || e.Related.Name != "web-0-sidecar") {
					t.Errorf("event %s: related %+v, want web-0-sidecar", e.Name, e.Related)
				}
				if e.EventTime.IsZero() || e.ReportingInstance == "" || (!tc.notServed && e.DeprecatedCount != 0) {
					t.Errorf("event %s: eventTime %v, reportingInstance %q, deprecatedCount %d: not an events.k8s.io/v1 event",
						e.Name, e.EventTime, e.ReportingInstance, e.DeprecatedCount)
				}
			}

			core, err := listEvents(ctx, admin, ns, metav1.ListOptions{FieldSelector: "source=" + legacyName})
			if err != nil {
				t.Fatalf("listing core/v1 events: %v", err)
			}
			if err := countEvents(map[string]int32{"old-0": 2, "old-1": 1})(core); err != nil {
				t.Errorf("legacy recorder's events: %v\n%s", err, describeEvents(core))
			}
			for _, e := range core {
				if e.Source.Component != legacyName || e.Action != "" || !e.EventTime.IsZero() {
					t.Errorf("legacy event %s: source %+v, action %q, eventTime %v: want a core/v1 event of %s",
						e.Name, e.Source, e.Action, e.EventTime, legacyName)
				}
			}
			if t.Failed() {
				t.Logf("all events.k8s.io/v1 events in %s:\n%s", ns, describeV1(v1evs))
			}

		})
	}
}

// TestEventsV1AdapterContextEnd ends the adapter's context right after
// recording: as documented (and as client-go does for its core/v1
// broadcaster), that shuts the adapter down, and herald writes what was
// recorded first, through both broadcasters.
func TestEventsV1AdapterContextEnd(t *testing.T) {
	const n = 200
	admin := adminClient(t)
	ns := env.CreateNamespace(t, "ev-adapter-ctx")
	logger := ktesting.NewLogger(t, ktesting.NewConfig())
	ctx, cancel := context.WithCancel(context.Background())
	ad := events.NewEventBroadcasterAdapterWithContext(ctx, admin, events.WithBroadcasterOptions(record.WithLogger(logger), record.WithSinkOptions(sink.Options{QPS: sink.Unlimited})))
	t.Cleanup(ad.Shutdown)
	ad.StartRecordingToSink(nil)
	rec, legacy := ad.NewRecorder("example.com/adapter-ctx-it"), ad.DeprecatedNewLegacyRecorder("legacy-ctx-it")
	want, wantCore := map[string]int32{}, map[string]int32{}
	for i := range n {
		name := fmt.Sprintf("pod-%03d", i)
		want[name] = 1
		rec.Eventf(podRef(ns, name), nil, v1.EventTypeNormal, "Started", defaultAction, "Started")
		wantCore["old-"+name] = 1
		legacy.Eventf(podRef(ns, "old-"+name), v1.EventTypeNormal, "Pulled", "Pulled image")
	}
	cancel()
	st := ad.(interface {
		Stats() events.Stats
		LegacyStats() events.Stats
	})
	check.Eventually(t, "every event written after the adapter's context ended", func() error {
		s, l := st.Stats(), st.LegacyStats()
		if written(s) != n || written(l) != n {
			return fmt.Errorf("stats %+v, legacy stats %+v", s, l)
		}
		return nil
	})
	evs := waitV1(t, admin, ns, metav1.ListOptions{FieldSelector: "reportingController=example.com/adapter-ctx-it"}, countV1(want))
	if len(evs) != n {
		t.Errorf("%d events.k8s.io/v1 events, want %d", len(evs), n)
	}
	waitEvents(t, admin, ns, metav1.ListOptions{FieldSelector: "source=legacy-ctx-it"}, countEvents(wantCore))
}

// TestEventsV1AdapterDiscoveryHangs: the adapter's first discovery request
// for events.k8s.io/v1 gets no answer (a stalled connection); every later
// request is answered. The request is bounded by the engine's
// RequestTimeout (2 s here) as a write is, and asked again: the event is
// written through events.k8s.io/v1 well within the Flush's 20 s, and no
// goroutine of the adapter is left once ShutdownWithContext has returned.
// (client-go v0.35 and v0.36 send discovery without a context: it waited
// for ever, every other write behind it.)
func TestEventsV1AdapterDiscoveryHangs(t *testing.T) {
	ns := env.CreateNamespace(t, "ev-adapter-hang")
	cfg := rest.CopyConfig(env.Admin)
	var discoveries atomic.Int32
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && r.URL.Path == "/apis/events.k8s.io/v1" && discoveries.Add(1) == 1 {
				select {
				case <-r.Context().Done():
					return nil, r.Context().Err()
				case <-release:
				}
			}
			return rt.RoundTrip(r)
		})
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig())
	ad := events.NewEventBroadcasterAdapterWithContext(context.Background(), newClientset(t, cfg),
		events.WithBroadcasterOptions(record.WithLogger(logger), record.WithSinkOptions(sink.Options{RequestTimeout: 2 * time.Second})))
	t.Cleanup(ad.Shutdown)
	ad.StartRecordingToSink(nil)
	ad.NewRecorder("example.com/adapter-hang").Eventf(podRef(ns, "web-0"), nil, v1.EventTypeNormal, "Started", defaultAction, "Started")

	a := ad.(interface {
		Flush(context.Context) error
		ShutdownWithContext(context.Context) error
		Stats() events.Stats
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := a.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v; %d discovery requests; stats %+v", err, discoveries.Load(), a.Stats())
	}
	if s := a.Stats(); s.Created != 1 || s.Retried < 1 || discoveries.Load() != 2 {
		t.Errorf("stats %+v, %d discovery requests: want the event created after one retry of discovery", s, discoveries.Load())
	}
	evs, err := listV1(t.Context(), adminClient(t), ns, metav1.ListOptions{})
	if err != nil || len(evs) != 1 {
		t.Fatalf("%d events.k8s.io/v1 events stored (%v), want 1", len(evs), err)
	}
	if err := a.ShutdownWithContext(ctx); err != nil {
		t.Errorf("ShutdownWithContext: %v", err)
	}
	check.Eventually(t, "no goroutine of the adapter's discovery", func() error {
		buf := make([]byte, 1<<22)
		stacks := string(buf[:runtime.Stack(buf, true)])
		return check.Errorf(!strings.Contains(stacks, "events.(*discoverySink)"), "a goroutine in the adapter's discoverySink after ShutdownWithContext")
	})
}

// roundTripper is a function as an http.RoundTripper.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

package integration

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldk8s/herald/internal/testing/faultproxy"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// TestFaults records events while a fault proxy between herald and the API
// server injects the faults of a real network, and checks that afterwards
// the API server holds every event with the right count.
//
// client-go's REST client absorbs some faults itself: it retries a 429 or
// 5xx answer that carries Retry-After up to 10 times (sleeping the advertised
// time), but never a POST or PATCH that failed at the transport level (see
// package faultproxy). The expected herald retries (Stats.Retried) follow
// from that: zero where client-go absorbed the fault, one per failed attempt
// where the failure reached herald.
//
// The subtests run in parallel, each with its own proxy, namespace and
// broadcaster.
func TestFaults(t *testing.T) {
	const (
		distinct = 10 // new objects with one event each: Creates
		repeats  = 4  // more occurrences of an event created before the fault: Patches
	)
	// Faults hit every request to events, Create and Patch alike.
	events := faultproxy.Match{PathContains: "/events"}

	for _, tc := range []struct {
		name  string
		opts  []record.BroadcasterOption
		fault func(p *faultproxy.Proxy)
		// flush bounds the wait for delivery.
		flush time.Duration
		// wantRetried is the exact Stats.Retried, or -1 for "at least one".
		wantRetried int64
		// wantInjected is how many requests the proxy failed or reset.
		wantInjected int
		// minTook: delivery cannot end sooner after the fault (the
		// Retry-After the failed writes were answered with).
		minTook time.Duration
		// wantCut: the fault must cut the adaptive write rate.
		wantCut bool
		check   func(t *testing.T, p *faultproxy.Proxy)
	}{
		{
			name:        "latency 50ms",
			fault:       func(p *faultproxy.Proxy) { p.SetLatency(50 * time.Millisecond) },
			flush:       flushTimeout,
			wantRetried: 0,
		},
		{
			name:         "connection resets",
			fault:        func(p *faultproxy.Proxy) { p.ResetMatching(events, 3) },
			flush:        flushTimeout,
			wantRetried:  3, // client-go never retries a POST or PATCH that failed in transport
			wantInjected: 3,
		},
		{
			name: "10s outage",
			// Retry at least every 2 s so delivery resumes soon after the
			// outage, with tries enough to outlast it.
			opts:        []record.BroadcasterOption{record.WithSinkOptions(sink.Options{MaxDelay: 2 * time.Second, MaxTries: 30})},
			fault:       func(p *faultproxy.Proxy) { p.GoDark(10 * time.Second) },
			flush:       90 * time.Second,
			wantRetried: -1,
			check: func(t *testing.T, p *faultproxy.Proxy) {
				if p.IsDark() {
					t.Errorf("Flush returned while the proxy was still dark")
				}
				if p.Refused() == 0 {
					t.Errorf("the proxy refused no connection during the outage")
				}
			},
		},
		{
			// herald's requests are not retried inside client-go's REST
			// client: the 503s reach herald, which honours Retry-After.
			name:         "503 with Retry-After reaches herald",
			fault:        func(p *faultproxy.Proxy) { p.FailMatching(events, http.StatusServiceUnavailable, time.Second, 3) },
			flush:        flushTimeout,
			wantRetried:  3,
			wantInjected: 3,
			minTook:      time.Second,
		},
		{
			name:         "503 without Retry-After",
			fault:        func(p *faultproxy.Proxy) { p.FailMatching(events, http.StatusServiceUnavailable, 0, 3) },
			flush:        flushTimeout,
			wantRetried:  3, // each answer reaches herald
			wantInjected: 3,
		},
		{
			name: "429 with Retry-After, each answer reaches herald",
			// Eleven 429s, more than client-go's REST client would retry
			// inside one request: none is hidden from herald, which waits
			// the Retry-After after each and cuts its write rate.
			opts:         []record.BroadcasterOption{record.WithSinkOptions(sink.Options{Workers: 1})},
			fault:        func(p *faultproxy.Proxy) { p.FailMatching(events, http.StatusTooManyRequests, time.Second, 11) },
			flush:        90 * time.Second,
			wantRetried:  11,
			wantInjected: 11,
			wantCut:      true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cs := adminClient(t)
			ns := env.CreateNamespace(t, "faults")
			proxy := newProxy(t)
			h := newHarness(t, heraldSink(t, proxy.Config(env.Admin)), tc.opts...)
			hot := func() { h.rec.Event(podRef(ns, "hot-0"), v1.EventTypeWarning, "Unhealthy", "Readiness probe failed") }

			// Before the fault: the event that will be patched.
			hot()
			h.flush(flushTimeout)
			waitEvents(t, cs, ns, metav1.ListOptions{}, countEvents(map[string]int32{"hot-0": 1}))
			proxy.ResetCounters()

			faulted := time.Now()
			tc.fault(proxy)
			want := map[string]int32{"hot-0": 1 + repeats}
			for range repeats {
				hot()
			}
			for i := range distinct {
				name := fmt.Sprintf("obj-%d", i)
				want[name] = 1
				h.rec.Eventf(podRef(ns, name), v1.EventTypeNormal, "Synced", "Synced %s", name)
			}

			start := time.Now()
			s := h.flush(tc.flush)
			t.Logf("delivered in %v; stats %+v", time.Since(start).Round(time.Millisecond), s)
			if total := int64(1 + repeats + distinct); s.Recorded != total || written(s) != total || s.Dropped.Total() != 0 || s.Abandoned != 0 {
				t.Errorf("stats %+v: want all %d recorded events written, none dropped", s, total)
			}
			// Every write answered with Retry-After was tried again no
			// sooner than it said: delivery cannot end before.
			if took := time.Since(faulted); took < tc.minTook {
				t.Errorf("delivered %v after the fault, sooner than the Retry-After %v of its failed writes", took.Round(time.Millisecond), tc.minTook)
			}
			if tc.wantCut && s.RateCuts == 0 {
				t.Errorf("stats %+v: the 429s cut no write rate", s)
			}
			if s.Created != 1+distinct {
				t.Errorf("stats %+v: want %d creates", s, 1+distinct)
			}
			switch {
			case tc.wantRetried < 0 && s.Retried == 0:
				t.Errorf("stats %+v: want retries", s)
			case tc.wantRetried >= 0 && s.Retried != tc.wantRetried:
				t.Errorf("stats %+v: want exactly %d retries", s, tc.wantRetried)
			}
			if fails, resets := proxy.Injected(); fails+resets != tc.wantInjected {
				t.Errorf("proxy injected %d failures and %d resets, want %d in all", fails, resets, tc.wantInjected)
			}
			// Every new object was created exactly once: no duplicate Create
			// reached the API server.
			if got := proxy.Forwarded(http.MethodPost, "/namespaces/"+ns+"/events"); got != distinct {
				t.Errorf("proxy forwarded %d POSTs, want %d", got, distinct)
			}
			if tc.check != nil {
				tc.check(t, proxy)
			}
			waitEvents(t, cs, ns, metav1.ListOptions{}, countEvents(want))
		})
	}
}

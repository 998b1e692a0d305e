package integration

import (
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// TestMessageTooLargeForEtcd: with WithMessageLimit(math.MaxInt) (messages
// kept whole, as client-go keeps them), two events whose messages (1.6 MiB)
// fit the server's 3 MiB request limit but not etcd's 1.5 MiB value limit.
// The real kube-apiserver answers each write of them with the same 500
// ("etcdserver: request is too large"): both are dropped at once as
// rejected, with an error line naming the cause, and an event recorded
// beside them is written; Flush returns. (They were read as the server
// failing: probed until Shutdown, every other event of the namespace behind
// them.)
func TestMessageTooLargeForEtcd(t *testing.T) {
	ns := env.CreateNamespace(t, "too-large")
	s, err := sink.NewForConfig(env.Admin)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, s, record.WithMessageLimit(math.MaxInt))
	for i := range 2 {
		h.rec.Event(podRef(ns, fmt.Sprintf("huge-%d", i)), v1.EventTypeWarning, "Crashed", strings.Repeat("x", 1600<<10))
	}
	h.rec.Event(podRef(ns, "small"), v1.EventTypeNormal, "Started", "started")
	st := h.flush(flushTimeout)
	if st.Dropped.Rejected != 2 || st.Dropped.Total() != 2 || st.Created != 1 {
		t.Errorf("stats %+v: want the 2 oversized events dropped as rejected and the small one created", st)
	}
	// A drop is logged just after its Flush is released.
	check.Eventually(t, "an error-level line saying the event is too large", func() error {
		for _, e := range h.errorLogs(droppedLog) {
			if e.Err != nil && strings.Contains(e.Err.Error(), "too large") {
				return nil
			}
		}
		return fmt.Errorf("no error-level %q line says the event is too large:\n%s", droppedLog, h.logs.String())
	})
}

// TestUnauthorizedRetriedWithRefreshedCredentials: the controller's
// credentials come from an exec plugin whose first token has been revoked,
// as after a rotation. The server answers the first request 401; client-go's
// transport runs the plugin again on a 401, and the next request carries a
// valid token. The event that met the 401 is written on one more try at
// once (counted in Retried), as the events after it are: a 401 says nothing
// of the event. Credentials that stay invalid still end in a drop, after
// two requests (TestForbidden covers a drop's log and count).
func TestUnauthorizedRetriedWithRefreshedCredentials(t *testing.T) {
	if env.Admin.BearerToken == "" {
		t.Fatal("the test environment's admin config has no bearer token to hand out")
	}
	ns := env.CreateNamespace(t, "creds")
	dir := t.TempDir()
	script := filepath.Join(dir, "creds.sh")
	body := fmt.Sprintf(`#!/bin/sh
c=$(cat %[1]s/count 2>/dev/null || echo 0)
echo $((c+1)) > %[1]s/count
tok=%[2]s
[ "$c" = 0 ] && tok=revoked-token
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%%s"}}' "$tok"
`, dir, env.Admin.BearerToken)
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Admin)
	cfg.BearerToken, cfg.BearerTokenFile = "", ""
	cfg.ExecProvider = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: script,
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	s, err := sink.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, s)
	h.rec.Event(podRef(ns, "first"), v1.EventTypeNormal, "Started", "first")
	h.flush(flushTimeout)
	h.rec.Event(podRef(ns, "second"), v1.EventTypeNormal, "Started", "second")
	st := h.flush(flushTimeout)
	if st.Created != 2 || st.Dropped.Total() != 0 || st.Retried != 1 {
		t.Errorf("stats %+v: want both events created, one retry, no drop", st)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "count")); strings.TrimSpace(string(got)) != "2" {
		t.Errorf("the plugin ran %q times, want 2 (the revoked token, then the fresh one)", got)
	}

	// Credentials that stay invalid: the event is dropped after two
	// requests, the one more try at once and no other.
	bad := rest.CopyConfig(env.Admin)
	bad.BearerToken, bad.BearerTokenFile = "revoked-token", ""
	var unauthorized atomic.Int64
	bad.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err == nil && resp.StatusCode == http.StatusUnauthorized && strings.Contains(r.URL.Path, "/events") {
				unauthorized.Add(1)
			}
			return resp, err
		})
	}
	bs, err := sink.NewForConfig(bad)
	if err != nil {
		t.Fatal(err)
	}
	hb := newHarness(t, bs)
	hb.rec.Event(podRef(ns, "third"), v1.EventTypeNormal, "Started", "third")
	st = hb.flush(flushTimeout)
	if st.Created != 0 || st.Dropped.Total() != 1 || st.Dropped.Rejected != 1 || st.Retried != 1 {
		t.Errorf("stats %+v: with credentials that stay invalid, want the event dropped as rejected after one retry", st)
	}
	if got := unauthorized.Load(); got != 2 {
		t.Errorf("%d requests answered 401, want 2 (the write and its one retry with refreshed credentials)", got)
	}
}

// TestEachNamespacesFirstRefusalIsLogged: in one namespace the controller
// may create events but not patch them (a common RBAC: each repeat is
// refused, a loss its owner has accepted), and a namespace newly given to
// the controller lets it write no events at all. The engine logs one error
// line per drop reason every 10 s, which the noisy namespace takes; the
// first refusal in the new namespace gets an error line of its own (it was
// logged only at V(4)).
func TestEachNamespacesFirstRefusalIsLogged(t *testing.T) {
	cs := adminClient(t)
	noisy := env.CreateNamespace(t, "refused-noisy")
	grantEvents(t, cs, noisy, "", "create")
	fresh := env.CreateNamespace(t, "refused-fresh")
	h := newHarness(t, heraldSink(t, env.Restricted))
	ref := podRef(noisy, "crashloop")
	for i := range 6 {
		h.rec.Eventf(ref, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
		h.flush(flushTimeout)
		if i == 3 {
			h.rec.Eventf(podRef(fresh, "web-0"), v1.EventTypeWarning, "FailedMount", "secret %q not found", "tls")
			h.flush(flushTimeout)
		}
	}
	st := h.flush(flushTimeout)
	if st.Created != 1 || st.Dropped.Forbidden != 6 {
		t.Fatalf("stats %+v: want the first event created, its 5 repeats and the new namespace's event dropped as forbidden", st)
	}
	// A drop is logged just after its Flush is released.
	check.Eventually(t, "one error-level drop line for each namespace", func() error {
		var inFresh, inNoisy int
		for _, e := range h.errorLogs(droppedLog) {
			switch {
			case e.Err != nil && strings.Contains(e.Err.Error(), fresh):
				inFresh++
			case e.Err != nil && strings.Contains(e.Err.Error(), noisy):
				inNoisy++
			}
		}
		return check.Errorf(inFresh == 1 && inNoisy == 1, "%d error-level drop lines for %s, %d for %s; want 1 each (the rest at V(4)):\n%s", inFresh, fresh, inNoisy, noisy, h.logs.String())
	})
}

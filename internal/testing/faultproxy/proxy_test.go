package faultproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/heraldk8s/herald/internal/testing/check"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	testToken = "test-token"
	testNS    = "default"
)

// backend is a tiny stand-in for the API server's events endpoints: it
// requires the bearer token, echoes created events and serves GETs.
func newBackend(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+testToken {
			writeStatus(w, r.Method, http.StatusUnauthorized, 0, "backend: no token")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/events"):
			// client-go may send protobuf; answer JSON either way.
			body, _ := io.ReadAll(r.Body)
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
			if err != nil {
				writeStatus(w, r.Method, http.StatusBadRequest, 0, "backend: "+err.Error())
				return
			}
			obj.GetObjectKind().SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Event"))
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(obj)
		case r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/events/"):
			name := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
			_ = json.NewEncoder(w).Encode(&corev1.Event{
				TypeMeta:   metav1.TypeMeta{Kind: "Event", APIVersion: "v1"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS},
			})
		default:
			writeStatus(w, r.Method, http.StatusNotFound, 0, "backend: not found")
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// setup returns a proxy in front of a fresh backend and a clientset through it.
func setup(t *testing.T) (*Proxy, kubernetes.Interface) {
	t.Helper()
	backend := newBackend(t)
	p, err := New(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	base := &rest.Config{Host: backend.URL, BearerToken: testToken, QPS: -1}
	cs, err := kubernetes.NewForConfig(p.Config(base))
	if err != nil {
		t.Fatal(err)
	}
	return p, cs
}

func newEvent(name string) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: testNS},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: testNS, Name: "p"},
		Reason:         "Test",
		Message:        "hello",
	}
}

func createEvent(ctx context.Context, cs kubernetes.Interface, name string) error {
	_, err := cs.CoreV1().Events(testNS).Create(ctx, newEvent(name), metav1.CreateOptions{})
	return err
}

func TestPassThroughAndCounters(t *testing.T) {
	p, cs := setup(t)
	ctx := context.Background()
	if err := createEvent(ctx, cs, "a"); err != nil {
		t.Fatalf("create through proxy: %v", err)
	}
	if _, err := cs.CoreV1().Events(testNS).Get(ctx, "a", metav1.GetOptions{}); err != nil {
		t.Fatalf("get through proxy: %v", err)
	}
	for _, c := range []struct {
		method, sub string
		want        int
	}{
		{"POST", "/events", 1},
		{"GET", "/events/a", 1},
		{"", "/namespaces/default/", 2},
		{"PATCH", "/events", 0},
	} {
		if got := p.Requests(c.method, c.sub); got != c.want {
			t.Errorf("Requests(%q, %q) = %d, want %d", c.method, c.sub, got, c.want)
		}
		if got := p.Forwarded(c.method, c.sub); got != c.want {
			t.Errorf("Forwarded(%q, %q) = %d, want %d", c.method, c.sub, got, c.want)
		}
	}
	p.ResetCounters()
	if got := p.Requests("", ""); got != 0 {
		t.Errorf("Requests after ResetCounters = %d", got)
	}
}

func TestCredentialsAreForwarded(t *testing.T) {
	backend := newBackend(t)
	p, err := New(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	noToken, err := kubernetes.NewForConfig(p.Config(&rest.Config{Host: backend.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := createEvent(context.Background(), noToken, "x"); !apierrors.IsUnauthorized(err) {
		t.Fatalf("without token: got %v, want Unauthorized", err)
	}
}

func TestLatency(t *testing.T) {
	p, cs := setup(t)
	const d = 150 * time.Millisecond
	p.SetLatency(d)
	start := time.Now()
	if err := createEvent(context.Background(), cs, "slow"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < d {
		t.Errorf("request took %v, want >= %v", took, d)
	}
	// A client deadline shorter than the latency ends the request.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := createEvent(ctx, cs, "slow2"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("with short deadline: got %v, want DeadlineExceeded", err)
	}
	p.SetLatency(0)
	if err := createEvent(context.Background(), cs, "fast"); err != nil {
		t.Fatal(err)
	}
}

func TestResetConnections(t *testing.T) {
	p, cs := setup(t)
	ctx := context.Background()

	p.ResetConnections(1)
	err := createEvent(ctx, cs, "r")
	if err == nil {
		t.Fatal("create with reset: no error")
	}
	if _, ok := err.(apierrors.APIStatus); ok {
		t.Fatalf("create with reset: got API status %v, want a transport error", err)
	}
	if !utilnet.IsConnectionReset(err) && !utilnet.IsProbableEOF(err) {
		t.Errorf("create with reset: %v is neither a reset nor an EOF", err)
	}
	if _, resets := p.Injected(); resets != 1 {
		t.Errorf("resets = %d, want 1", resets)
	}
	// The rule is used up: POST is never retried by client-go, so one try.
	if got := p.Requests("POST", "/events"); got != 1 {
		t.Errorf("POST requests = %d, want 1", got)
	}
	if err := createEvent(ctx, cs, "r2"); err != nil {
		t.Fatalf("create after reset: %v", err)
	}

	// A GET whose connection was reset is retried by the client (net/http
	// replays idempotent requests on a reused connection; client-go retries
	// GETs on resets too), so the caller sees success.
	p.ResetCounters()
	p.ResetMatching(Match{Method: "GET"}, 1)
	if _, err := cs.CoreV1().Events(testNS).Get(ctx, "g", metav1.GetOptions{}); err != nil {
		t.Fatalf("GET after one reset: %v", err)
	}
	if got := p.Requests("GET", "/events/g"); got != 2 {
		t.Errorf("GET requests = %d, want 2 (one reset, one retry)", got)
	}
}

func TestResetProbability(t *testing.T) {
	p, cs := setup(t)
	p.SetResetProbability(1)
	if err := createEvent(context.Background(), cs, "p"); err == nil {
		t.Fatal("create with reset probability 1: no error")
	}
	p.ClearFaults()
	if err := createEvent(context.Background(), cs, "p"); err != nil {
		t.Fatalf("create after ClearFaults: %v", err)
	}
}

func TestFailWithWithoutRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		status int
		is     func(error) bool
	}{
		{http.StatusTooManyRequests, apierrors.IsTooManyRequests},
		{http.StatusServiceUnavailable, apierrors.IsServiceUnavailable},
		{http.StatusInternalServerError, apierrors.IsInternalError},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			p, cs := setup(t)
			p.FailWith(tc.status, 0, 1)
			err := createEvent(context.Background(), cs, "f")
			var se *apierrors.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("got %T %v, want *StatusError", err, err)
			}
			if se.ErrStatus.Code != int32(tc.status) || !tc.is(err) {
				t.Errorf("got code %d reason %q, want %d", se.ErrStatus.Code, se.ErrStatus.Reason, tc.status)
			}
			if _, ok := apierrors.SuggestsClientDelay(err); ok {
				t.Errorf("unexpected client delay suggested by %v", err)
			}
			if got := p.Requests("POST", "/events"); got != 1 {
				t.Errorf("POST requests = %d, want 1 (no client retry without Retry-After)", got)
			}
			if got := p.Forwarded("", ""); got != 0 {
				t.Errorf("forwarded = %d, want 0", got)
			}
			if err := createEvent(context.Background(), cs, "f"); err != nil {
				t.Errorf("second create: %v", err)
			}
		})
	}
}

func TestFailWithRetryAfter(t *testing.T) {
	p, cs := setup(t)
	ctx := context.Background()

	// With Retry-After, client-go retries by itself and the caller sees success.
	p.FailWith(http.StatusTooManyRequests, time.Second, 1)
	start := time.Now()
	if err := createEvent(ctx, cs, "ra"); err != nil {
		t.Fatalf("create with one 429+Retry-After: %v", err)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("client-go retried after %v, want >= 1s", took)
	}
	if got, fwd := p.Requests("POST", "/events"), p.Forwarded("POST", "/events"); got != 2 || fwd != 1 {
		t.Errorf("POST requests/forwarded = %d/%d, want 2/1", got, fwd)
	}

	// With retries off, the raw answer surfaces with its Retry-After.
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		p.FailWith(status, 1500*time.Millisecond, 1)
		err := cs.CoreV1().RESTClient().Post().Namespace(testNS).Resource("events").
			Body(newEvent("raw")).MaxRetries(0).Do(ctx).Error()
		var se *apierrors.StatusError
		if !errors.As(err, &se) || se.ErrStatus.Code != int32(status) {
			t.Fatalf("status %d: got %v, want StatusError with that code", status, err)
		}
		if secs, ok := apierrors.SuggestsClientDelay(err); !ok || secs != 2 {
			t.Errorf("status %d: SuggestsClientDelay = %d, %v; want 2 (rounded up), true", status, secs, ok)
		}
	}
	if fails, _ := p.Injected(); fails != 3 {
		t.Errorf("injected failures = %d, want 3", fails)
	}
}

func TestFailMatching(t *testing.T) {
	p, cs := setup(t)
	ctx := context.Background()
	p.FailMatching(Match{Method: "POST", PathContains: "/events"}, http.StatusTooManyRequests, 0, -1)
	for i := range 3 {
		if err := createEvent(ctx, cs, "m"); !apierrors.IsTooManyRequests(err) {
			t.Fatalf("create %d: got %v, want 429", i, err)
		}
	}
	if _, err := cs.CoreV1().Events(testNS).Get(ctx, "m", metav1.GetOptions{}); err != nil {
		t.Fatalf("GET is not matched but failed: %v", err)
	}
	p.ClearFaults()
	if err := createEvent(ctx, cs, "m"); err != nil {
		t.Fatalf("create after ClearFaults: %v", err)
	}
}

func TestRulesInOrder(t *testing.T) {
	p, cs := setup(t)
	ctx := context.Background()
	p.FailWith(http.StatusServiceUnavailable, 0, 1)
	p.FailWith(http.StatusTooManyRequests, 0, 1)
	if err := createEvent(ctx, cs, "o"); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("first: got %v, want 503", err)
	}
	if err := createEvent(ctx, cs, "o"); !apierrors.IsTooManyRequests(err) {
		t.Errorf("second: got %v, want 429", err)
	}
	if err := createEvent(ctx, cs, "o"); err != nil {
		t.Errorf("third: %v", err)
	}
}

// TestWithdraw: a rule withdrawn before its requests have all come fails no
// more, and says how many it had left; Queued counts what the rules with a
// count still have to meet.
func TestWithdraw(t *testing.T) {
	p, cs := setup(t)
	ctx := context.Background()
	r := p.FailWith(http.StatusServiceUnavailable, 0, 5)
	lost := p.LoseAnswers(Match{PathContains: "/nothing"}, 2)
	p.ResetConnections(-1).Withdraw()
	if got := p.Queued(); got != 7 {
		t.Fatalf("Queued = %d, want 7", got)
	}
	if err := createEvent(ctx, cs, "w"); !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("first create: got %v, want 503", err)
	}
	if got := p.Queued(); got != 6 {
		t.Errorf("Queued after one request = %d, want 6", got)
	}
	if left := r.Withdraw(); left != 4 {
		t.Errorf("Withdraw = %d, want 4 left", left)
	}
	if err := createEvent(ctx, cs, "w"); err != nil {
		t.Fatalf("create after Withdraw: %v", err)
	}
	if left := r.Withdraw(); left != 0 {
		t.Errorf("second Withdraw = %d, want 0", left)
	}
	if got := p.Queued(); got != 2 {
		t.Errorf("Queued = %d, want 2 (the other rule)", got)
	}
	p.ClearFaults()
	if left := lost.Withdraw(); left != 0 {
		t.Errorf("Withdraw after ClearFaults = %d, want 0", left)
	}
	if left := p.FailWith(http.StatusServiceUnavailable, 0, 0).Withdraw(); left != 0 {
		t.Errorf("Withdraw of a rule of no uses = %d, want 0", left)
	}
}

func TestDarkThenLight(t *testing.T) {
	p, cs := setup(t)
	ctx := context.Background()
	if err := createEvent(ctx, cs, "before"); err != nil { // leaves an idle keep-alive connection
		t.Fatal(err)
	}
	p.Dark()
	if !p.IsDark() {
		t.Fatal("IsDark = false after Dark")
	}
	err := createEvent(ctx, cs, "during")
	if err == nil {
		t.Fatal("create while dark: no error")
	}
	if _, ok := err.(apierrors.APIStatus); ok {
		t.Fatalf("create while dark: got API status %v, want a transport error", err)
	}
	if p.Refused() == 0 {
		t.Error("Refused = 0 after a request while dark")
	}
	p.Light()
	if err := createEvent(ctx, cs, "after"); err != nil {
		t.Fatalf("create after Light: %v", err)
	}
}

func TestGoDarkRecovers(t *testing.T) {
	p, cs := setup(t)
	p.GoDark(200 * time.Millisecond)
	if err := createEvent(context.Background(), cs, "d"); err == nil {
		t.Error("create right after GoDark: no error")
	}
	check.Eventually(t, "light after GoDark", func() error {
		return check.Errorf(!p.IsDark(), "the proxy is still dark")
	})
	if err := createEvent(context.Background(), cs, "d"); err != nil {
		t.Fatalf("create after recovery: %v", err)
	}

	// A later Light/Dark wins over a pending GoDark timer.
	p.GoDark(50 * time.Millisecond)
	p.Dark()
	time.Sleep(150 * time.Millisecond)
	if !p.IsDark() {
		t.Error("GoDark's timer ended a later Dark")
	}
	p.Light()
}

func TestBlackhole(t *testing.T) {
	p, cs := setup(t)
	p.Blackhole()

	// A request with a deadline times out.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := createEvent(ctx, cs, "bh"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("create in black hole: got %v, want DeadlineExceeded", err)
	}

	// A patient request goes through once the proxy is light again.
	done := make(chan error, 1)
	go func() { done <- createEvent(context.Background(), cs, "patient") }()
	select {
	case err := <-done:
		t.Fatalf("request returned while black-holed: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	p.Light()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("held request after Light: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("held request not released by Light")
	}
}

func TestCloseReleasesWaiters(t *testing.T) {
	p, cs := setup(t)
	p.Blackhole()
	done := make(chan error, 1)
	go func() { done <- createEvent(context.Background(), cs, "w") }()
	time.Sleep(50 * time.Millisecond)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("request through a closed proxy succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("request still waiting after Close")
	}
}

func TestConcurrentControl(t *testing.T) {
	p, cs := setup(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 10 {
				_ = createEvent(ctx, cs, fmt.Sprintf("c%d-%d", i, j))
			}
		})
	}
	wg.Go(func() {
		for range 10 {
			p.FailWith(http.StatusTooManyRequests, 0, 1)
			p.ResetConnections(1)
			p.SetLatency(time.Millisecond)
			p.GoDark(time.Millisecond)
			_ = p.Requests("POST", "/events")
			p.ResetAll()
		}
	})
	wg.Wait()
	p.Light()
	p.ClearFaults()
	p.SetLatency(0)
	if err := createEvent(ctx, cs, "end"); err != nil {
		t.Fatalf("create after the storm: %v", err)
	}
	// Connections reset by darkness or ResetAll may carry no request, and
	// client-go never retries a POST by itself here (no Retry-After).
	if got := p.Requests("POST", "/events"); got < 1 || got > 41 {
		t.Errorf("POST requests = %d, want 1..41", got)
	}
}

func TestNewRejectsBadBackend(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:6443", "ftp://x", "https://"} {
		if p, err := New(u); err == nil {
			p.Close()
			t.Errorf("New(%q): no error", u)
		}
	}
}

// TestLoseAnswers: the request reaches the backend (which answers 201), but
// the client sees a transport error, not the answer; the rule is then used
// up.
func TestLoseAnswers(t *testing.T) {
	p, cs := setup(t)
	ctx := context.Background()

	p.LoseAnswers(Match{Method: "POST", PathContains: "/events"}, 1)
	err := createEvent(ctx, cs, "lost")
	if err == nil {
		t.Fatal("create with a lost answer: no error")
	}
	if _, ok := err.(apierrors.APIStatus); ok {
		t.Fatalf("create with a lost answer: got API status %v, want a transport error", err)
	}
	if got := p.Forwarded("POST", "/events"); got != 1 {
		t.Errorf("POST forwarded = %d, want 1 (the backend got the write)", got)
	}
	if got := p.Lost(); got != 1 {
		t.Errorf("Lost() = %d, want 1", got)
	}
	if err := createEvent(ctx, cs, "kept"); err != nil {
		t.Fatalf("create after the rule was used: %v", err)
	}
	p.ResetCounters()
	if got := p.Lost(); got != 0 {
		t.Errorf("Lost() after ResetCounters = %d", got)
	}
}

package faultproxy

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// Match selects requests. The zero Match selects every request.
type Match struct {
	// Method is the HTTP method ("POST", "PATCH", ...); empty matches any.
	Method string
	// PathContains must occur in the request's URL path; empty matches any.
	PathContains string
}

func (m Match) matches(method, path string) bool {
	return (m.Method == "" || strings.EqualFold(m.Method, method)) &&
		strings.Contains(path, m.PathContains)
}

// ruleKind is what a fault rule does to a request.
type ruleKind int

const (
	ruleReset ruleKind = iota
	ruleFail
	ruleLose
)

// rule is one queued fault.
type rule struct {
	kind       ruleKind
	match      Match
	status     int
	retryAfter time.Duration
	left       int // uses left; negative means unlimited
}

// countKey is the key of the request counters.
type countKey struct{ method, path string }

// Proxy is a fault-injecting loopback HTTPS proxy in front of one API server.
// Create it with [New] and release it with [Proxy.Close]. All methods are safe
// for concurrent use.
type Proxy struct {
	url    string
	caPEM  []byte
	ln     *trackingListener
	srv    *http.Server
	rp     *httputil.ReverseProxy
	tr     *http.Transport
	served chan struct{} // closed when srv.Serve has returned

	closeOnce sync.Once
	closing   chan struct{} // closed by Close: releases waiting handlers
	closeErr  error

	mu            sync.Mutex
	latency       time.Duration
	rules         []*rule
	resetProb     float64
	mode          darkMode
	lightCh       chan struct{} // closed when the proxy goes light; new one per dark period
	darkTimer     *time.Timer
	received      map[countKey]int
	forwarded     map[countKey]int
	injectedFails int
	injectedReset int
	injectedLost  int
}

// New starts a proxy on a free 127.0.0.1 port that forwards to backend, an
// https:// (or http://) base URL such as rest.Config.Host of an API server.
// The backend's certificate is not verified: use it for loopback test servers
// only.
func New(backend string) (*Proxy, error) {
	target, err := url.Parse(backend)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: parsing backend URL %q: %w", backend, err)
	}
	if target.Scheme != "https" && target.Scheme != "http" || target.Host == "" {
		return nil, fmt.Errorf("faultproxy: backend URL %q: want http(s)://host:port", backend)
	}
	cert, caPEM, err := selfSignedCert()
	if err != nil {
		return nil, err
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listening: %w", err)
	}

	p := &Proxy{
		url:       "https://" + raw.Addr().String(),
		caPEM:     caPEM,
		served:    make(chan struct{}),
		closing:   make(chan struct{}),
		lightCh:   closedChan(),
		received:  make(map[countKey]int),
		forwarded: make(map[countKey]int),
	}
	p.tr = &http.Transport{
		// Proxy stays nil: never route through $HTTPS_PROXY.
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback test server
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 100,
		IdleConnTimeout:     30 * time.Second,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport:     p.tr,
		FlushInterval: -1, // stream watches as they come
		// Resets and lost answers break copies of bodies: expected, not
		// worth a line on standard error.
		ErrorLog: log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			writeStatus(w, r.Method, http.StatusBadGateway, 0,
				fmt.Sprintf("faultproxy: backend unreachable: %v", err))
		},
	}
	p.ln = newTrackingListener(raw)
	p.srv = &http.Server{
		Handler: http.HandlerFunc(p.serveHTTP),
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert},
			NextProtos:   []string{"http/1.1"},
			MinVersion:   tls.VersionTLS12,
		},
		// A non-nil empty map disables HTTP/2: see the package comment.
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ReadHeaderTimeout: 30 * time.Second,
		// Resets make the server log TLS handshake errors: they are expected.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(p.served)
		_ = p.srv.Serve(tls.NewListener(p.ln, p.srv.TLSConfig))
	}()
	return p, nil
}

func closedChan() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// URL returns the proxy's base URL, https://127.0.0.1:PORT.
func (p *Proxy) URL() string { return p.url }

// CAData returns the PEM certificate that clients must trust to talk to the
// proxy.
func (p *Proxy) CAData() []byte { return append([]byte(nil), p.caPEM...) }

// Config returns a copy of base pointed at the proxy: same credentials
// (bearer token, token file, basic auth, impersonation), TLS trusting the
// proxy's certificate. Client certificates in base are kept but never reach
// the API server (TLS ends at the proxy).
func (p *Proxy) Config(base *rest.Config) *rest.Config {
	c := rest.CopyConfig(base)
	c.Host = p.url
	c.Insecure = false
	c.CAFile = ""
	c.CAData = p.CAData()
	c.ServerName = ""
	c.NextProtos = nil // the proxy speaks HTTP/1.1 only
	// Transport, Dial and Proxy from base would bypass or double-proxy us.
	c.Transport = nil
	c.Dial = nil
	c.Proxy = nil
	return c
}

// SetLatency delays every request by d before it is answered or forwarded
// (0 turns latency off).
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	p.latency = d
	p.mu.Unlock()
}

// ResetConnections makes the next n requests fail with a reset connection
// (TCP RST, no response): the client sees a transport error such as
// "connection reset by peer". A negative n resets every request until
// [Proxy.ClearFaults].
func (p *Proxy) ResetConnections(n int) *Rule { return p.ResetMatching(Match{}, n) }

// ResetMatching is [Proxy.ResetConnections] for requests selected by m only.
func (p *Proxy) ResetMatching(m Match, n int) *Rule {
	return p.addRule(&rule{kind: ruleReset, match: m, left: n})
}

// SetResetProbability resets each request that no rule claimed with
// probability prob (0 turns it off, 1 resets everything).
func (p *Proxy) SetResetProbability(prob float64) {
	p.mu.Lock()
	p.resetProb = prob
	p.mu.Unlock()
}

// FailWith answers the next n requests with the HTTP status code status and a
// metav1.Status body of the matching reason (429 TooManyRequests, 503
// ServiceUnavailable, 500 InternalError, ...), which client-go returns as an
// *errors.StatusError with that code. If retryAfter > 0 the answer carries
// "Retry-After: <seconds>" (rounded up) and Details.RetryAfterSeconds; see
// the package comment for how client-go retries such answers by itself. A
// negative n fails every request until [Proxy.ClearFaults].
func (p *Proxy) FailWith(status int, retryAfter time.Duration, n int) *Rule {
	return p.FailMatching(Match{}, status, retryAfter, n)
}

// FailMatching is [Proxy.FailWith] for requests selected by m only.
func (p *Proxy) FailMatching(m Match, status int, retryAfter time.Duration, n int) *Rule {
	return p.addRule(&rule{kind: ruleFail, match: m, status: status, retryAfter: retryAfter, left: n})
}

// LoseAnswers forwards the next n requests selected by m to the API server
// and then, instead of the server's answer, resets the client's connection:
// the server has done what was asked (stored the event, for a write) but the
// client sees a transport error, as when a connection breaks after the
// request arrived. A negative n loses every selected answer until
// [Proxy.ClearFaults].
func (p *Proxy) LoseAnswers(m Match, n int) *Rule {
	return p.addRule(&rule{kind: ruleLose, match: m, left: n})
}

// Rule is a fault queued by ResetMatching, FailMatching or LoseAnswers
// (and their shorthands): a handle to withdraw it before its requests have
// all come.
type Rule struct {
	p *Proxy
	r *rule
}

func (p *Proxy) addRule(r *rule) *Rule {
	if r.left == 0 {
		return &Rule{p: p}
	}
	p.mu.Lock()
	p.rules = append(p.rules, r)
	p.mu.Unlock()
	return &Rule{p: p, r: r}
}

// Withdraw takes the rule out of the proxy if it is still queued: no
// further request meets it. It returns the uses it had left (0 when they
// were all used, or it was cleared, or withdrawn already; negative for an
// unlimited rule).
func (r *Rule) Withdraw() int {
	if r.r == nil {
		return 0
	}
	p := r.p
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, ru := range p.rules {
		if ru == r.r {
			p.rules = append(p.rules[:i:i], p.rules[i+1:]...)
			return ru.left
		}
	}
	return 0
}

// Queued returns how many requests the queued rules with a count have
// still to meet (the unlimited ones are not counted).
func (p *Proxy) Queued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, ru := range p.rules {
		n += max(ru.left, 0)
	}
	return n
}

// ClearFaults drops every pending reset and failure rule and the reset
// probability. Latency and darkness are left as they are.
func (p *Proxy) ClearFaults() {
	p.mu.Lock()
	p.rules = nil
	p.resetProb = 0
	p.mu.Unlock()
}

// Dark starts an outage until [Proxy.Light]: every open connection is reset,
// new connections are reset as soon as they are accepted (the client sees
// "connection reset by peer" or EOF during the TLS handshake), and any request
// still arriving on an old connection has its connection reset.
func (p *Proxy) Dark() { p.setDark(darkRefuse, 0) }

// GoDark is [Proxy.Dark] for d, after which the proxy goes light by itself
// (unless another Dark, Blackhole or Light call came first).
func (p *Proxy) GoDark(d time.Duration) { p.setDark(darkRefuse, d) }

// Blackhole starts a silent outage until [Proxy.Light]: connections stay
// open, new connections are accepted by the kernel but not answered (no TLS
// handshake), and requests wait unanswered. When the proxy goes light, held
// connections are served and waiting requests are forwarded, unless their
// client gave up first.
func (p *Proxy) Blackhole() { p.setDark(darkHang, 0) }

// Light ends an outage started by Dark, GoDark or Blackhole.
func (p *Proxy) Light() { p.setDark(light, 0) }

func (p *Proxy) setDark(m darkMode, d time.Duration) {
	p.mu.Lock()
	if p.darkTimer != nil {
		p.darkTimer.Stop()
		p.darkTimer = nil
	}
	wasLight := p.mode == light
	p.mode = m
	switch {
	case m == light && !wasLight:
		close(p.lightCh)
	case m != light && wasLight:
		p.lightCh = make(chan struct{})
	}
	if m != light && d > 0 {
		var t *time.Timer
		t = time.AfterFunc(d, func() {
			p.mu.Lock()
			current := p.darkTimer == t
			p.mu.Unlock()
			if current {
				p.Light()
			}
		})
		p.darkTimer = t
	}
	p.mu.Unlock()
	p.ln.setMode(m, m == darkRefuse)
}

// IsDark reports whether an outage is in progress.
func (p *Proxy) IsDark() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode != light
}

// ResetAll resets every open client connection now, once; new connections
// are served as usual.
func (p *Proxy) ResetAll() { p.ln.resetAll() }

// Requests returns how many requests the proxy received whose method is
// method (any if empty) and whose URL path contains pathSubstring, whatever
// happened to them (forwarded, failed, reset). Connections refused while
// dark carry no request and are not counted: see [Proxy.Refused].
func (p *Proxy) Requests(method, pathSubstring string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return count(p.received, Match{Method: method, PathContains: pathSubstring})
}

// Forwarded is like [Proxy.Requests] but counts only the requests that were
// passed on to the API server.
func (p *Proxy) Forwarded(method, pathSubstring string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return count(p.forwarded, Match{Method: method, PathContains: pathSubstring})
}

func count(m map[countKey]int, match Match) int {
	n := 0
	for k, v := range m {
		if match.matches(k.method, k.path) {
			n += v
		}
	}
	return n
}

// Injected returns how many requests were answered with an injected status
// (failures) and how many had their connection reset by a rule or the reset
// probability (resets).
func (p *Proxy) Injected() (failures, resets int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.injectedFails, p.injectedReset
}

// Lost returns how many answers [Proxy.LoseAnswers] took from their
// clients (each request reached the server).
func (p *Proxy) Lost() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.injectedLost
}

// Refused returns how many connections were reset on accept while dark.
func (p *Proxy) Refused() int { return p.ln.refusedCount() }

// ResetCounters zeroes the counters of Requests, Forwarded, Injected and
// Lost.
// Refused is not reset.
func (p *Proxy) ResetCounters() {
	p.mu.Lock()
	p.received = make(map[countKey]int)
	p.forwarded = make(map[countKey]int)
	p.injectedFails, p.injectedReset, p.injectedLost = 0, 0, 0
	p.mu.Unlock()
}

// Close stops the proxy: it stops accepting, closes every connection, releases
// waiting requests and returns once its goroutines are gone. It is idempotent.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		if p.darkTimer != nil {
			p.darkTimer.Stop()
			p.darkTimer = nil
		}
		p.mu.Unlock()
		close(p.closing)
		p.closeErr = p.ln.Close()
		// Close (not Shutdown): outstanding requests are abandoned at once,
		// like a process that dies.
		if err := p.srv.Close(); err != nil && p.closeErr == nil {
			p.closeErr = err
		}
		p.ln.resetAll()
		<-p.served
		p.tr.CloseIdleConnections()
		if errors.Is(p.closeErr, net.ErrClosed) {
			p.closeErr = nil
		}
	})
	return p.closeErr
}

// decision is what serveHTTP does with a request.
type decision struct {
	reset bool
	lose  bool
	fail  *rule
}

func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	key := countKey{method: r.Method, path: r.URL.Path}
	p.mu.Lock()
	p.received[key]++
	latency := p.latency
	p.mu.Unlock()

	if latency > 0 && !p.wait(r, latency) {
		return
	}

	// Outage: refuse by reset, or hold until light.
	p.mu.Lock()
	mode, lightCh := p.mode, p.lightCh
	p.mu.Unlock()
	switch mode {
	case darkRefuse:
		resetRequest(w)
		return
	case darkHang:
		select {
		case <-lightCh:
		case <-r.Context().Done():
			return
		case <-p.closing:
			return
		}
	}

	d := p.decide(key)
	switch {
	case d.reset:
		resetRequest(w)
	case d.lose:
		p.mu.Lock()
		p.forwarded[key]++
		p.mu.Unlock()
		p.rp.ServeHTTP(&discardWriter{header: http.Header{}}, r)
		resetRequest(w)
	case d.fail != nil:
		secs := 0
		if d.fail.retryAfter > 0 {
			secs = int((d.fail.retryAfter + time.Second - 1) / time.Second)
		}
		writeStatus(w, r.Method, d.fail.status, secs,
			fmt.Sprintf("faultproxy: injected %d", d.fail.status))
	default:
		p.mu.Lock()
		p.forwarded[key]++
		p.mu.Unlock()
		p.rp.ServeHTTP(w, r)
	}
}

// wait sleeps d unless the request or the proxy ends first; it reports
// whether the request should go on.
func (p *Proxy) wait(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-p.closing:
		return false
	}
}

// decide consumes the first matching rule, or applies the reset probability.
func (p *Proxy) decide(key countKey) decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, ru := range p.rules {
		if !ru.match.matches(key.method, key.path) {
			continue
		}
		if ru.left > 0 {
			ru.left--
			if ru.left == 0 {
				p.rules = append(p.rules[:i:i], p.rules[i+1:]...)
			}
		}
		switch ru.kind {
		case ruleReset:
			p.injectedReset++
			return decision{reset: true}
		case ruleLose:
			p.injectedLost++
			return decision{lose: true}
		}
		p.injectedFails++
		return decision{fail: ru}
	}
	if p.resetProb > 0 && rand.Float64() < p.resetProb {
		p.injectedReset++
		return decision{reset: true}
	}
	return decision{}
}

// discardWriter is the ResponseWriter of a request whose answer is lost: it
// takes the server's answer and keeps nothing.
type discardWriter struct{ header http.Header }

func (d *discardWriter) Header() http.Header         { return d.header }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      {}

// resetRequest drops the request's connection with a TCP RST.
func resetRequest(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*tls.Conn); ok {
		reset(tc.NetConn())
		return
	}
	reset(conn)
}

// writeStatus answers with a Kubernetes metav1.Status JSON body, as the API
// server does for errors.
func writeStatus(w http.ResponseWriter, method string, code, retryAfterSeconds int, msg string) {
	st := apierrors.NewGenericServerResponse(code, method, schema.GroupResource{}, "", msg, retryAfterSeconds, false).ErrStatus
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	st.Message = msg + ": " + st.Message
	body, err := json.Marshal(st)
	if err != nil {
		http.Error(w, msg, code)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache, private")
	if retryAfterSeconds > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	}
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

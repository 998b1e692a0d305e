// Package faultproxy is a loopback proxy that sits between a client-go client
// and a real kube-apiserver and injects the faults of a real network: added
// latency, reset connections, lost answers, 500/503/429 answers with Retry-After, and
// outages. It is meant for herald's integration tests only.
//
// # Design
//
// The proxy is an HTTP/1.1 reverse proxy that terminates TLS itself with a
// freshly generated self-signed certificate and forwards every request to the
// API server over TLS (without verifying the loopback server's certificate).
// Working at the HTTP level lets it answer with a Kubernetes status of its
// choice; owning the TCP listener and every accepted connection lets it reset
// connections (TCP RST via SO_LINGER 0) and refuse or blackhole new ones.
// [Proxy.Config] returns a copy of a rest.Config pointed at the proxy, trusting
// its certificate and carrying the same bearer token or basic-auth
// credentials. Client certificates cannot pass through a TLS-terminating
// proxy: use token credentials (internal/testing/testenv does).
//
// HTTP/2 is deliberately not offered to clients, so that every request has a
// connection of its own to reset and "close every connection" is exact.
//
// # Faults
//
// Faults are rules consumed in the order they were added: each request takes
// the first rule that matches it and still has uses left.
//
//   - [Proxy.SetLatency] delays every request before anything else happens.
//   - [Proxy.ResetConnections] / [Proxy.ResetMatching] reset the connection of
//     the next n (matching) requests; [Proxy.SetResetProbability] resets a
//     random fraction of all requests.
//   - [Proxy.FailWith] / [Proxy.FailMatching] answer the next n (matching)
//     requests with a status code and a metav1.Status JSON body, which
//     client-go turns into an *errors.StatusError with that code.
//   - [Proxy.LoseAnswers] forwards the next n (matching) requests and resets
//     the client's connection instead of passing the answer on: a write the
//     server stored whose answer the client never sees.
//   - Each of these returns a [Rule], whose [Rule.Withdraw] takes it back
//     before its requests have all come (a fault bounded in time as well as
//     in requests); [Proxy.Queued] counts the requests the rules still wait
//     for.
//   - [Proxy.GoDark], [Proxy.Dark] and [Proxy.Light] model an outage.
//
// # Client-go's own retries
//
// client-go's REST client (rest.Request) retries a request by itself, up to
// 10 times, when the answer is a 429 or any 5xx that carries a Retry-After
// header (rest.checkWait), sleeping the advertised number of seconds between
// attempts. This applies to every verb, POST and PATCH included, because
// typed clients send their bodies as bytes. rest.Config has no field to turn
// this off. So a test that wants its code to see a raw 429/5xx either:
//
//   - calls FailWith with retryAfter <= 0: the proxy then sends no
//     Retry-After header and client-go returns the StatusError at once; or
//   - makes more than 10 consecutive attempts fail (n >= 11), waiting
//     10 × retryAfter, after which client-go returns the last StatusError
//     (with Details.RetryAfterSeconds set); or
//   - calls rest.Request.MaxRetries(0) on a hand-built request.
//
// A Retry-After answer with n <= 10 is therefore absorbed by client-go, which
// is itself worth testing: [Proxy.Requests] shows the extra attempts.
//
// Transport-level failures are retried by client-go only for GET requests
// (and watches), never for POST or PATCH.
//
// # Concurrency
//
// Every method of a [Proxy] is safe for concurrent use, including while
// requests are in flight.
package faultproxy

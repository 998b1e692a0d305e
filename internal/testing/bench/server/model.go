// Package server holds the models of an API server that the fleet
// simulation (package sink's tests) and the fleet benchmark (this
// directory's tests, against a loopback HTTP server) share: for each
// request, when its answer leaves the server and whether it was admitted;
// the requests it does not admit are answered 429 with a Retry-After.
// The benchmarks that need a server are in this directory's test files.
//
// A model is an API: Serve(at) is called for each request in the order
// they arrive, and returns its Answer. The simulation calls it on its
// simulated clock from one goroutine (every model is deterministic); the
// HTTP server calls it with time.Now() under a mutex, then holds the
// answer until Answer.Leaves. Models, each a few lines (Models lists them
// with their settings for a capacity):
//
//   - Window: the first capacity requests of each second, answered at once;
//   - Bucket: a token bucket, with a tenth of a second of burst
//     (NewBucket) or a full second (NewBurstBucket), answered at once;
//   - Queue: priority and fairness's queuing for one flow: a few seats
//     that each serve one request at a time, a bounded queue in front of
//     them and a limit on the wait in it, so that latency grows before a
//     429;
//   - InFlight: a max-in-flight limit: each request holds one of Limit
//     slots until it leaves, and a request that finds them all taken is
//     refused at once. NewInFlight's requests share the server's work, so
//     that latency grows with the load before the limit refuses (the API
//     server's CPU and etcd are shared so); NewFlatInFlight's are served
//     in a fixed time, latency flat until it refuses (a loss system);
//   - Steps: another model whose capacity changes at given times after
//     the start (another tenant arrives, a replica goes);
//   - Tenant: another model shared with a tenant whose requests arrive
//     at a steady rate from a given time, answered or not.
//
// Network latency is not the model's: the simulation and the benchmark
// add it around the server's time.
package server

import (
	"container/heap"
	"fmt"
	"math"
	"strings"
	"time"
)

// API models how an API server that sheds load serves requests. It is not
// safe for concurrent use: the caller serializes Serve.
type API interface {
	// Serve returns the answer to a request that arrives at at. Calls
	// come in the order requests arrive; an at before the previous call's
	// is taken as the previous call's (requests that reach the HTTP
	// server together may take its mutex a little out of order).
	Serve(at time.Time) Answer
	// CapacityAt is the requests/s the server admits in the long run at at.
	CapacityAt(at time.Time) float64
	// Name is short, for benchmark and test names ("window", "queue").
	Name() string
	// String describes the model for the notes under the table.
	String() string
}

// Answer is what the server answers one request.
type Answer struct {
	// OK says the request was admitted (and served); otherwise it is
	// answered 429 with RetryAfter.
	OK         bool
	RetryAfter time.Duration
	// Leaves is when the answer leaves the server: the arrival, or later
	// when the request waited for a seat or was served for a time.
	Leaves time.Time
}

// Model is the interface the simulation used before API: whether a
// request that arrives at now is admitted, answered at once. Window and
// Bucket still implement it, so that a caller of Admit keeps working;
// the other models do not. A new caller uses API.
type Model interface {
	Admit(now time.Time) (ok bool, retryAfter time.Duration)
	Name() string
	String() string
}

// Spec names a model and makes it for a capacity, from start (the instant
// the server begins to admit requests: the end of an outage).
type Spec struct {
	Name string
	New  func(start time.Time, capacity float64) API
}

// Models are the models the simulation and the benchmark run, each with
// the settings it takes for a capacity of requests/s.
var Models = []Spec{
	{"window", func(start time.Time, c float64) API { return NewWindow(start, int(c)) }},
	{"bucket", func(_ time.Time, c float64) API { return NewBucket(c) }},
	{"bucket-1s", func(_ time.Time, c float64) API { return NewBurstBucket(c) }},
	{"queue", func(_ time.Time, c float64) API { return NewQueue(c) }},
	{"inflight", func(_ time.Time, c float64) API { return NewInFlight(c) }},
	{"inflight-flat", func(_ time.Time, c float64) API { return NewFlatInFlight(c) }},
	{"steps", func(start time.Time, c float64) API { return NewSteps(start, c, NewQueue(c), TenantAndReplica...) }},
}

// monotonic keeps the latest arrival a model has seen.
type monotonic struct{ last time.Time }

func (m *monotonic) at(t time.Time) time.Time {
	if t.Before(m.last) {
		return m.last
	}
	m.last = t
	return t
}

// Window accepts the first Capacity requests of each second counted from
// Start and answers the rest 429 with RetryAfter, all at once: a server
// whose limit resets on the second, so that a whole second's worth can
// arrive in one instant.
type Window struct {
	Start      time.Time
	Capacity   int
	RetryAfter time.Duration

	sec      int64
	accepted int
	clock    monotonic
}

// NewWindow returns a Window from start with a Retry-After of one second.
func NewWindow(start time.Time, capacity int) *Window {
	return &Window{Start: start, Capacity: capacity, RetryAfter: time.Second}
}

func (w *Window) Admit(now time.Time) (bool, time.Duration) {
	d := now.Sub(w.Start)
	sec := int64(d / time.Second)
	if d < 0 && d%time.Second != 0 {
		sec-- // the second before Start is -1, not 0
	}
	if sec != w.sec {
		w.sec, w.accepted = sec, 0
	}
	if w.accepted >= w.Capacity {
		return false, w.RetryAfter
	}
	w.accepted++
	return true, 0
}

func (w *Window) Serve(at time.Time) Answer { return admitted(w, w.clock.at(at)) }

func (w *Window) CapacityAt(time.Time) float64 { return float64(w.Capacity) }

func (w *Window) SetCapacity(c float64) { w.Capacity = int(c) }

func (w *Window) Name() string { return "window" }

func (w *Window) String() string {
	return fmt.Sprintf("window: the first %d requests of each second, 429 Retry-After %v above", w.Capacity, w.RetryAfter)
}

// admitted answers at at what m admits.
func admitted(m Model, at time.Time) Answer {
	ok, ra := m.Admit(at)
	return Answer{OK: ok, RetryAfter: ra, Leaves: at}
}

// Bucket accepts requests through a token bucket of Rate tokens per second
// holding at most Burst, full at the first request, and answers the
// requests that find it empty 429 with RetryAfter, all at once: a server
// whose limit is smooth, so that no more than Burst requests arrive in one
// instant.
type Bucket struct {
	Rate       float64
	Burst      float64
	RetryAfter time.Duration

	name   string
	tokens float64
	last   time.Time
	clock  monotonic
}

// NewBucket returns a Bucket of rate requests/s with a burst of a tenth of
// a second (at least one) and a Retry-After of one second.
func NewBucket(rate float64) *Bucket {
	return &Bucket{Rate: rate, Burst: math.Max(1, rate/10), RetryAfter: time.Second, name: "bucket"}
}

// NewBurstBucket returns a Bucket of rate requests/s with a burst of a
// whole second and a Retry-After of one second.
func NewBurstBucket(rate float64) *Bucket {
	return &Bucket{Rate: rate, Burst: math.Max(1, rate), RetryAfter: time.Second, name: "bucket-1s"}
}

func (b *Bucket) Admit(now time.Time) (bool, time.Duration) {
	if b.last.IsZero() {
		b.tokens, b.last = b.Burst, now
	}
	b.refill(now)
	if b.tokens < 1 {
		return false, b.RetryAfter
	}
	b.tokens--
	return true, 0
}

// refill brings the tokens up to now at the current rate (none before the
// first request: the bucket is full then).
func (b *Bucket) refill(now time.Time) {
	if dt := now.Sub(b.last).Seconds(); !b.last.IsZero() && dt > 0 {
		b.tokens = math.Min(b.Burst, b.tokens+dt*b.Rate)
		b.last = now
	}
}

func (b *Bucket) Serve(at time.Time) Answer { return admitted(b, b.clock.at(at)) }

func (b *Bucket) CapacityAt(time.Time) float64 { return b.Rate }

// SetCapacity changes the rate, and the burst in proportion.
func (b *Bucket) SetCapacity(c float64) {
	b.Burst = math.Max(1, b.Burst*c/b.Rate)
	b.tokens = math.Min(b.tokens, b.Burst)
	b.Rate = c
}

func (b *Bucket) Name() string {
	if b.name == "" {
		return "bucket"
	}
	return b.name
}

func (b *Bucket) String() string {
	return fmt.Sprintf("%s: a token bucket of %g requests/s, burst %g, 429 Retry-After %v when empty", b.Name(), b.Rate, b.Burst, b.RetryAfter)
}

// times is a min-heap of instants.
type times []time.Time

func (h times) Len() int           { return len(h) }
func (h times) Less(i, j int) bool { return h[i].Before(h[j]) }
func (h times) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *times) Push(x any)        { *h = append(*h, x.(time.Time)) }
func (h *times) Pop() any {
	o := *h
	x := o[len(o)-1]
	*h = o[:len(o)-1]
	return x
}

// release drops the instants at or before at.
func (h *times) release(at time.Time) {
	for h.Len() > 0 && !(*h)[0].After(at) {
		heap.Pop(h)
	}
}

// Queue serves requests as API priority and fairness does for one flow
// (every controller under one user, as in the benchmark; the fairness
// between flows is not modelled): Seats requests are served at a time,
// each for Service; a request that finds every seat taken waits in a FIFO
// queue of at most QueueLength; one that finds the queue full is answered
// 429 at once, and one that would wait more than Wait is answered 429 when
// Wait has passed (it holds its place in the queue until then). Its
// capacity is Seats/Service. Latency grows with the queue before anything
// is refused.
type Queue struct {
	Seats       int
	Service     time.Duration
	QueueLength int
	Wait        time.Duration
	RetryAfter  time.Duration

	free   times // when each seat in use frees
	queued times // when each request in the queue leaves it
	clock  monotonic
}

// NewQueue returns a Queue of capacity requests/s: 4 seats (a small
// priority level's concurrency), a queue of a quarter of a second's
// requests, a wait of at most a second, Retry-After one second.
func NewQueue(capacity float64) *Queue {
	q := &Queue{Seats: 4, Wait: time.Second, RetryAfter: time.Second}
	q.SetCapacity(capacity)
	return q
}

func (q *Queue) Serve(at time.Time) Answer {
	at = q.clock.at(at)
	q.free.release(at)
	q.queued.release(at)
	start := at
	if q.free.Len() >= q.Seats {
		// Every seat is taken: the earliest to free serves this request
		// after the ones queued before it (FIFO, so that is the seat's
		// time, as each queued request already holds a later one).
		start = q.free[0]
		if q.queued.Len() >= q.QueueLength {
			return Answer{RetryAfter: q.RetryAfter, Leaves: at}
		}
		if start.Sub(at) > q.Wait {
			heap.Push(&q.queued, at.Add(q.Wait))
			return Answer{RetryAfter: q.RetryAfter, Leaves: at.Add(q.Wait)}
		}
		heap.Pop(&q.free)
		heap.Push(&q.queued, start)
	}
	heap.Push(&q.free, start.Add(q.Service))
	return Answer{OK: true, Leaves: start.Add(q.Service)}
}

func (q *Queue) CapacityAt(time.Time) float64 { return float64(q.Seats) / q.Service.Seconds() }

// SetCapacity changes the service time (the seats stay: a server that
// slows down, or a share of them that shrinks).
func (q *Queue) SetCapacity(c float64) {
	q.Service = serviceFor(q.Seats, c)
	q.QueueLength = max(1, int(c/4))
}

func (q *Queue) Name() string { return "queue" }

func (q *Queue) String() string {
	return fmt.Sprintf("queue: priority and fairness for one flow, %d seats of %v each (%.0f requests/s), a FIFO queue of %d, a wait of at most %v, 429 Retry-After %v when the queue is full or the wait is over",
		q.Seats, q.Service, q.CapacityAt(time.Time{}), q.QueueLength, q.Wait, q.RetryAfter)
}

// InFlight serves at most Limit requests at a time and answers a request
// that finds Limit under way 429 at once: the API server's max-in-flight
// limit. Each request holds its slot until it leaves. With Work zero, each
// is served for Service: latency stays flat until the server refuses, a
// loss system (Erlang's B formula). With Work set, the server's work (its
// CPU, etcd) is done in the order requests arrive, Work requests a second,
// and a request leaves Service after it arrives or 1/Work after the one
// before it, whichever is later: latency is flat while the server keeps
// up, then grows with the requests under way until the limit refuses.
type InFlight struct {
	Limit      int
	Service    time.Duration
	Work       float64
	RetryAfter time.Duration

	busy  times     // when each request under way leaves
	done  time.Time // when the last admitted request leaves (with Work)
	clock monotonic
}

// NewInFlight returns an InFlight that shares capacity requests/s of work
// among at most 30 under way, each taking at least 10 ms: flat latency up
// to 3 under way at 300/s, then growing to 100 ms at the limit, where it
// refuses. The API server's default limit is 200 mutating requests; 30
// makes it refuse while the fleet still has writes to send (the fleet's
// figures at limits of 15 to 200 and least times of 2 to 30 ms are in
// docs/measurements.md).
func NewInFlight(capacity float64) *InFlight {
	return &InFlight{Limit: 30, Service: 10 * time.Millisecond, Work: capacity, RetryAfter: time.Second}
}

// NewFlatInFlight returns an InFlight of capacity requests/s with flat
// latency: 6 in flight, each for 6/capacity, Retry-After one second.
func NewFlatInFlight(capacity float64) *InFlight {
	f := &InFlight{Limit: 6, RetryAfter: time.Second}
	f.SetCapacity(capacity)
	return f
}

func (f *InFlight) Serve(at time.Time) Answer {
	at = f.clock.at(at)
	f.busy.release(at)
	if f.busy.Len() >= f.Limit {
		return Answer{RetryAfter: f.RetryAfter, Leaves: at}
	}
	leaves := at.Add(f.Service)
	if f.Work > 0 {
		if next := f.done.Add(time.Duration(float64(time.Second) / f.Work)); next.After(leaves) {
			leaves = next
		}
		f.done = leaves
	}
	heap.Push(&f.busy, leaves)
	return Answer{OK: true, Leaves: leaves}
}

func (f *InFlight) CapacityAt(time.Time) float64 {
	c := float64(f.Limit) / f.Service.Seconds()
	if f.Work > 0 {
		c = min(c, f.Work)
	}
	return c
}

// SetCapacity changes the work shared, or with none the service time.
func (f *InFlight) SetCapacity(c float64) {
	if f.Work > 0 {
		f.Work = c
		return
	}
	f.Service = serviceFor(f.Limit, c)
}

// serviceFor is the service time that makes slots requests at a time a
// capacity of c requests/s.
func serviceFor(slots int, c float64) time.Duration {
	return time.Duration(float64(slots) / c * float64(time.Second))
}

// Name is "inflight" with Work, "inflight-flat" without.
func (f *InFlight) Name() string {
	if f.Work > 0 {
		return "inflight"
	}
	return "inflight-flat"
}

func (f *InFlight) String() string {
	if f.Work > 0 {
		return fmt.Sprintf("%s: at most %d requests under way, sharing %.0f requests/s of work, each at least %v (%v at the limit), 429 Retry-After %v above",
			f.Name(), f.Limit, f.Work, f.Service, time.Duration(float64(f.Limit)/f.Work*float64(time.Second)), f.RetryAfter)
	}
	return fmt.Sprintf("%s: at most %d requests under way, %v each (%.0f requests/s), 429 Retry-After %v above",
		f.Name(), f.Limit, f.Service, f.CapacityAt(time.Time{}), f.RetryAfter)
}

// Scalable is a model whose capacity can change.
type Scalable interface {
	API
	SetCapacity(requestsPerSecond float64)
}

// Step is a change of capacity: from After past the start, Factor times
// the base capacity.
type Step struct {
	After  time.Duration
	Factor float64
	Why    string
}

// TenantAndReplica are Steps' changes of the benchmark: half as much
// again as the base capacity at the start, the base when another tenant
// arrives 3 s later, three quarters of it when a replica goes 8 s after
// the start. The first batch of the fleet scenario (10 s of the base
// capacity) fits in 9 s of them.
var TenantAndReplica = []Step{
	{0, 1.5, "alone"},
	{3 * time.Second, 1, "another tenant arrives"},
	{8 * time.Second, 0.75, "a replica goes"},
}

// Steps is Model whose capacity changes at Start plus each step's After
// to Base times its Factor. The steps are in order of After.
type Steps struct {
	Model Scalable
	Start time.Time
	Base  float64
	Steps []Step

	applied int
	clock   monotonic
}

// NewSteps returns m from start, its capacity base times the factor of
// each step in force.
func NewSteps(start time.Time, base float64, m Scalable, steps ...Step) *Steps {
	s := &Steps{Model: m, Start: start, Base: base, Steps: steps}
	s.advance(start)
	return s
}

func (s *Steps) advance(at time.Time) {
	for s.applied < len(s.Steps) && !s.Start.Add(s.Steps[s.applied].After).After(at) {
		if r, ok := s.Model.(interface{ refill(time.Time) }); ok {
			r.refill(s.Start.Add(s.Steps[s.applied].After)) // the old rate up to the step
		}
		s.Model.SetCapacity(s.Base * s.Steps[s.applied].Factor)
		s.applied++
	}
}

func (s *Steps) Serve(at time.Time) Answer {
	at = s.clock.at(at)
	s.advance(at)
	return s.Model.Serve(at)
}

func (s *Steps) CapacityAt(at time.Time) float64 {
	f := 1.0
	for _, st := range s.Steps {
		if !s.Start.Add(st.After).After(at) {
			f = st.Factor
		}
	}
	return s.Base * f
}

func (s *Steps) Name() string { return "steps" }

func (s *Steps) String() string {
	var b strings.Builder
	for i, st := range s.Steps {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%.0f/s from %v (%s)", s.Base*st.Factor, st.After, st.Why)
	}
	return fmt.Sprintf("steps: %s; %s", b.String(), s.Model)
}

// Tenant is a model shared with another tenant, who sends a request every
// Period from Next on, whatever the answers: the tenant's requests take
// their place in the model (seats, queue, window) before the caller's that
// arrive after them. Its capacity, name and description are the model's.
type Tenant struct {
	API
	Next   time.Time
	Period time.Duration
}

func (t *Tenant) Serve(at time.Time) Answer {
	for t.Period > 0 && !t.Next.After(at) {
		t.API.Serve(t.Next)
		t.Next = t.Next.Add(t.Period)
	}
	return t.API.Serve(at)
}

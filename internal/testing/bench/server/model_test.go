package server

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	w := NewWindow(t0, 3)
	ok := 0
	for i := range 10 {
		if a, ra := w.Admit(t0.Add(time.Duration(i) * time.Millisecond)); a {
			ok++
		} else if ra != time.Second {
			t.Fatalf("Retry-After %v", ra)
		}
	}
	if ok != 3 {
		t.Fatalf("accepted %d in the first second, want 3", ok)
	}
	// All of the next second's at its very start.
	for i := range 3 {
		if a, _ := w.Admit(t0.Add(time.Second)); !a {
			t.Fatalf("request %d of the next second refused", i)
		}
	}
	if a, _ := w.Admit(t0.Add(time.Second + 999*time.Millisecond)); a {
		t.Fatal("a fourth request in one second accepted")
	}
}

func TestBucket(t *testing.T) {
	b := NewBucket(300)
	if b.Burst != 30 {
		t.Fatalf("burst %v", b.Burst)
	}
	ok := 0
	for range 100 {
		if a, _ := b.Admit(t0); a {
			ok++
		}
	}
	if ok != 30 {
		t.Fatalf("accepted %d at once, want the burst 30", ok)
	}
	// Over 10 s of one request per ms (1000/s), about 300/s get through.
	ok = 0
	for ms := 1; ms <= 10000; ms++ {
		if a, ra := b.Admit(t0.Add(time.Duration(ms) * time.Millisecond)); a {
			ok++
		} else if ra != time.Second {
			t.Fatalf("Retry-After %v", ra)
		}
	}
	if ok < 2995 || ok > 3005 {
		t.Fatalf("accepted %d over 10 s, want about 3000", ok)
	}
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// TestWindowServe: the Window answers at once, as Admit decides.
func TestWindowServe(t *testing.T) {
	w := NewWindow(t0, 2)
	for i, want := range []bool{true, true, false} {
		a := w.Serve(ms(i))
		if a.OK != want || !a.Leaves.Equal(ms(i)) {
			t.Fatalf("request %d: %+v", i, a)
		}
	}
	if a := w.Serve(ms(1000)); !a.OK {
		t.Fatalf("next second: %+v", a)
	}
}

func TestBurstBucket(t *testing.T) {
	b := NewBurstBucket(300)
	ok := 0
	for range 400 {
		if a := b.Serve(t0); a.OK {
			ok++
		} else if a.RetryAfter != time.Second || !a.Leaves.Equal(t0) {
			t.Fatalf("refusal %+v", a)
		}
	}
	if ok != 300 || b.Name() != "bucket-1s" {
		t.Fatalf("accepted %d at once (%s), want the burst 300", ok, b.Name())
	}
	b.SetCapacity(150)
	if b.Rate != 150 || b.Burst != 150 {
		t.Fatalf("rescaled to %v/%v", b.Rate, b.Burst)
	}
}

// TestQueue: the seats serve at once, then latency grows with the queue,
// then a full queue refuses at once and a long wait refuses when it is over.
func TestQueue(t *testing.T) {
	q := &Queue{Seats: 2, Service: 10 * time.Millisecond, QueueLength: 3, Wait: 15 * time.Millisecond, RetryAfter: time.Second}
	if c := q.CapacityAt(t0); c != 200 {
		t.Fatalf("capacity %v", c)
	}
	want := []struct {
		ok     bool
		leaves int // ms
	}{
		{true, 10}, {true, 10}, // the two seats
		{true, 20}, {true, 20}, // queued: latency grows
		{false, 15}, // would wait 20 ms > 15: refused when the wait is over
		{false, 0},  // the queue (3) is full: refused at once
	}
	for i, w := range want {
		a := q.Serve(t0)
		if a.OK != w.ok || !a.Leaves.Equal(ms(w.leaves)) {
			t.Fatalf("request %d: %+v, want ok %v leaving at %d ms", i, a, w.ok, w.leaves)
		}
		if !a.OK && a.RetryAfter != time.Second {
			t.Fatalf("request %d: Retry-After %v", i, a.RetryAfter)
		}
	}
	// At 10 ms two queued requests take the seats; the timed-out one
	// still holds its place until 15 ms, so the queue holds 1 + 0.
	if a := q.Serve(ms(10)); !a.OK || !a.Leaves.Equal(ms(30)) {
		t.Fatalf("at 10 ms: %+v", a)
	}
	// After everything has left, a request is served at once.
	if a := q.Serve(ms(100)); !a.OK || !a.Leaves.Equal(ms(110)) {
		t.Fatalf("at 100 ms: %+v", a)
	}
	// Over 10 s of one request a millisecond, about the capacity is admitted.
	ok := 0
	for i := 1000; i < 11000; i++ {
		if q.Serve(ms(i)).OK {
			ok++
		}
	}
	if ok < 1990 || ok > 2010 {
		t.Fatalf("admitted %d over 10 s, want about 2000", ok)
	}
}

func TestNewQueue(t *testing.T) {
	q := NewQueue(300)
	if c := q.CapacityAt(t0); math.Abs(c-300) > 0.1 || q.QueueLength != 75 {
		t.Fatalf("capacity %v, queue %d", c, q.QueueLength)
	}
	// 100 at once: 4 served, 75 queued with growing latency, 21 refused.
	var ok, refused int
	var last time.Time
	for range 100 {
		a := q.Serve(t0)
		if a.OK {
			ok++
			if a.Leaves.Before(last) {
				t.Fatal("a later request leaves earlier")
			}
			last = a.Leaves
		} else {
			refused++
		}
	}
	if ok != 79 || refused != 21 || last.Sub(t0) < 260*time.Millisecond {
		t.Fatalf("ok %d refused %d, last leaves after %v", ok, refused, last.Sub(t0))
	}
}

// TestInFlight: latency flat until Limit are under way, then 429 at once.
func TestInFlight(t *testing.T) {
	f := &InFlight{Limit: 2, Service: 10 * time.Millisecond, RetryAfter: time.Second}
	for i, want := range []bool{true, true, false} {
		a := f.Serve(ms(1))
		if a.OK != want {
			t.Fatalf("request %d: %+v", i, a)
		}
		if want && !a.Leaves.Equal(ms(11)) || !want && (!a.Leaves.Equal(ms(1)) || a.RetryAfter != time.Second) {
			t.Fatalf("request %d: %+v", i, a)
		}
	}
	if a := f.Serve(ms(11)); !a.OK {
		t.Fatalf("after the first left: %+v", a)
	}
	if c := NewFlatInFlight(300).CapacityAt(t0); math.Abs(c-300) > 0.1 {
		t.Fatalf("capacity %v", c)
	}
}

// TestInFlightWork: with Work, latency is flat while the server keeps up,
// grows with the requests under way once it does not, and the limit
// refuses at once; the server carries Work requests a second.
func TestInFlightWork(t *testing.T) {
	f := &InFlight{Limit: 4, Service: 10 * time.Millisecond, Work: 200, RetryAfter: time.Second}
	// One request every 10 ms at 200/s of work: each leaves 10 ms later.
	for i := range 3 {
		if a := f.Serve(ms(10 * i)); !a.OK || !a.Leaves.Equal(ms(10*i+10)) {
			t.Fatalf("request %d at a tenth of the work: %+v", i, a)
		}
	}
	// Four at once at 100 ms: 5 ms of work each, the first still 10 ms,
	// then 15 ms and 20 ms as they wait for the work before them; the
	// fourth finds three under way and leaves at 125 ms; a fifth is
	// refused at once.
	for i, want := range []int{110, 115, 120, 125} {
		if a := f.Serve(ms(100)); !a.OK || !a.Leaves.Equal(ms(want)) {
			t.Fatalf("request %d at 100 ms: %+v, want to leave at %d ms", i, a, want)
		}
	}
	if a := f.Serve(ms(101)); a.OK || !a.Leaves.Equal(ms(101)) || a.RetryAfter != time.Second {
		t.Fatalf("fifth under way: %+v, want 429 at once", a)
	}
	if a := f.Serve(ms(110)); !a.OK || !a.Leaves.Equal(ms(130)) {
		t.Fatalf("after the first left: %+v, want admitted, leaving after the work before it", a)
	}
	// Offered twice its work, the server carries its work, and refuses
	// the rest.
	g := NewInFlight(300)
	ok := 0
	for i := range 6000 {
		if g.Serve(t0.Add(time.Duration(i) * 10 * time.Second / 6000)).OK {
			ok++
		}
	}
	if ok < 2950 || ok > 3050 {
		t.Fatalf("600 requests/s for 10 s: %d admitted, want about 3,000", ok)
	}
	if c := g.CapacityAt(t0); math.Abs(c-300) > 0.1 || g.Name() != "inflight" || NewFlatInFlight(300).Name() != "inflight-flat" {
		t.Fatalf("capacity %v, names %q %q", c, g.Name(), NewFlatInFlight(300).Name())
	}
}

// TestSteps: the capacity follows the steps, and so does what the model
// admits.
func TestSteps(t *testing.T) {
	s := NewSteps(t0, 100, NewBucket(100), Step{0, 2, "a"}, Step{time.Second, 0.5, "b"})
	if s.CapacityAt(t0) != 200 || s.CapacityAt(ms(999)) != 200 || s.CapacityAt(ms(1000)) != 50 {
		t.Fatal("capacity does not follow the steps")
	}
	count := func(from, to int) int {
		n := 0
		for i := from; i < to; i++ {
			if s.Serve(ms(i)).OK {
				n++
			}
		}
		return n
	}
	if n := count(0, 1000); n < 215 || n > 225 { // 200/s plus the burst of 20
		t.Fatalf("first second: %d", n)
	}
	if n := count(2000, 4000); n < 103 || n > 106 { // and the burst of 5
		t.Fatalf("at 50/s over 2 s: %d", n)
	}
}

// TestMonotonic: an arrival before the previous one is taken as the
// previous one.
func TestMonotonic(t *testing.T) {
	f := &InFlight{Limit: 1, Service: 10 * time.Millisecond, RetryAfter: time.Second}
	f.Serve(ms(10))
	if a := f.Serve(ms(5)); a.OK || !a.Leaves.Equal(ms(10)) {
		t.Fatalf("%+v", a)
	}
}

// TestModels: every model of the list makes its own kind at the capacity.
func TestModels(t *testing.T) {
	for _, m := range Models {
		api := m.New(t0, 300)
		if api.Name() != m.Name {
			t.Errorf("%s makes %s", m.Name, api.Name())
		}
		if c := api.CapacityAt(t0.Add(5 * time.Second)); math.Abs(c-300) > 0.5 {
			t.Errorf("%s: capacity %v at 5 s", m.Name, c)
		}
		if !api.Serve(t0).OK {
			t.Errorf("%s refuses the first request", m.Name)
		}
	}
}

// A tenant's requests take their place in the model before the caller's
// that arrive after them: a window of 10 per second shared with a tenant
// sending 20 per second from 1 s on admits the caller's request at 0.9 s,
// and refuses those at 1.9 s and 2.9 s (the tenant took the window).
func TestTenant(t *testing.T) {
	m := &Tenant{API: NewWindow(t0, 10), Next: t0.Add(time.Second), Period: time.Second / 20}
	for sec, want := range []bool{true, false, false} {
		at := t0.Add(time.Duration(sec)*time.Second + 900*time.Millisecond)
		if got := m.Serve(at).OK; got != want {
			t.Errorf("the caller's request at %v admitted %v, want %v", at.Sub(t0), got, want)
		}
	}
	if m.CapacityAt(t0) != 10 || m.Name() != "window" {
		t.Errorf("capacity %v, name %q: want the model's", m.CapacityAt(t0), m.Name())
	}
}

// erlangB is the fraction of requests that a loss system of n seats
// refuses when a Poisson stream offers a Erlangs (arrivals per second times
// the service time): Erlang's B formula, by its recurrence.
func erlangB(a float64, n int) float64 {
	b := 1.0
	for k := 1; k <= n; k++ {
		b = a * b / (float64(k) + a*b)
	}
	return b
}

// TestInFlightLosesAsErlangB: NewFlatInFlight(300) (6 seats of 20 ms) fed a
// Poisson stream refuses the fraction Erlang's B formula gives, at light,
// the target's and heavy offered loads. That is why the fleet targets of
// issue 25 cannot both hold on this model for engines that do not
// coordinate (a hundred engines, each pacing its own writes, arrive about
// as a Poisson stream): at 0.8 writes per request or more the server
// carries at most 204 writes/s, and the first batch of the fleet
// simulation, 3,000 writes within 12 s of the return, needs 250/s with no
// time lost to the return; at 250/s carried, at most 0.57 of the requests
// are writes. The sink's fleet simulation holds herald to bounds of its own
// on this model (openTargets). NewInFlight, whose latency grows with its
// load as the API server's does, is held to the targets.
func TestInFlightLosesAsErlangB(t *testing.T) {
	const capacity = 300.0
	f := NewFlatInFlight(capacity)
	svc := f.Service.Seconds()
	rnd := rand.New(rand.NewPCG(1, 2))
	at := t0
	for _, a := range []float64{3, 5, 9} {
		const n = 200000
		refused := 0
		for range n {
			at = at.Add(time.Duration(rnd.ExpFloat64() * svc / a * float64(time.Second)))
			if !f.Serve(at).OK {
				refused++
			}
		}
		got, want := float64(refused)/n, erlangB(a, f.Limit)
		t.Logf("%.0f Erlangs offered (%.0f requests/s): %.3f refused, Erlang B %.3f", a, a/svc, got, want)
		if math.Abs(got-want) > 0.01 {
			t.Errorf("%.0f Erlangs: refused %.3f, Erlang B says %.3f", a, got, want)
		}
	}
	// The frontier: the most a Poisson stream gets carried with at most a
	// fifth refused, and the fewest writes per request at 250/s carried.
	best, ratioAt250 := 0.0, 0.0
	for a := 0.01; a < 40; a += 0.01 {
		b := erlangB(a, f.Limit)
		carried := a * (1 - b) / svc
		if b <= 0.2 {
			best = carried
		}
		if ratioAt250 == 0 && carried >= 250 {
			ratioAt250 = 1 - b
		}
	}
	t.Logf("at >= 0.8 writes per request at most %.0f writes/s carried; 250 writes/s carried at %.2f writes per request", best, ratioAt250)
	if best >= 250 || ratioAt250 >= 0.8 {
		t.Errorf("the targets are feasible on this model: %.0f writes/s at 0.8, %.2f at 250/s; hold the fleet to them (sink's openTargets)", best, ratioAt250)
	}
}

// A token bucket whose capacity steps brings its tokens up to the step at
// the old rate: emptied at 0 at 100/s (a burst of 10), it holds 10 at a
// step to 1,000/s at 1 s, not the new burst of 100.
func TestBucketStepRefillsAtTheOldRate(t *testing.T) {
	s := NewSteps(t0, 100, NewBucket(100), Step{0, 1, "a"}, Step{time.Second, 10, "b"})
	for range 10 {
		s.Serve(t0) // empties the burst of 10
	}
	ok := 0
	for range 200 {
		if s.Serve(t0.Add(time.Second)).OK {
			ok++
		}
	}
	if ok != 10 {
		t.Errorf("at the step, %d admitted at once; the bucket held its old burst of 10 then (1 s at 100/s)", ok)
	}
}

// The second before a window's start is a window of its own, not part of
// the first.
func TestWindowBeforeStart(t *testing.T) {
	w := NewWindow(t0, 2)
	w.Serve(t0.Add(-500 * time.Millisecond))
	w.Serve(t0.Add(-400 * time.Millisecond))
	if a := w.Serve(t0.Add(100 * time.Millisecond)); !a.OK {
		t.Error("the first request of the first second from Start refused: the second before Start used its window")
	}
}

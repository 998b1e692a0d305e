package server

import (
	"math"
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
	if c := NewInFlight(300).CapacityAt(t0); math.Abs(c-300) > 0.1 {
		t.Fatalf("capacity %v", c)
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

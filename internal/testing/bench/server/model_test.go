package server

import (
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
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
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
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

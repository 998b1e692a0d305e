// Package server holds the models of an API server's capacity that the
// fleet simulation (package sink's tests) and the fleet benchmark (this
// directory's tests, against a loopback HTTP server) share: how many
// requests a server that sheds load accepts, and what it answers the rest.
// The benchmarks that need a server are in this directory's test files.
package server

import (
	"fmt"
	"math"
	"time"
)

// Model decides which requests an API server that sheds load accepts. It is
// not safe for concurrent use: the caller serializes Admit.
type Model interface {
	// Admit reports whether a request that arrives at now is accepted;
	// when it is not, the server answers 429 with retryAfter as its
	// Retry-After. now never goes backwards between calls.
	Admit(now time.Time) (ok bool, retryAfter time.Duration)
	// Name is short, for benchmark and test names ("window", "bucket").
	Name() string
	// String describes the model for the notes under the table.
	String() string
}

// Window accepts the first Capacity requests of each second counted from
// Start and answers the rest 429 with RetryAfter: a server whose limit
// resets on the second, so that a whole second's worth can arrive in one
// instant.
type Window struct {
	Start      time.Time
	Capacity   int
	RetryAfter time.Duration

	sec      int64
	accepted int
}

// NewWindow returns a Window from start with a Retry-After of one second.
func NewWindow(start time.Time, capacity int) *Window {
	return &Window{Start: start, Capacity: capacity, RetryAfter: time.Second}
}

func (w *Window) Admit(now time.Time) (bool, time.Duration) {
	if sec := int64(now.Sub(w.Start) / time.Second); sec != w.sec {
		w.sec, w.accepted = sec, 0
	}
	if w.accepted >= w.Capacity {
		return false, w.RetryAfter
	}
	w.accepted++
	return true, 0
}

func (w *Window) Name() string { return "window" }

func (w *Window) String() string {
	return fmt.Sprintf("window: the first %d requests of each second, 429 Retry-After %v above", w.Capacity, w.RetryAfter)
}

// Bucket accepts requests through a token bucket of Rate tokens per second
// holding at most Burst, full at the first request, and answers the
// requests that find it empty 429 with RetryAfter: a server whose limit is
// smooth, so that no more than Burst requests arrive in one instant.
type Bucket struct {
	Rate       float64
	Burst      float64
	RetryAfter time.Duration

	tokens float64
	last   time.Time
}

// NewBucket returns a Bucket of rate requests/s with a burst of a tenth of
// a second (at least one) and a Retry-After of one second.
func NewBucket(rate float64) *Bucket {
	return &Bucket{Rate: rate, Burst: math.Max(1, rate/10), RetryAfter: time.Second}
}

func (b *Bucket) Admit(now time.Time) (bool, time.Duration) {
	if b.last.IsZero() {
		b.tokens, b.last = b.Burst, now
	}
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = math.Min(b.Burst, b.tokens+dt*b.Rate)
		b.last = now
	}
	if b.tokens < 1 {
		return false, b.RetryAfter
	}
	b.tokens--
	return true, 0
}

func (b *Bucket) Name() string { return "bucket" }

func (b *Bucket) String() string {
	return fmt.Sprintf("bucket: a token bucket of %g requests/s, burst %g, 429 Retry-After %v when empty", b.Rate, b.Burst, b.RetryAfter)
}

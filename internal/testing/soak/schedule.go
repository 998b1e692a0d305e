package soak

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Kind is a kind of fault.
type Kind string

// The fault kinds, most valuable first.
const (
	// Kill: the API server is killed (SIGKILL) and restarted on its data
	// after For; the proxy is dark until it is ready again.
	Kill Kind = "kill"
	// Partition: the fault proxy goes dark for For (connections reset).
	Partition Kind = "partition"
	// Lost: the answers of the next N event writes within For are lost
	// after the server stored them.
	Lost Kind = "lost-answers"
	// Webhook: the validating webhook fails the writes into some of the
	// namespaces, flapping, for For.
	Webhook Kind = "webhook"
	// Latency: every request waits Delay more, for For.
	Latency Kind = "latency"
	// Resets: a fraction P of the requests has its connection reset, for
	// For.
	Resets Kind = "resets"
	// Errors: the next N event writes within For are answered Code (500,
	// 503 or 429, with Retry-After if RetryAfter) by the proxy.
	Errors Kind = "errors"
	// SinkRestart: the recorder of slot Slot is shut down within For and a
	// new one takes its place.
	SinkRestart Kind = "sink-restart"
	// Flush: the recorder of slot Slot is flushed within For.
	Flush Kind = "flush"
	// Saturate: a load generator of N workers saturates the recorders'
	// priority level (API priority and fairness) for For.
	Saturate Kind = "apf-saturation"
	// NamespaceDelete: namespace NS is deleted (its events then refused).
	NamespaceDelete Kind = "namespace-delete"
)

// Fault is one fault of a schedule.
type Fault struct {
	At    time.Duration // since the start of the load
	Kind  Kind
	For   time.Duration // how long it lasts, or the deadline of a Flush or Shutdown
	N     int
	P     float64
	Delay time.Duration
	Code  int
	// RetryAfter: the injected errors carry Retry-After: 1.
	RetryAfter bool
	Slot       int
	// NS are indexes into the soak's namespaces.
	NS []int
}

func (f Fault) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "+%-7s %-16s", f.At.Round(100*time.Millisecond), f.Kind)
	switch f.Kind {
	case Kill, Partition:
		fmt.Fprintf(&b, " for %v", f.For.Round(100*time.Millisecond))
	case Saturate:
		fmt.Fprintf(&b, " %d workers for %v", f.N, f.For.Round(100*time.Millisecond))
	case Lost:
		fmt.Fprintf(&b, " next %d writes within %v", f.N, f.For)
	case Webhook:
		fmt.Fprintf(&b, " namespaces %v for %v", f.NS, f.For.Round(100*time.Millisecond))
	case Latency:
		fmt.Fprintf(&b, " +%v for %v", f.Delay, f.For.Round(100*time.Millisecond))
	case Resets:
		fmt.Fprintf(&b, " %.0f%% for %v", 100*f.P, f.For.Round(100*time.Millisecond))
	case Errors:
		fmt.Fprintf(&b, " %d × %d (Retry-After %v) within %v", f.N, f.Code, f.RetryAfter, f.For)
	case SinkRestart:
		fmt.Fprintf(&b, " slot %d, Shutdown within %v", f.Slot, f.For.Round(10*time.Millisecond))
	case Flush:
		fmt.Fprintf(&b, " slot %d within %v", f.Slot, f.For.Round(10*time.Millisecond))
	case NamespaceDelete:
		fmt.Fprintf(&b, " namespace %v", f.NS)
	}
	return b.String()
}

// countedFor bounds in time the faults counted in requests (errors, lost
// answers): a real server's errors last a while, not a number of requests.
// Unbounded, they waited, queued in the proxy, through every kill and
// partition, and then met one by one the probes of engines that saw the
// server down, one probe per engine every second or two: on a loaded
// machine, whose kills kept the server down for minutes, the faults of
// minutes piled up (500 requests for a run of 6 minutes) and nothing was
// written for minutes after the server was back (seed 201).
const countedFor = 10 * time.Second

// weights of the kinds drawn at random (kills and the namespace deletion
// are placed apart).
var weights = []struct {
	kind Kind
	w    int
}{
	{Partition, 3}, {Lost, 3}, {Webhook, 3}, {Latency, 2}, {Resets, 2}, {Errors, 2}, {SinkRestart, 2}, {Flush, 2}, {Saturate, 2},
}

// Schedule returns the fault schedule of seed for a load of duration d,
// with slots recorder slots and namespaces namespaces; the same arguments
// give the same schedule.
func Schedule(seed int64, d time.Duration, slots, namespaces int) []Fault {
	r := rand.New(rand.NewPCG(uint64(seed), 0x50a4d))
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo)+1)) }
	// Faults start in the first 85% of the load, so that the last ones end
	// before it does.
	span := d * 85 / 100
	at := func() time.Duration { return between(min(2*time.Second, span), span) }
	var out []Fault

	// A kill every 40 s of load or so, at least one in a load of 20 s.
	kills := int(d / (40 * time.Second))
	if kills == 0 && d >= 20*time.Second {
		kills = 1
	}
	for i := range kills {
		// Spread out: the i-th in the i-th part of the span.
		part := span / time.Duration(kills)
		start := time.Duration(i)*part + part/4
		out = append(out, Fault{At: between(start, start+part/2), Kind: Kill, For: between(500*time.Millisecond, 4*time.Second)})
	}
	// One namespace deleted in a load of 30 s or more, in its second half.
	if d >= 30*time.Second {
		out = append(out, Fault{At: between(span/2, span), Kind: NamespaceDelete, NS: []int{r.IntN(namespaces)}})
	}

	total := 0
	for _, w := range weights {
		total += w.w
	}
	// Every kind once, then more drawn by weight: one fault every 3 s.
	n := max(len(weights), int(d/(3*time.Second)))
	for i := range n {
		kind := weights[i%len(weights)].kind
		if i >= len(weights) {
			x := r.IntN(total)
			for _, w := range weights {
				if x < w.w {
					kind = w.kind
					break
				}
				x -= w.w
			}
		}
		f := Fault{At: at(), Kind: kind}
		switch kind {
		case Partition:
			f.For = between(500*time.Millisecond, 6*time.Second)
		case Lost:
			f.N = 1 + r.IntN(20)
			f.For = countedFor
		case Webhook:
			f.For = between(2*time.Second, 15*time.Second)
			f.NS = r.Perm(namespaces)[:1+r.IntN(2)]
			slices.Sort(f.NS)
		case Latency:
			f.For = between(time.Second, 10*time.Second)
			f.Delay = between(20*time.Millisecond, 400*time.Millisecond).Round(time.Millisecond)
		case Resets:
			f.For = between(time.Second, 8*time.Second)
			f.P = float64(5+r.IntN(26)) / 100
		case Errors:
			f.N = 5 + r.IntN(40)
			f.Code = []int{500, 503, 429}[r.IntN(3)]
			f.RetryAfter = r.IntN(2) == 0
			f.For = countedFor
		case Saturate:
			f.For = between(2*time.Second, 10*time.Second)
			f.N = 16 + r.IntN(33)
		case SinkRestart:
			f.Slot = r.IntN(slots)
			f.For = between(100*time.Millisecond, 3*time.Second)
		case Flush:
			f.Slot = r.IntN(slots)
			f.For = between(50*time.Millisecond, 2*time.Second)
		}
		out = append(out, f)
	}
	slices.SortStableFunc(out, func(a, b Fault) int { return int(a.At - b.At) })
	return out
}

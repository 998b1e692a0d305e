package table

import (
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/heraldk8s/herald/record
cpu: Intel(R) Xeon(R) Processor
BenchmarkEventf/impl=herald-2         	   69854	      4698 ns/op	         0.4187 dropped/op	    1059 B/op	       7 allocs/op
BenchmarkEventf/impl=client-go-2      	   35655	     19460 ns/op	         0.04981 dropped/op	    2292 B/op	      31 allocs/op
BenchmarkOther-2      	   35655	     19460 ns/op
PASS
ok  	github.com/heraldk8s/herald/record	3.544s
goos: linux
goarch: amd64
pkg: github.com/heraldk8s/herald/internal/testing/bench
cpu: Intel(R) Xeon(R) Processor
BenchmarkDelivery/burst-distinct-10000
    delivery_bench_test.go:120: benchnote: burst-distinct-10000: herald options: record.WithWorkers(16); client-go options: defaults
BenchmarkDelivery/burst-distinct-10000/impl=herald-2         	       1	1643665861 ns/op	     10000 delivered	         0 dropped	      6392 events/s	         0 goroutines-leaked	         0 lost	      1564 ms-to-final	     10000 recorded
BenchmarkDelivery/burst-distinct-10000/impl=client-go-2      	       1	3496901225 ns/op	      1031 delivered	        97.00 dropped	       703.0 events/s	         0 goroutines-leaked	      8872 lost	      1467 ms-to-final	     10000 recorded
BenchmarkDelivery/shutdown-5000/impl=herald-2                          	       1	 784463216 ns/op	         0 dropped	         0 goroutines-leaked	         0 lost	      5000 recorded	       740.3 shutdown-ms	      4999 written
BenchmarkDelivery/shutdown-5000/impl=client-go-2                       	       1	  45248734 ns/op	       221.0 dropped	         0 goroutines-leaked	      4772 lost	      5000 recorded	         0.01066 shutdown-ms	         7.000 written
--- FAIL: BenchmarkSomething
PASS
`

func TestParseAndMarkdown(t *testing.T) {
	res, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(res.Scenarios); got != 3 {
		t.Fatalf("got %d scenarios, want 3 (BenchmarkOther has no impl)", got)
	}
	var b strings.Builder
	if err := res.Markdown(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| Eventf | ns/op | 19460 | 4698 | 0.24× | ≤ 0.5× | yes |",
		"| Eventf | allocs/op | 31 | 7 | 0.23× | ≤ 0.5× | yes |",
		"| Eventf | dropped/op | 0.0498 | 0.419 | 8.41× |  |  |",
		"| Delivery/burst-distinct-10000 | events/s | 703 | 6392 | 9.09× | ≥ 8× | yes |",
		"| Delivery/burst-distinct-10000 | lost | 8872 | 0 | 0.00× | herald 0 | yes |",
		"| Delivery/burst-distinct-10000 | goroutines-leaked | 0 | 0 | — | herald 0 | yes |",
		"| Delivery/shutdown-5000 | written | 7 | 4999 | 714× | herald = recorded | **NO** |",
		"- burst-distinct-10000: herald options: record.WithWorkers(16); client-go options: defaults",
		"- Machine: goos: linux, goarch: amd64, cpu: Intel(R) Xeon(R) Processor, GOMAXPROCS 2.",
		"- FAILURE in the run: `--- FAIL: BenchmarkSomething`",
		"Not measured (no benchmark matched (?i)^correlator/",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, unwanted := range []string{"| Delivery/burst-distinct-10000 | ns/op", "| Delivery/shutdown-5000 | B/op"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("output has %q (a scenario run once shows no standard metrics)", unwanted)
		}
	}
	if got, want := res.Missed(), []string{"Delivery/shutdown-5000 written"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Missed() = %v, want %v", got, want)
	}
}

func TestSplitImpl(t *testing.T) {
	for _, tc := range []struct{ in, rest, impl string }{
		{"Eventf/impl=herald", "Eventf", "herald"},
		{"Delivery/burst/impl=client-go", "Delivery/burst", "client-go"},
		{"Correlate/impl=herald/keys=10", "Correlate/keys=10", "herald"},
		{"Plain", "Plain", ""},
	} {
		rest, impl := splitImpl(tc.in)
		if rest != tc.rest || impl != tc.impl {
			t.Errorf("splitImpl(%q) = %q, %q; want %q, %q", tc.in, rest, impl, tc.rest, tc.impl)
		}
	}
}

func TestFormatAndRatio(t *testing.T) {
	for _, tc := range []struct {
		h, c float64
		want string
	}{
		{1, 2, "0.50×"},
		{0, 5, "0.00×"},
		{0, 0, "—"},
		{3, 0, "∞"},
		{1, 1000, "0.001×"},
		{123, 10, "12.3×"},
		{48493.57, 1, "48494×"},
	} {
		if got := ratio(tc.h, true, tc.c, true); got != tc.want {
			t.Errorf("ratio(%v, %v) = %q, want %q", tc.h, tc.c, got, tc.want)
		}
	}
	for _, tc := range []struct {
		v    float64
		want string
	}{{10000, "10000"}, {703.04, "703"}, {0.01066, "0.0107"}, {12.34, "12.3"}} {
		if got := format(tc.v, true); got != tc.want {
			t.Errorf("format(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestEventsTargets(t *testing.T) {
	const out = `pkg: github.com/heraldk8s/herald/internal/testing/bench
BenchmarkEventsEventf/sink=none/impl=herald-2         	  259753	      4701 ns/op	         1.000 arg-allocs/op	         0 dropped/op	     832 B/op	       5 allocs/op
BenchmarkEventsEventf/sink=none/impl=client-go-2      	  304118	      7864 ns/op	         1.000 arg-allocs/op	     893 B/op	       8 allocs/op
BenchmarkEventsStorm/impl=herald-2         	       1	5004030938 ns/op	       100.0 creates	      1900 patches	      2000 recorded	         0 stale-after-3s	         0 stale-after-flush	         2.000 stale-at-end	      2000 writes
BenchmarkEventsStorm/impl=client-go-2      	       1	5012413893 ns/op	       100.0 creates	       100.0 patches	      2000 recorded	      1800 stale-after-3s	      1800 stale-at-end	       200.0 writes
BenchmarkEventsShutdown/impl=herald-2         	       1	 848713715 ns/op	         0 abandoned	         0 dropped	         0 lost	      3000 recorded	       587.6 shutdown-ms	      3000 written
BenchmarkEventsShutdown/impl=client-go-2      	       1	2043542301 ns/op	         0 abandoned	         0 dropped	      2459 lost	      3000 recorded	         0.1982 shutdown-ms	       541.0 written
BenchmarkEventsBurstGoroutines/impl=herald-2  	       1	1581501424 ns/op	     10000 delivered	         0 goroutines-leaked	        19.00 goroutines-peak	     10000 recorded
BenchmarkEventsBurstGoroutines/impl=client-go-2         	       1	4226125084 ns/op	      5977 delivered	         3.000 goroutines-leaked	      4410 goroutines-peak	     10000 recorded
`
	res, err := Parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := res.Markdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| EventsEventf/sink=none | ns/op | 7864 | 4701 | 0.60× | ≤ 0.5× | **NO** |",
		"| EventsEventf/sink=none | allocs/op | 8 | 5 | 0.62× | herald ≤ 3 + arg-allocs/op | **NO** |",
		"| EventsStorm | stale-after-flush | — | 0 | — | herald 0 | yes |",
		"| EventsShutdown | written | 541 | 3000 | 5.55× | herald = recorded | yes |",
		"| EventsShutdown | lost | 2459 | 0 | 0.00× | herald 0 | yes |",
		"| EventsBurstGoroutines | goroutines-leaked | 3 | 0 | 0.00× | herald 0 | yes |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("output lacks %q:\n%s", want, md)
		}
	}
	if got, want := res.Missed(), []string{"EventsEventf/sink=none ns/op", "EventsEventf/sink=none allocs/op"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Missed() = %v, want %v", got, want)
	}
}

// The fleet targets hold for every loopback server model (Fleet/window,
// Fleet/queue, ...) and latency and for none of the real server's figures
// (FleetAPF), which are printed only; the summary has one row per run.
func TestFleetTargetsByServerModel(t *testing.T) {
	const out = `pkg: github.com/heraldk8s/herald/internal/testing/bench/server
BenchmarkFleet/bucket/latency=fixed/defaults/impl=herald-2 	1	1 ns/op	0 lost	500 peak-requests/s	1.667 peak-x-capacity	1.6 peak-admitted-x-capacity	6000 recorded	6000 stored	0.95 jain-early
BenchmarkFleet/bucket/latency=fixed/defaults/impl=client-go-2 	1	1 ns/op	3000 lost	300 peak-requests/s	1.0 peak-x-capacity	6000 recorded	3000 stored
BenchmarkFleet/queue/latency=jittered/defaults/impl=herald-2 	1	1 ns/op	0 lost	400 peak-requests/s	1.333 peak-x-capacity	6000 recorded	5999 stored
BenchmarkFleetAPF/defaults/impl=herald-2 	1	1 ns/op	3 lost	900 peak-requests/s	1500 recorded	1497 stored
`
	res, err := Parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := res.Markdown(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| Fleet/bucket/latency=fixed/defaults | peak-x-capacity | 1 | 1.67 | 1.67× | herald ≤ 1.5 | **NO** |",
		"| Fleet/bucket/latency=fixed/defaults | stored | 3000 | 6000 | 2.00× | herald = recorded | yes |",
		"| Fleet/queue/latency=jittered/defaults | peak-x-capacity | — | 1.33 | — | herald ≤ 1.5 | yes |",
		"| Fleet/queue/latency=jittered/defaults | stored | — | 5999 | — | herald = recorded | **NO** |",
		"| FleetAPF/defaults | lost | — | 3 | — |  |  |",
		"| FleetAPF/defaults | peak-requests/s | — | 900 | — |  |  |",
		"| bucket/latency=fixed/defaults | herald | 6000 | 0 | — | — | 1.67 | 1.6 | — | — | 0.95 | peak-x-capacity |",
		"| bucket/latency=fixed/defaults | client-go | 3000 | 3000 | — | — | 1 | — | — | — | — |  |",
		"| queue/latency=jittered/defaults | herald | 5999 | 0 | — | — | 1.33 | — | — | — | — | stored |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "| defaults | herald |") {
		t.Error("the real server's fleet is in the summary")
	}
	if got := strings.Join(res.Missed(), ", "); got != "Fleet/bucket/latency=fixed/defaults peak-x-capacity, Fleet/queue/latency=jittered/defaults stored" {
		t.Errorf("missed %q", got)
	}
}

// The lone-engine targets of issue 25.
func TestLoneTargets(t *testing.T) {
	const out = `pkg: github.com/heraldk8s/herald/internal/testing/bench
BenchmarkDelivery/lone-lots-of-events-1000/impl=herald-2 	1	1 ns/op	1000 delivered	0 lost	1000 recorded	38.2 s-to-all
BenchmarkDelivery/lone-random-503-600/impl=herald-2 	1	1 ns/op	600 delivered	0 lost	600 recorded	0.86 x-configured-rate
BenchmarkDelivery/lone-outage-3s-503-1500-x5/impl=herald-2 	1	1 ns/op	0 lost	7500 recorded	7500 written	1560 ms-to-drain-worst
`
	res, err := Parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(res.Missed(), ", "); got != "Delivery/lone-lots-of-events-1000 s-to-all, Delivery/lone-outage-3s-503-1500-x5 ms-to-drain-worst" {
		t.Errorf("missed %q", got)
	}
}

// bucket-1s's peak may pass 1.5x only by what the server stored, with at
// most 0.5x the capacity refused; inflight-flat is held to the bounds
// Erlang's B formula leaves, and the goal holds on the other models.
func TestFleetOpenModelTargets(t *testing.T) {
	const out = `pkg: github.com/heraldk8s/herald/internal/testing/bench/server
BenchmarkFleet/bucket-1s/latency=fixed/defaults/impl=herald-2 	1	1 ns/op	2.2 peak-x-capacity	1.98 peak-admitted-x-capacity
BenchmarkFleet/bucket-1s/latency=fixed/write-limit-off/impl=herald-2 	1	1 ns/op	2.2 peak-x-capacity	1.6 peak-admitted-x-capacity
BenchmarkFleet/bucket-1s/latency=jittered/defaults/impl=herald-2 	1	1 ns/op	1.7 peak-x-capacity	1.4 peak-admitted-x-capacity
BenchmarkFleet/bucket-1s/latency=jittered/write-limit-off/impl=herald-2 	1	1 ns/op	1.45 peak-x-capacity
BenchmarkFleet/bucket/latency=fixed/defaults/impl=herald-2 	1	1 ns/op	1.6 peak-x-capacity	1.6 peak-admitted-x-capacity
BenchmarkFleet/inflight-flat/latency=fixed/defaults/impl=herald-2 	1	1 ns/op	0.67 writes/request	1.6 peak-x-capacity	16 s-to-first-batch
BenchmarkFleet/inflight-flat/latency=jittered/defaults/impl=herald-2 	1	1 ns/op	0.55 writes/request	1.9 peak-x-capacity	20 s-to-first-batch
BenchmarkFleet/inflight/latency=fixed/defaults/impl=herald-2 	1	1 ns/op	0.67 writes/request	12.5 s-to-first-batch
`
	res, err := Parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	want := "Fleet/bucket-1s/latency=fixed/write-limit-off peak-x-capacity, " +
		"Fleet/bucket-1s/latency=jittered/defaults peak-x-capacity, " +
		"Fleet/bucket/latency=fixed/defaults peak-x-capacity, " +
		"Fleet/inflight-flat/latency=jittered/defaults peak-x-capacity, " +
		"Fleet/inflight-flat/latency=jittered/defaults s-to-first-batch, " +
		"Fleet/inflight-flat/latency=jittered/defaults writes/request, " +
		"Fleet/inflight/latency=fixed/defaults s-to-first-batch, " +
		"Fleet/inflight/latency=fixed/defaults writes/request"
	if got := strings.Join(res.Missed(), ", "); got != want {
		t.Errorf("missed\n%s\nwant\n%s", got, want)
	}
}

// A lost count below zero is an over-count (more stored, or counted as
// dropped, than recorded), a miss as much as a loss; and the final count
// of every burst of identical events is checked, at the defaults too.
func TestOverCountIsAMiss(t *testing.T) {
	const out = `pkg: github.com/heraldk8s/herald/internal/testing/bench
BenchmarkDelivery/burst-identical-10000-defaults/impl=herald-2 	1	1 ns/op	10000 recorded	12 writes	10050 finalcount	0 dropped	-50 lost	0 goroutines-leaked
BenchmarkDelivery/burst-identical-10000-defaults/impl=client-go-2 	1	1 ns/op	10000 recorded	1026 writes	1026 finalcount	0 dropped	8974 lost	0 goroutines-leaked
BenchmarkDelivery/burst-distinct-10000/impl=herald-2 	1	1 ns/op	10000 recorded	10000 delivered	3 dropped	-3 lost	6000 events/s	0 goroutines-leaked
BenchmarkDelivery/burst-distinct-10000/impl=client-go-2 	1	1 ns/op	10000 recorded	1000 delivered	0 dropped	9000 lost	700 events/s	0 goroutines-leaked
`
	res, err := Parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	want := "Delivery/burst-identical-10000-defaults finalcount, Delivery/burst-identical-10000-defaults lost, Delivery/burst-distinct-10000 lost"
	if got := strings.Join(res.Missed(), ", "); got != want {
		t.Errorf("missed %q, want %q", got, want)
	}
}

// TestLotsOfEvents' bound is 0.9 of the configured 50 writes/s after the
// burst of 100: 20 s. 21.5 s (0.84) misses it.
func TestLotsOfEventsBoundIsPointNine(t *testing.T) {
	for _, c := range []struct {
		s    string
		miss bool
	}{{"19.9", false}, {"20.0", false}, {"21.5", true}} {
		out := `pkg: github.com/heraldk8s/herald/internal/testing/bench
BenchmarkDelivery/lone-lots-of-events-1000/impl=herald-2 	1	1 ns/op	1000 delivered	0 lost	1000 recorded	` + c.s + ` s-to-all
`
		res, err := Parse(strings.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		if missed := len(res.Missed()) > 0; missed != c.miss {
			t.Errorf("s-to-all %s: missed %v, want %v (%q)", c.s, missed, c.miss, res.Missed())
		}
	}
}

// A real restart is held to herald's write limit's floor plus half a
// second, counted from the server's first answer; without the floor the
// row is a miss.
func TestRestartTarget(t *testing.T) {
	for _, c := range []struct {
		line string
		miss string
	}{
		{"2400 settled-ms	2000 floor-ms", ""},
		{"2600 settled-ms	2000 floor-ms", "Restart settled-ms"},
		{"900 settled-ms", "Restart settled-ms"},
	} {
		out := `pkg: github.com/heraldk8s/herald/internal/testing/bench/server
BenchmarkRestart/impl=herald-2 	1	1 ns/op	200 recorded	200 stored	0 lost	` + c.line + `	950 ready-ms
`
		res, err := Parse(strings.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(res.Missed(), ", "); got != c.miss {
			t.Errorf("%s: missed %q, want %q", c.line, got, c.miss)
		}
	}
}

// The window's peak, read over any one second, may pass 1.5x with at most
// 0.5x the capacity refused in that second.
func TestWindowPeakTarget(t *testing.T) {
	for _, c := range []struct {
		peak, admitted string
		miss           bool
	}{
		{"1.4", "1.3", false},
		{"1.7", "1.4", false},
		{"1.9", "1.3", true},
		{"1.7", "", true},
	} {
		out := `pkg: github.com/heraldk8s/herald/internal/testing/bench/server
BenchmarkFleet/window/latency=fixed/defaults/impl=herald-2 	1	1 ns/op	0 lost	` + c.peak + ` peak-x-capacity	`
		if c.admitted != "" {
			out += c.admitted + ` peak-admitted-x-capacity	`
		}
		out += "6000 recorded	6000 stored\n"
		res, err := Parse(strings.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		if missed := len(res.Missed()) > 0; missed != c.miss {
			t.Errorf("peak %s, admitted %q: missed %v, want %v (%q)", c.peak, c.admitted, missed, c.miss, res.Missed())
		}
	}
}

// Command benchtable reads `go test -bench` output on stdin, pairs the
// sub-benchmarks named .../impl=herald and .../impl=client-go of each
// scenario and prints a markdown table of their metrics with the ratio
// herald / client-go and whether herald meets its targets. `make bench`
// pipes bench.out into it.
//
// Usage:
//
//	go run ./internal/cmd/benchtable [-strict] < bench.out
//
// With -strict it exits with status 1 when a measured target is missed.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/heraldk8s/herald/internal/testing/bench/table"
)

func main() {
	strict := flag.Bool("strict", false, "exit with status 1 when a measured target is missed")
	flag.Parse()
	res, err := table.Parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(2)
	}
	if len(res.Scenarios) == 0 {
		fmt.Fprintln(os.Stderr, "benchtable: no impl=herald / impl=client-go benchmarks in the input")
		os.Exit(2)
	}
	if err := res.Markdown(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(2)
	}
	if missed := res.Missed(); len(missed) > 0 {
		fmt.Fprintf(os.Stderr, "benchtable: %d target(s) missed: %v\n", len(missed), missed)
		if *strict {
			os.Exit(1)
		}
	}
}

// Command soak runs herald's mixed-fault soak (internal/testing/soak)
// against a kube-apiserver of its own: `make soak SEED=n DURATION=d`. It
// prints the seed, the fault schedule, a progress line every few seconds
// and, last, the ledger's line; it exits 1 if the ledger does not balance.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/klog/v2/textlogger"

	"github.com/heraldk8s/herald/internal/testing/soak"
)

func main() {
	seed := flag.Int64("seed", 0, "seed of the fault schedule and the load (0: a random one, printed)")
	duration := flag.Duration("duration", 3*time.Minute, "how long the load runs (the settling comes on top)")
	rate := flag.Float64("rate", 60, "events recorded per second over all recorders")
	progress := flag.Duration("progress", 5*time.Second, "interval of the progress lines")
	verbosity := flag.Int("v", -1, "herald's log verbosity, to standard error (4: every failed write and its error); -1: no logs")
	flag.Parse()
	if *seed == 0 {
		*seed = rand.Int64N(1 << 31)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := soak.Config{Seed: *seed, Duration: *duration, Rate: *rate, Progress: *progress, Out: os.Stdout}
	if *verbosity >= 0 {
		cfg.Logger = textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(*verbosity), textlogger.Output(os.Stderr)))
	}
	res, err := soak.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "soak: seed %d: %v\n", *seed, err)
		os.Exit(2)
	}
	fmt.Println(res.FaultLine())
	fmt.Println(res.Line())
	if !res.OK() {
		os.Exit(1)
	}
}

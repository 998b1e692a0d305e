package soak

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// Main is the soak's command (internal/cmd/soak, and
// controllerruntime/cmd/soak with extra's managers): it reads the flags,
// runs the soak with extra's slots added, prints the seed, the fault
// schedule, a progress line every few seconds and, last, the ledger's line,
// and exits: 1 if the ledger does not balance, 2 if the soak could not run.
// setLogger, if not nil, is given the logger of the run first.
func Main(setLogger func(klog.Logger), extra ...Extra) {
	seed := flag.Int64("seed", 0, "seed of the fault schedule and the load (0: a random one, printed)")
	duration := flag.Duration("duration", 3*time.Minute, "how long the load runs (the settling comes on top)")
	rate := flag.Float64("rate", 60, "events recorded per second over all recorders")
	progress := flag.Duration("progress", 5*time.Second, "interval of the progress lines")
	verbosity := flag.Int("v", -1, "herald's log verbosity, to standard error (4: every failed write and its error); -1: no logs")
	flag.Parse()
	if *seed == 0 {
		*seed = rand.Int64N(1 << 31)
	}
	cfg := Config{Seed: *seed, Duration: *duration, Rate: *rate, Progress: *progress, Out: os.Stdout, Extra: extra, Logger: logr.Discard()}
	if *verbosity >= 0 {
		cfg.Logger = textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(*verbosity), textlogger.Output(os.Stderr)))
	}
	if setLogger != nil {
		setLogger(cfg.Logger)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	res, err := Run(ctx, cfg)
	stop()
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

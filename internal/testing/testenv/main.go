package testenv

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Main runs a test package against one server; call it from TestMain:
//
//	func TestMain(m *testing.M) {
//		testenv.Main(m, testenv.Options{}, func(e *testenv.Env) { env = e })
//	}
//
// It starts the server (a missing binary or a failed start makes the package
// FAIL, never skip), calls set, runs the tests, stops the server, then checks
// for leaked goroutines with goleak (with leakOpts) if the tests passed, and
// exits. Use it instead of goleak.VerifyTestMain. Progress goes to standard
// error unless opts.Logf is set.
func Main(m *testing.M, opts Options, set func(*Env), leakOpts ...goleak.Option) {
	os.Exit(run(m, opts, set, leakOpts))
}

func run(m *testing.M, opts Options, set func(*Env), leakOpts []goleak.Option) int {
	if opts.Logf == nil {
		opts.Logf = func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, format+"\n", args...)
		}
	}
	env, err := Start(context.Background(), opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	// Stop even if set panics. If the test binary dies (a test panicked),
	// the kernel kills the server (see sysProcAttr); only Dir is left.
	defer env.Stop()

	set(env)
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(leakOpts...); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	return code
}

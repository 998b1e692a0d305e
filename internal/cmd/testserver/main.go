// Command testserver runs a command beside a kube-apiserver started by
// herald's test environment (internal/testing/testenv), for tests that may
// not import herald's internal packages: those of the controllerruntime
// module. It starts the server, runs the command with HERALD_TEST_KUBECONFIG
// set to the path of an admin kubeconfig, stops the server (removing its
// files) and exits with the command's status:
//
//	go run ./internal/cmd/testserver -- sh -c 'cd controllerruntime && go test ./...'
//
// The server binary is the one `make apiserver` builds (bin/kube-apiserver);
// if the command is killed, the server dies with testserver.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/heraldk8s/herald/internal/testing/testenv"
)

// KubeconfigEnv names the variable that carries the kubeconfig's path.
const KubeconfigEnv = "HERALD_TEST_KUBECONFIG"

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: testserver -- command [args...]")
		return 2
	}
	env, err := testenv.Start(context.Background(), testenv.Options{
		Logf: func(format string, a ...any) { fmt.Fprintf(os.Stderr, "testserver: "+format+"\n", a...) },
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "testserver: %v\n", err)
		return 1
	}
	code := runCommand(args, env.Kubeconfig)
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testserver: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// runCommand runs args with the kubeconfig's path in the environment and
// returns its exit status. SIGINT and SIGTERM go to the command; testserver
// stops the server once the command has exited.
func runCommand(args []string, kubeconfig string) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), KubeconfigEnv+"="+kubeconfig)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "testserver: %v\n", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			_ = cmd.Process.Signal(s)
		case err := <-done:
			var exit *exec.ExitError
			switch {
			case err == nil:
				return 0
			case errors.As(err, &exit) && exit.ExitCode() > 0:
				return exit.ExitCode()
			default:
				fmt.Fprintf(os.Stderr, "testserver: %v\n", err)
				return 1
			}
		}
	}
}

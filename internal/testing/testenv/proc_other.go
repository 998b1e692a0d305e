//go:build !linux

package testenv

import (
	"os"
	"os/exec"
	"syscall"
)

const (
	sigterm = syscall.SIGTERM
	sigkill = syscall.SIGKILL
)

// sysProcAttr returns nil: process groups and parent-death signals are only
// set up on Linux, where herald's tests run.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// signalGroup sends sig to cmd's process.
func signalGroup(cmd *exec.Cmd, sig os.Signal) {
	if cmd.Process != nil {
		_ = cmd.Process.Signal(sig)
	}
}

package testenv

import (
	"os/exec"
	"syscall"
)

const (
	sigterm = syscall.SIGTERM
	sigkill = syscall.SIGKILL
)

// sysProcAttr puts the server in its own process group (so that signals go to
// it alone and a terminal's Ctrl-C reaches only the test binary) and makes the
// kernel kill it if the test binary dies first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends sig to the process group of cmd's process.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process == nil {
		return
	}
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
		_ = cmd.Process.Signal(sig)
	}
}

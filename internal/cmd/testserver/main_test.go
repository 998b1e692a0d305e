package main

import "testing"

// TestRunsCommandBesideServer: the command runs with the kubeconfig of a
// ready server in its environment, and its exit status is testserver's.
func TestRunsCommandBesideServer(t *testing.T) {
	if code := run(nil); code != 2 {
		t.Errorf("no command: exit %d, want 2 (usage)", code)
	}
	script := `grep -q "server: https://127.0.0.1:" "$` + KubeconfigEnv + `" && exit 3`
	if code := run([]string{"--", "sh", "-c", script}); code != 3 {
		t.Errorf("exit %d, want the command's 3 (the command saw no kubeconfig of a local server if 1)", code)
	}
}

package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

const (
	// rootModule is the module path of the repository root.
	rootModule = "github.com/heraldk8s/herald"
	// binaryEnv overrides the kube-apiserver binary.
	binaryEnv = "HERALD_KUBE_APISERVER"
)

// BinaryPath returns the kube-apiserver binary to run: $HERALD_KUBE_APISERVER
// if set, else bin/kube-apiserver in the root directory of the
// github.com/heraldk8s/herald module, found by walking up from the working
// directory (and, failing that, from this package's source directory). It
// returns an error telling to run `make apiserver` if the file is missing.
func BinaryPath() (string, error) {
	if p := os.Getenv(binaryEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("testenv: kube-apiserver binary not found at %s (from $%s): %w", p, binaryEnv, err)
		}
		return p, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", "kube-apiserver")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("testenv: kube-apiserver binary not found at %s: run `make apiserver` in %s (or set $%s)", p, root, binaryEnv)
	}
	return p, nil
}

// moduleRoot finds the directory holding the root module's go.mod.
func moduleRoot() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	for _, dir := range starts {
		if root, ok := findModule(dir, rootModule); ok {
			return root, nil
		}
	}
	return "", fmt.Errorf("testenv: no directory above %s holds the go.mod of module %s; set $%s to the kube-apiserver binary",
		strings.Join(starts, " or "), rootModule, binaryEnv)
}

// findModule walks up from dir to the directory whose go.mod declares module.
func findModule(dir, module string) (string, bool) {
	for {
		if modulePath(filepath.Join(dir, "go.mod")) == module {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// modulePath returns the module path declared in the go.mod file at path, or
// "" if there is none.
func modulePath(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "module"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

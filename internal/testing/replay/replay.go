// Package replay tells, when a randomized test fails, how to run it again
// alone: the go test command that selects it (its subtest by name, so its
// seed) and the parameters it drew. It imports only the standard library,
// so that every test of the module can use it, the in-package tests of
// sink and record included.
package replay

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// OnFailure registers a cleanup that, if t has failed, logs how to replay
// it: "replay: go test -race -run '^TestX$/^seed5$' ./pkg/ (params)", where
// params is fmt.Sprintf(format, args...), the parameters the test drew
// from its seed. Call it once the parameters are known.
func OnFailure(t testing.TB, format string, args ...any) {
	t.Helper()
	params := fmt.Sprintf(format, args...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay: %s (%s)", Command(t.Name()), params)
		}
	})
}

// Command is the go test command, run from the module's root, that runs the
// test (or subtest) named name of the package in the working directory.
func Command(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return fmt.Sprintf("go test -race -count=1 -run '%s' %s", strings.Join(parts, "/"), packageDir())
}

// packageDir is the working directory (the package under test) relative
// to the module's root, as ./dir/, or "." if it cannot be told.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel) + "/"
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "."
		}
		dir = parent
	}
}

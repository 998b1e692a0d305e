package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestFixtureListing checks every kind of line on the fixture module:
// constants with type and value, generic functions and types, interface
// methods, fields (promoted ones from an unexported embedded struct), value
// and pointer methods, aliases (with the fields and methods of an aliased
// internal type), //deprecated lines, and that internal/ and
// command packages are left out.
func TestFixtureListing(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"testdata/fixture"}, &stdout, &stderr); code != 0 {
		t.Fatalf("apilisting testdata/fixture: exit %d\n%s", code, stderr.String())
	}
	want, err := os.ReadFile("testdata/fixture.golden")
	if err != nil {
		t.Fatal(err)
	}
	if got := stdout.String(); got != string(want) {
		t.Errorf("listing of testdata/fixture differs from testdata/fixture.golden:\n%s", compare("testdata/fixture.golden", splitLines(string(want)), splitLines(got)))
	}
	for _, absent := range []string{"pkg example.com/fixture/internal/", "func Exported", "cmd/tool", "func unexported", "private", " inner ", "label", "Read("} {
		if strings.Contains(stdout.String(), absent) {
			t.Errorf("listing holds %q, which is not public API", absent)
		}
	}
}

// TestCheck writes the fixture's listing with -o, then changes the
// fixture's code the three ways a review must see (a changed signature, a
// removed name, a new name) and checks that -check exits 1 and reports each
// as lines removed and added, and tells how to update the file.
func TestCheck(t *testing.T) {
	dir := copyFixture(t)
	listing := filepath.Join(t.TempDir(), "api.txt")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-o", listing, dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("apilisting -o: exit %d\n%s", code, stderr.String())
	}
	if code := run([]string{"-check", listing, dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("apilisting -check on unchanged code: exit %d, want 0\n%s", code, stderr.String())
	}

	src := filepath.Join(dir, "shapes", "shapes.go")
	code, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	edited := string(code)
	for _, e := range []struct{ old, new string }{
		// A changed signature.
		{"func Area(s Shape) float64 { return s.Area() }", "func Area(s Shape, scale float64) float64 { return s.Area() * scale }"},
		// A removed name (and its //deprecated line).
		{"// Deprecated: use Area.\nfunc Old(s Shape) float64 { return s.Area() }", "func old(s Shape) float64 { return s.Area() }"},
		// A new name.
		{"func unexported() {}", "func unexported() {}\n\n// Perimeter is new.\nfunc Perimeter(s Square) float64 { return 4 * s.Side }"},
	} {
		if !strings.Contains(edited, e.old) {
			t.Fatalf("fixture lacks %q", e.old)
		}
		edited = strings.Replace(edited, e.old, e.new, 1)
	}
	if err := os.WriteFile(src, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}

	stderr.Reset()
	if code := run([]string{"-check", listing, dir}, &stdout, &stderr); code != 1 {
		t.Fatalf("apilisting -check on changed code: exit %d, want 1\n%s", code, stderr.String())
	}
	report := stderr.String()
	const pkg = "pkg example.com/fixture/shapes, "
	wantLines := []string{
		"-" + pkg + "func Area(Shape) float64",
		"+" + pkg + "func Area(Shape, float64) float64",
		"-" + pkg + "func Old(Shape) float64",
		"-" + pkg + "func Old //deprecated",
		"+" + pkg + "func Perimeter(Square) float64",
	}
	got := splitLines(report)
	var diff []string
	for _, l := range got {
		if strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-") {
			diff = append(diff, l)
		}
	}
	if len(diff) != len(wantLines) {
		t.Errorf("report has %d changed lines, want %d:\n%s", len(diff), len(wantLines), report)
	}
	for _, w := range wantLines {
		if !strings.Contains(report, w+"\n") {
			t.Errorf("report lacks %q:\n%s", w, report)
		}
	}
	if !strings.Contains(report, "2 line(s) added (+), 3 removed (-)") || !strings.Contains(report, "run `make api`") {
		t.Errorf("report does not count the lines or say how to update the file:\n%s", report)
	}
}

// TestCheckMissingFile: a listing that does not exist is a failed check
// that says how to write it.
func TestCheckMissingFile(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"-check", filepath.Join(t.TempDir(), "none.txt"), "testdata/fixture"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "make api") {
		t.Errorf("exit %d, stderr %q; want 1 and a hint to run make api", code, stderr.String())
	}
}

// TestReadListingIgnoresCommentsAndOrder: the check compares lines, not
// bytes, so a header change or a hand-sorted file is no difference.
func TestReadListingIgnoresCommentsAndOrder(t *testing.T) {
	got, err := readListing(strings.NewReader("# header\n\npkg p, func B()\npkg p, func A()\npkg p, func A()\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"pkg p, func A()", "pkg p, func B()"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("readListing = %q, want %q", got, want)
	}
	if r := compare("f", want, []string{"pkg p, func B()", "pkg p, func A()"}); r != "" {
		t.Errorf("compare of the same lines in another order = %q, want none", r)
	}
}

func splitLines(s string) []string {
	l, _ := readListing(strings.NewReader(s))
	return l
}

// copyFixture copies testdata/fixture into a temporary directory the test
// may edit.
func copyFixture(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "fixture")
	err := filepath.Walk("testdata/fixture", func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel("testdata/fixture", p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestCountNames counts each kind of line of a listing: a function, a
// variable, a constant (two lines), a struct type with a field, an
// interface type with a method, a method, and a //deprecated line.
func TestCountNames(t *testing.T) {
	lines := []string{
		"pkg example.com/p, func F(int) error",
		"pkg example.com/p, func F //deprecated",
		"pkg example.com/p, var V error",
		"pkg example.com/p, const C untyped int",
		"pkg example.com/p, const C = 1",
		"pkg example.com/p, type S struct",
		"pkg example.com/p, type S struct, A int",
		"pkg example.com/p, type S struct, embedded example.com/q.T",
		"pkg example.com/p, type I interface { M }",
		"pkg example.com/p, type I interface, M(int, string)",
		"pkg example.com/p, type Fn func(int, string) (bool, error)",
		"pkg example.com/p, type A = example.com/q.T",
		"pkg example.com/p, method (*S) M() (int, error)",
	}
	// F, V, C, S, I, Fn, A, M.
	if got, want := countNames(lines), 8; got != want {
		t.Errorf("countNames = %d, want %d", got, want)
	}
}

// TestMax checks that -max fails when the fixture has more names than
// allowed, and passes when it has no more.
func TestMax(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"testdata/fixture"}, &stdout, &stderr); code != 0 {
		t.Fatalf("apilisting testdata/fixture: exit %d\n%s", code, stderr.String())
	}
	n := countNames(splitLines(stdout.String()))
	if n < 2 {
		t.Fatalf("the fixture has %d names", n)
	}
	for _, tc := range []struct {
		max, code int
	}{{n, 0}, {n - 1, 1}} {
		stdout.Reset()
		stderr.Reset()
		if code := run([]string{"-max", strconv.Itoa(tc.max), "testdata/fixture"}, &stdout, &stderr); code != tc.code {
			t.Errorf("-max %d with %d names: exit %d, want %d\n%s", tc.max, n, code, tc.code, stderr.String())
		}
		if tc.code != 0 && !strings.Contains(stderr.String(), "more than the") {
			t.Errorf("-max %d: stderr %q does not say the limit is passed", tc.max, stderr.String())
		}
	}
}

package eventname

import (
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestNameMatchesClientGo(t *testing.T) {
	// client-go: fmt.Sprintf("%s.%x", name, unixNano) when valid.
	if got := Name("pod-0", 0x18ea3ecaa7117e49); got != "pod-0.18ea3ecaa7117e49" {
		t.Fatalf("got %q", got)
	}
}

func TestNameAlwaysValid(t *testing.T) {
	for _, name := range []string{"", "Pod_A", "a..b", "-x-", "x.-y", "UPPER.lower", strings.Repeat("a", 300), "日本語", ".", "a-.b", "a.b.", strings.Repeat("ab.", 100), "0  .0", "a--.b", "a_-_.b", "-.-.-", "a.-.b"} {
		got := Name(name, 12345)
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("Name(%q) = %q: %v", name, got, errs)
		}
	}
}

func TestClockStrictlyIncreases(t *testing.T) {
	var c Clock
	a, b := c.Next(100), c.Next(100)
	if a != 100 || b != 101 || c.Next(50) != 102 || c.Next(500) != 500 {
		t.Fatal("stamps not strictly increasing")
	}
}

func TestTruncate(t *testing.T) {
	cases := []struct {
		in    string
		limit int
		want  string
	}{
		{"hello", 10, "hello"},
		{"hello", 3, "hel"},
		{"héllo", 2, "h"}, // é is 2 bytes: never split it
		{"日本語", 4, "日"},
		{"abc", 0, "abc"},
		{"a\uFFFDb", 3, "a"},                        // U+FFFD itself is a valid 3-byte rune
		{"00\x85\x85\x85\x85", 5, "00\x85\x85\x85"}, // invalid bytes are cut as bytes
		{strings.Repeat("\x85", 2000), 1024, strings.Repeat("\x85", 1024)}, // not cut to nothing
	}
	for _, c := range cases {
		if got := Truncate(c.in, c.limit); got != c.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", c.in, c.limit, got, c.want)
		}
	}
}

func FuzzName(f *testing.F) {
	for _, s := range []string{"pod", "Pod_A", "a..b", "-", "日本", strings.Repeat("x", 260)} {
		f.Add(s, int64(1))
	}
	f.Fuzz(func(t *testing.T, name string, stamp int64) {
		got := Name(name, stamp)
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Fatalf("Name(%q) = %q: %v", name, got, errs)
		}
		if validation.IsDNS1123Subdomain(name+".x") == nil && len(name) < 200 && !strings.HasPrefix(got, name+".") {
			t.Fatalf("valid name %q changed to %q", name, got)
		}
	})
}

func FuzzTruncate(f *testing.F) {
	f.Add("hello wörld", 7)
	f.Add("日本語", 5)
	f.Fuzz(func(t *testing.T, msg string, limit int) {
		got := Truncate(msg, limit)
		if limit > 0 && len(got) > limit {
			t.Fatalf("len %d > limit %d", len(got), limit)
		}
		if !strings.HasPrefix(msg, got) {
			t.Fatalf("%q is not a prefix of %q", got, msg)
		}
		if utf8.ValidString(msg) && !utf8.ValidString(got) {
			t.Fatalf("cut a rune: %q", got)
		}
		if limit > 0 && len(msg) > limit && len(got) < limit-utf8.UTFMax+1 {
			t.Fatalf("cut too much: %d of limit %d", len(got), limit)
		}
	})
}

// Stamp is one source for the whole process: with a frozen time, names
// made by any number of goroutines (recorders of several broadcasters, the
// correlators' combined events) never repeat.
func TestStampUniqueAcrossGoroutinesWithFrozenTime(t *testing.T) {
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	const goroutines, each = 8, 1000
	var mu sync.Mutex
	seen := make(map[string]bool, goroutines*each)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			names := make([]string, 0, each)
			for range each {
				names = append(names, New("pod", now))
			}
			mu.Lock()
			defer mu.Unlock()
			for _, n := range names {
				if seen[n] {
					t.Errorf("name %q handed out twice", n)
				}
				seen[n] = true
			}
		}()
	}
	wg.Wait()
	if s := Stamp(now); s < now.UnixNano()+goroutines*each {
		t.Errorf("stamp %d after %d stamps at %d", s, goroutines*each, now.UnixNano())
	}
}

package record

import (
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestEventNameMatchesClientGo(t *testing.T) {
	// client-go: fmt.Sprintf("%s.%x", name, unixNano) when valid.
	if got := eventName("pod-0", 0x18ea3ecaa7117e49); got != "pod-0.18ea3ecaa7117e49" {
		t.Fatalf("got %q", got)
	}
}

func TestEventNameAlwaysValid(t *testing.T) {
	for _, name := range []string{"", "Pod_A", "a..b", "-x-", "x.-y", "UPPER.lower", strings.Repeat("a", 300), "日本語", ".", "a-.b", "a.b.", strings.Repeat("ab.", 100)} {
		got := eventName(name, 12345)
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("eventName(%q) = %q: %v", name, got, errs)
		}
	}
}

func TestNameClockStrictlyIncreases(t *testing.T) {
	var c nameClock
	a, b := c.next(100), c.next(100)
	if a != 100 || b != 101 || c.next(50) != 102 || c.next(500) != 500 {
		t.Fatal("stamps not strictly increasing")
	}
}

func TestTruncateMessage(t *testing.T) {
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
	}
	for _, c := range cases {
		if got := truncateMessage(c.in, c.limit); got != c.want {
			t.Errorf("truncateMessage(%q, %d) = %q, want %q", c.in, c.limit, got, c.want)
		}
	}
}

func FuzzEventName(f *testing.F) {
	for _, s := range []string{"pod", "Pod_A", "a..b", "-", "日本", strings.Repeat("x", 260)} {
		f.Add(s, int64(1))
	}
	f.Fuzz(func(t *testing.T, name string, stamp int64) {
		got := eventName(name, stamp)
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Fatalf("eventName(%q) = %q: %v", name, got, errs)
		}
		if validation.IsDNS1123Subdomain(name+".x") == nil && len(name) < 200 && !strings.HasPrefix(got, name+".") {
			t.Fatalf("valid name %q changed to %q", name, got)
		}
	})
}

func FuzzTruncateMessage(f *testing.F) {
	f.Add("hello wörld", 7)
	f.Add("日本語", 5)
	f.Fuzz(func(t *testing.T, msg string, limit int) {
		got := truncateMessage(msg, limit)
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

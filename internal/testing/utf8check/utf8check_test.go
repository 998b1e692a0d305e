package utf8check

import "testing"

func TestIsValidCut(t *testing.T) {
	for _, c := range []struct {
		in, got string
		limit   int
		want    bool
	}{
		{"abc", "abc", 10, true},
		{"abc", "ab", 2, true},
		{"abc", "a", 2, false},           // more would fit
		{"a\xffb", "a\uFFFDb", 10, true}, // the invalid byte made U+FFFD
		{"a\xffb", "a\xffb", 10, false},  // sent invalid
		{"aé", "a", 2, true},             // é does not fit in 2 bytes
		{"aé", "a\xc3", 2, false},        // cut inside the rune
	} {
		if got := IsValidCut(c.in, c.got, c.limit); got != c.want {
			t.Errorf("IsValidCut(%q, %q, %d) = %v, want %v", c.in, c.got, c.limit, got, c.want)
		}
	}
}

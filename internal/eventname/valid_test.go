package eventname

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// validReference is Valid by its definition: the longest prefix, ending on
// a rune boundary, of strings.ToValidUTF8(s, "\uFFFD") that has at most
// limit bytes.
func validReference(s string, limit int) string {
	v := strings.ToValidUTF8(s, "\uFFFD")
	if limit <= 0 || len(v) <= limit {
		return v
	}
	end := 0
	for i := range v { // i runs over rune starts
		if i > limit {
			break
		}
		end = i
	}
	return v[:end]
}

// jsonRoundTrip is what the API server decodes from the JSON of s.
func jsonRoundTrip(t testing.TB, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out string
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestValid(t *testing.T) {
	cases := []struct {
		in    string
		limit int
		want  string
	}{
		{"abc", 0, "abc"},
		{"abc", 2, "ab"},
		{"a\xffb", 0, "a\uFFFDb"},
		{"a\xff\xfe\xfdb", 0, "a\uFFFDb"}, // one U+FFFD per run, as strings.ToValidUTF8
		{"a\xffb", 3, "a"},                // U+FFFD does not fit after "a"
		{"a\xffb", 4, "a\uFFFD"},
		{"\xff\xff\xff\xff\xc3\xa9", 5, "\uFFFD\u00e9"}, // the run shrinks, é fits
		{"ab\xc3", 3, "ab"},                             // a cut rune is invalid: U+FFFD does not fit
		{"日本", 5, "日"},
		{"\uFFFD\xff", 3, "\uFFFD"}, // a literal U+FFFD is valid and kept
		{strings.Repeat("\xff", 1024), 1024, "\uFFFD"},
		{strings.Repeat("\xffa", 1024), 1024, strings.Repeat("\uFFFDa", 256)},
	}
	for _, c := range cases {
		if got := Valid(c.in, c.limit); got != c.want {
			t.Errorf("Valid(%q, %d) = %q, want %q", c.in, c.limit, got, c.want)
		}
	}
}

// A note of invalid bytes cut by bytes arrives at the server three times
// longer (the 1,434 characters); cut by Valid it arrives as cut.
func TestValidSurvivesJSON(t *testing.T) {
	note := strings.Repeat("x\xff\xfe", 500)
	if n := len(jsonRoundTrip(t, Truncate(note, 1024))); n <= 1024 {
		t.Fatalf("the byte cut arrives with %d bytes: the test no longer shows the problem", n)
	}
	got := Valid(note, 1024)
	if back := jsonRoundTrip(t, got); back != got || len(back) > 1024 || !utf8.ValidString(back) {
		t.Fatalf("Valid's note arrives with %d bytes (valid %v), changed %v", len(back), utf8.ValidString(back), back != got)
	}
}

// Valid does not allocate for a valid string, cut or not.
func TestValidAllocations(t *testing.T) {
	long := strings.Repeat("é", 1000)
	if n := testing.AllocsPerRun(100, func() {
		_ = Valid("a short message", 1024)
		_ = Valid(long, 1024)
		_ = Valid(long, 0)
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

func FuzzValid(f *testing.F) {
	for _, s := range []string{"", "abc", "a\xffb", "\xff\xff\xff\xff\xc3\xa9", "ab\xc3", "日本語", "\uFFFD\xff", "\xed\xa0\x80", "\xf4\x90\x80\x80"} {
		for _, l := range []int{0, 1, 3, 4, 5, 128} {
			f.Add(s, l)
		}
	}
	f.Fuzz(func(t *testing.T, s string, limit int) {
		limit %= 2048
		got := Valid(s, limit)
		if want := validReference(s, limit); got != want {
			t.Fatalf("Valid(%q, %d) = %q, want %q", s, limit, got, want)
		}
		if !utf8.ValidString(got) || (limit > 0 && len(got) > limit) {
			t.Fatalf("Valid(%q, %d) = %q: invalid or too long", s, limit, got)
		}
		if back := jsonRoundTrip(t, got); back != got {
			t.Fatalf("JSON changes %q into %q", got, back)
		}
	})
}

// Package utf8check holds the check the UTF-8 fuzz tests of record and
// events share: what herald sends of a string is the string made valid,
// cut to the API server's limit.
package utf8check

import (
	"strings"
	"unicode/utf8"
)

// IsValidCut reports whether got is in made valid (each run of invalid
// bytes one U+FFFD) and cut on a rune boundary to at most limit bytes, as
// much as fits.
func IsValidCut(in, got string, limit int) bool {
	v := strings.ToValidUTF8(in, "\uFFFD")
	if !strings.HasPrefix(v, got) || len(got) > limit || !utf8.ValidString(got) {
		return false
	}
	if len(got) == len(v) {
		return true
	}
	_, next := utf8.DecodeRuneInString(v[len(got):])
	return len(got)+next > limit
}

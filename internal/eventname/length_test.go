package eventname

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// A valid object name whose name with the suffix would be one byte past
// MaxLength is cut, not kept: the name stays at most MaxLength bytes, the
// longest the API server accepts; one that fits exactly is kept whole.
func TestNameAtMaxLength(t *testing.T) {
	const stamp = 0x18ea3ecaa7117e49 // 16 hex digits: a suffix of 17 bytes
	fits := strings.Repeat("a", MaxLength-17)
	if got := Name(fits, stamp); got != fits+".18ea3ecaa7117e49" {
		t.Errorf("Name of a %d-byte name = %q, want it kept whole", len(fits), got)
	}
	over := fits + "b"
	got := Name(over, stamp)
	if len(got) > MaxLength {
		t.Errorf("Name of a %d-byte name is %d bytes, want at most %d", len(over), len(got), MaxLength)
	}
	if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
		t.Errorf("Name(%q) = %q: %v", over, got, errs)
	}
	if !strings.HasSuffix(got, ".18ea3ecaa7117e49") {
		t.Errorf("Name(%q) = %q, want the stamp kept", over, got)
	}
}

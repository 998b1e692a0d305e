package eventkey

import "testing"

// Split refuses a field whose length runs past the end of the key: it
// reports false, it does not panic.
func TestSplitRefusesShortField(t *testing.T) {
	for _, s := range []string{"5:ab", "1:a3:bc", "2:"} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("Split(%q) panicked: %v", s, r)
				}
			}()
			if fields, ok := Split(s); ok {
				t.Errorf("Split(%q) = %q, true; want false", s, fields)
			}
		}()
	}
}

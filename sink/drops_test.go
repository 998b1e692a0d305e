package sink

import (
	"reflect"
	"testing"
)

// TestDropsDefinedOnce: every field of Drops is one reason, with a label of
// its own in ByReason, counted by Total and Add; the reasons the engine
// counts are among them.
func TestDropsDefinedOnce(t *testing.T) {
	var d Drops
	v := reflect.ValueOf(&d).Elem()
	var sum int64
	for i := range v.NumField() {
		v.Field(i).SetInt(int64(i + 1)) // a distinct value for each field
		sum += int64(i + 1)
	}
	by := d.ByReason()
	if len(by) != v.NumField() || len(by) != len(allReasons) {
		t.Fatalf("Drops has %d fields, ByReason %d labels, allReasons %d", v.NumField(), len(by), len(allReasons))
	}
	seen := map[int64]string{}
	for label, n := range by {
		if other, dup := seen[n]; dup || n == 0 {
			t.Errorf("label %q has count %d, as %q: two labels read one field", label, n, other)
		}
		seen[n] = label
	}
	if d.Total() != sum {
		t.Errorf("Total %d, sum of the fields %d", d.Total(), sum)
	}
	var twice Drops
	twice.Add(d)
	twice.Add(d)
	if twice.Total() != 2*sum {
		t.Errorf("Add twice: Total %d, want %d", twice.Total(), 2*sum)
	}
	if by["queue_full"] != d.QueueFull || by["retries_exhausted"] != d.RetriesExhausted || by["sink_panicked"] != d.SinkPanicked {
		t.Errorf("ByReason disagrees with the fields: %v", by)
	}
	for _, r := range reasons {
		if _, ok := by[string(r)]; !ok {
			t.Errorf("engine reason %q is not a field of Drops", r)
		}
	}
}

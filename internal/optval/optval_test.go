package optval

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/textlogger"
)

func TestSet(t *testing.T) {
	var l List
	zero, neg, big, ok := 0, -1, 11, 7
	Set(&l, "zero", &zero, 4, 10)
	Set(&l, "neg", &neg, 4, 10)
	Set(&l, "big", &big, 4, 10)
	Set(&l, "ok", &ok, 4, 10)
	d := -time.Second
	Set(&l, "dur", &d, time.Minute, math.MaxInt64)
	if zero != 4 || neg != 4 || big != 4 || ok != 7 || d != time.Minute {
		t.Errorf("zero %d, neg %d, big %d, ok %d, dur %v; want 4, 4, 4, 7, 1m", zero, neg, big, ok, d)
	}
	if len(l) != 3 || l[0].Option != "neg" || l[1].Option != "big" || l[2].Option != "dur" || l[0].Value != -1 || l[0].Default != 4 {
		t.Errorf("invalid list %+v, want neg, big and dur with their values and defaults", l)
	}
}

// TestLogNamesNonFiniteValues: a NaN or infinite value is logged by its
// name; klog's text logger (like a JSON one) has no number for it and
// printed an error in its place.
func TestLogNamesNonFiniteValues(t *testing.T) {
	var buf bytes.Buffer
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&buf)))
	List{{"QPS", math.NaN(), 50.0}, {"QPS", math.Inf(1), 50.0}, {"QPS", -2.5, 50.0}}.Log(logger, "Invalid option")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{`value="NaN"`, `value="+Inf"`, `value=-2.5`}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d: %q", len(lines), len(want), lines)
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) || strings.Contains(lines[i], "internal error") {
			t.Errorf("line %d: %s, want %s, no internal error", i, lines[i], w)
		}
	}
}

package optval

import (
	"math"
	"testing"
	"time"
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

package sink

import (
	"fmt"
	"testing"
	"time"
)

// A key whose own writes fail (the server answers others in between) is
// dropped as retries_exhausted after exactly MaxTries writes, not one more.
func TestSchedKeyDroppedAfterExactlyMaxTries(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, maxTries := range []int{1, 3, 12} {
		s := newTestSched(t, Options{QPS: Unlimited, MaxTries: maxTries}, t0)
		s.add("warm", schedItem("w", t0), t0)
		writeOK(t, s, t0)
		now := t0.Add(time.Millisecond)
		s.add("k", schedItem("k", now), now)
		five := result{out: outFailed, fault: faultStatus}
		tries := 0
		for {
			tries++
			if v := stepKey(t, s, "k", now, five); v == vExhausted {
				break
			}
			if tries > maxTries {
				t.Fatalf("MaxTries %d: key still retried after %d failed writes of its own", maxTries, tries)
			}
			// Another key is answered meanwhile: k's failures are its own.
			now = now.Add(time.Millisecond)
			o := fmt.Sprint("o", tries)
			s.add(o, schedItem(o, now), now)
			stepKey(t, s, o, now, result{out: outWritten})
			now = maxTime(now.Add(time.Millisecond), s.entries["k"].readyAt)
		}
		if tries != maxTries {
			t.Errorf("MaxTries %d: dropped after %d writes", maxTries, tries)
		}
	}
}

package sink

import (
	"testing"
	"time"
)

// Two keys of one namespace failing with a 500, nothing answered in
// between, while a key of another namespace waits to be tried, are that
// namespace's failure (a webhook refusing it), not the server's: the other
// namespace's key goes at once, not behind a probe. (The table: the server's
// only for "a second namespace, or ... the only namespace with events
// ready".)
func TestSchedOneNamespaceFailingDoesNotStallOthers(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{QPS: Unlimited}, t0)
	s.add("bad/a", nsItem("bad", "a", t0), t0)
	s.add("bad/b", nsItem("bad", "b", t0.Add(time.Millisecond)), t0.Add(time.Millisecond))
	s.add("good/c", nsItem("good", "c", t0.Add(2*time.Millisecond)), t0.Add(2*time.Millisecond))
	now := t0.Add(3 * time.Millisecond)
	five := result{out: outFailed, fault: faultStatus}
	stepKey(t, s, "bad/a", now, five)
	stepKey(t, s, "bad/b", now, five)
	if s.health.down {
		t.Fatalf("two 500s of namespace bad, with good's key waiting: the server is seen down")
	}
	tk, _ := s.next(now)
	if tk == nil || tk.en.key != "good/c" || tk.probe {
		t.Fatalf("dispatched %+v at once, want good/c's write (not a probe)", tk)
	}
}

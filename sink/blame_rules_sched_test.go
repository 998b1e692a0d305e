package sink

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The retried answers, and what kind of failure each is for blame (the
// package documentation's table): 408 is retried like a 5xx; no answer, 503
// and 504 are as good as no answer (the server's at once), whatever
// Retry-After they carry; any other 5xx or a 408 is an answer of the server
// (a first suspicion); only a 429 is load shedding (with Retry-After) or a
// limit (without).
func TestFaultOfRetriedAnswers(t *testing.T) {
	gr := schema.GroupResource{Resource: "events"}
	generic := func(code, retryAfter int) error {
		return apierrors.NewGenericServerResponse(code, "post", gr, "e", "", retryAfter, true)
	}
	cases := []struct {
		name     string
		err      error
		after    time.Duration
		overload bool
		fault    fault
	}{
		{"transport", errors.New("dial tcp: connection refused"), 0, false, faultTransport},
		{"408", generic(http.StatusRequestTimeout, 0), 0, false, faultStatus},
		{"500", apierrors.NewInternalError(errors.New("webhook")), 0, false, faultStatus},
		{"500 with Retry-After", generic(http.StatusInternalServerError, 2), 2 * time.Second, false, faultStatus},
		{"503", apierrors.NewServiceUnavailable("down"), 0, false, faultTransport},
		{"503 with Retry-After", generic(http.StatusServiceUnavailable, 3), 3 * time.Second, false, faultTransport},
		{"504", generic(http.StatusGatewayTimeout, 0), 0, false, faultTransport},
		{"504 server timeout", apierrors.NewTimeoutError("slow", 0), 0, false, faultTransport},
		{"429 with Retry-After", apierrors.NewTooManyRequests("busy", 1), time.Second, true, faultShed},
		{"429 without Retry-After", generic(http.StatusTooManyRequests, 0), 0, true, faultLimited},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := classify(c.err, false)
			if cl.errClass != classRetry || cl.RetryAfter != c.after || cl.Overload != c.overload {
				t.Fatalf("classify(%v) = %+v (%s), want a retry after %v, overload %v", c.err, cl, cl, c.after, c.overload)
			}
			if got := faultOf(c.err, cl); got != c.fault {
				t.Fatalf("faultOf(%v) = %v, want %v", c.err, got, c.fault)
			}
		})
	}
}

// An answer to a probe after an outage says only that the server is back:
// the namespace of a key that failed into the outage is not taken for
// failing alone, and a 500 of a new key of it, then a 500 of a key of
// another namespace with nothing answered in between, are the server's
// ("5xx ... of a second distinct key with no answer in between").
func TestSchedProbeAnswerDoesNotMakeNamespacesFailAlone(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{QPS: Unlimited}, t0)
	s.add("a1", nsItem("A", "a1", t0), t0)
	s.add("b1", nsItem("B", "b1", t0.Add(time.Millisecond)), t0.Add(time.Millisecond))
	s.add("a2", nsItem("A", "a2", t0.Add(2*time.Millisecond)), t0.Add(2*time.Millisecond))
	s.add("c1", nsItem("C", "c1", t0.Add(3*time.Millisecond)), t0.Add(3*time.Millisecond))
	stepKey(t, s, "a1", t0, result{out: outFailed, fault: faultTransport})
	if !s.health.down {
		t.Fatal("no answer with nothing answered before: the server is not seen down")
	}
	now := s.health.probeAt
	tk, _ := s.next(now)
	if tk == nil || !tk.probe || tk.en.key != "b1" {
		t.Fatalf("probe %s, want b1's", keyOf(tk))
	}
	s.finish(tk, result{out: outWritten}, now)
	if s.health.down {
		t.Fatal("the probe's success did not bring the server back")
	}
	five := result{out: outFailed, fault: faultStatus}
	now = now.Add(time.Millisecond)
	stepKey(t, s, "a1", now, five) // failed before, answered since: its own
	now = now.Add(time.Millisecond)
	stepKey(t, s, "a2", now, five) // a first suspicion
	if s.health.down {
		t.Fatal("one 500 of a new key taken for the server down")
	}
	now = now.Add(time.Millisecond)
	stepKey(t, s, "c1", now, five) // a second namespace, nothing answered in between
	if !s.health.down {
		t.Fatal("500s of keys of two namespaces with nothing answered in between, after a probe's answer: the server is not seen down (namespace A taken for failing alone)")
	}
	if a2 := s.entries["a2"]; a2.failures != 0 {
		t.Fatalf("a2 still charged %d tries for what was the server's failure", a2.failures)
	}
}

// A namespace fails alone only "until a key of that namespace is answered
// again": once one is, a 500 of it and a 500 of another namespace with
// nothing answered in between are the server's again.
func TestSchedNamespaceAnsweredAgainNoLongerFailsAlone(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{QPS: Unlimited, MaxTries: 1}, t0)
	five := result{out: outFailed, fault: faultStatus}
	s.add("a1", nsItem("A", "a1", t0), t0)
	s.add("b1", nsItem("B", "b1", t0.Add(time.Millisecond)), t0.Add(time.Millisecond))
	if v := stepKey(t, s, "a1", t0, five); v != vExhausted { // MaxTries 1: gone, but remembered as a suspect
		t.Fatalf("a1: verdict %v, want exhausted", v)
	}
	stepKey(t, s, "b1", t0.Add(time.Millisecond), result{out: outWritten}) // A failed while B was answered: A fails alone
	if _, alone := s.blame.alone["A"]; !alone {
		t.Fatal("namespace A, failing while B is answered, is not taken for failing alone")
	}
	now := t0.Add(10 * time.Millisecond)
	s.add("a2", nsItem("A", "a2", now), now)
	stepKey(t, s, "a2", now, result{out: outWritten}) // A answered again
	now = now.Add(time.Millisecond)
	s.add("a3", nsItem("A", "a3", now), now)
	s.add("c1", nsItem("C", "c1", now.Add(time.Millisecond)), now.Add(time.Millisecond))
	stepKey(t, s, "a3", now.Add(time.Millisecond), five)
	stepKey(t, s, "c1", now.Add(2*time.Millisecond), five)
	if !s.health.down {
		t.Fatal("500s of namespaces A and C with nothing answered in between, after A was answered again: the server is not seen down (A still taken for failing alone)")
	}
}

// "any failure ... while another write was answered ... since the key last
// failed" is the key's: a key refused again after others were answered is
// no suspect, so a single 500 of another key afterwards is that key's first
// suspicion, not a second key showing the server down.
func TestSchedKeyFailingAgainAfterAnAnswerIsNoSuspect(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{QPS: Unlimited}, t0)
	five := result{out: outFailed, fault: faultStatus}
	s.add("a", nsItem("X", "a", t0), t0)
	s.add("b", nsItem("X", "b", t0.Add(time.Millisecond)), t0.Add(time.Millisecond))
	stepKey(t, s, "a", t0, five) // a first suspicion
	now := t0.Add(time.Millisecond)
	stepKey(t, s, "b", now, result{out: outWritten}) // the server answers (same namespace: X does not fail alone)
	a := s.entries["a"]
	now = maxTime(now.Add(time.Millisecond), a.readyAt)
	s.add("c", nsItem("Y", "c", now), now)
	stepKey(t, s, "a", now, five) // a again, after b's answer: its own
	stepKey(t, s, "c", now.Add(time.Millisecond), five)
	if s.health.down {
		t.Fatal("a key refused again after another was answered, then one 500 of another key: the server is seen down")
	}
	if c := s.entries["c"]; c.state != stBackoff || c.failures != 1 {
		t.Fatalf("c: state %v, failures %d; want backing off alone, charged one try", c.state, c.failures)
	}
}

// The probe is never a key of a namespace that fails alone (a webhook
// refusing it while the server answers the others), even when its own last
// write did not fail and it is the oldest ready: its refusal would keep the
// server looking down for everyone.
func TestSchedProbeAvoidsANamespaceFailingAlone(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{QPS: Unlimited, MaxTries: 1}, t0)
	s.add("a1", nsItem("A", "a1", t0), t0)
	s.add("b1", nsItem("B", "b1", t0.Add(time.Millisecond)), t0.Add(time.Millisecond))
	stepKey(t, s, "a1", t0, result{out: outFailed, fault: faultStatus}) // dropped after its one try
	stepKey(t, s, "b1", t0.Add(time.Millisecond), result{out: outWritten})
	if _, alone := s.blame.alone["A"]; !alone {
		t.Fatal("namespace A, failing while B is answered, is not taken for failing alone")
	}
	t1 := t0.Add(time.Second) // more than BaseDelay after the last answer
	s.add("c1", nsItem("C", "c1", t1), t1)
	s.add("a2", nsItem("A", "a2", t1.Add(time.Millisecond)), t1.Add(time.Millisecond))
	s.add("d1", nsItem("D", "d1", t1.Add(2*time.Millisecond)), t1.Add(2*time.Millisecond))
	stepKey(t, s, "c1", t1.Add(3*time.Millisecond), result{out: outFailed, fault: faultTransport})
	if !s.health.down {
		t.Fatal("no answer, nothing answered within BaseDelay before: the server is not seen down")
	}
	tk, _ := s.next(s.health.probeAt)
	if tk == nil || !tk.probe || tk.en.key != "d1" {
		t.Fatalf("probe %s, want d1's (a2's namespace fails alone, c1 has just failed)", keyOf(tk))
	}
}

// keyOf names a task's key for a failure message.
func keyOf(tk *task) string {
	if tk == nil {
		return "none"
	}
	return fmt.Sprintf("%s (probe %v)", tk.en.key, tk.probe)
}

// Every outage starts its backoff again at BaseDelay: the escalations of an
// earlier outage are forgotten once the server answers.
func TestSchedEachOutageBacksOffFromBaseDelay(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{QPS: Unlimited, BaseDelay: 100 * time.Millisecond, MaxDelay: 10 * time.Second}, t0)
	s.add("k", schedItem("k", t0), t0)
	none := result{out: outFailed, fault: faultTransport}
	stepKey(t, s, "k", t0, none)
	for range 5 { // the probes fail: the backoff grows to 1.6 s
		now := s.health.probeAt
		tk, _ := s.next(now)
		if tk == nil || !tk.probe {
			t.Fatalf("%v: no probe", now)
		}
		s.finish(tk, none, now)
	}
	now := s.health.probeAt
	tk, _ := s.next(now)
	s.finish(tk, result{out: outWritten}, now)
	if s.health.down {
		t.Fatal("the probe's success did not bring the server back")
	}
	now = now.Add(time.Minute)
	s.add("k2", schedItem("k2", now), now)
	stepKey(t, s, "k2", now, none)
	if !s.health.down {
		t.Fatal("the second outage is not seen")
	}
	if d := s.health.probeAt.Sub(now); d > 100*time.Millisecond {
		t.Fatalf("the second outage's first probe waits %v, want at most BaseDelay (100ms)", d)
	}
}

// A Flush does not wait out the keys' intervals, but it does not cut short
// the backoff of a key refused for a reason of its own: releaseDelayed
// makes the spaced key ready and leaves the backing-off one where it is.
func TestSchedFlushReleasesIntervalsNotBackoffs(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, WithKeyInterval(Options{QPS: Unlimited}, 2*time.Second), t0)
	s.add("a", schedItem("a1", t0), t0)
	s.add("b", schedItem("b1", t0.Add(time.Millisecond)), t0.Add(time.Millisecond))
	stepKey(t, s, "a", t0, result{out: outWritten}) // a waits out its interval
	now := t0.Add(2 * time.Millisecond)
	s.add("a", schedItem("a2", now), now)
	stepKey(t, s, "b", now, result{out: outFailed, fault: faultStatus}) // b backs off alone
	a, b := s.entries["a"], s.entries["b"]
	if a.state != stSpaced || b.state != stBackoff {
		t.Fatalf("before the Flush: a %v, b %v; want spaced, backing off", a.state, b.state)
	}
	if !s.releaseDelayed() {
		t.Fatal("releaseDelayed released nothing")
	}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	if a.state != stReady || b.state != stBackoff {
		t.Fatalf("after the Flush: a %v, b %v; want ready, still backing off", a.state, b.state)
	}
	tk, _ := s.next(now)
	if tk == nil || tk.en != a {
		t.Fatalf("dispatched %s, want a's write", keyOf(tk))
	}
}

// While the server is down every pending event is held back by it, those
// queued behind the probe's own write too: Stats.HeldBack counts the
// events queued on the key whose write is under way.
func TestSchedHeldBackCountsTheQueueBehindTheProbe(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{QPS: Unlimited}, t0)
	s.add("k", schedItem("k1", t0), t0)
	s.add("j", schedItem("j1", t0.Add(time.Millisecond)), t0.Add(time.Millisecond))
	s.add("j", schedItem("j2", t0.Add(time.Millisecond)), t0.Add(time.Millisecond)) // another event of j: a write of its own
	stepKey(t, s, "k", t0.Add(time.Millisecond), result{out: outFailed, fault: faultTransport})
	if !s.health.down {
		t.Fatal("the server is not seen down")
	}
	now := s.health.probeAt
	tk, _ := s.next(now)
	if tk == nil || !tk.probe || tk.en.key != "j" {
		t.Fatalf("dispatched %s, want j's probe", keyOf(tk))
	}
	var st Stats
	s.stats(&st, now)
	if st.Pending != 2 || st.HeldBack != 2 {
		t.Fatalf("server down, probe under way: pending %d, held back %d; want both 2 (k1, and j2 behind the probe)", st.Pending, st.HeldBack)
	}
}

// A repeat coalesced into a waiting write keeps the time of the oldest of
// its events: the write keeps its place in the age order (before a key
// recorded after the first occurrence) and OldestPending counts from the
// first occurrence.
func TestSchedCoalescedWriteKeepsItsAge(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{QPS: Unlimited}, t0)
	s.add("k", schedItem("e", t0), t0)
	t1 := t0.Add(time.Second)
	s.add("j", schedItem("j", t1), t1)
	t5 := t0.Add(5 * time.Second)
	s.add("k", schedItem("e", t5), t5) // a repeat: coalesced
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	var st Stats
	s.stats(&st, t5)
	if st.Pending != 3 || st.OldestPending != 5*time.Second {
		t.Fatalf("pending %d, oldest pending %v; want 3, 5s (the first occurrence)", st.Pending, st.OldestPending)
	}
	tk, _ := s.next(t5)
	if tk == nil || tk.en.key != "k" || tk.it.n != 2 {
		t.Fatalf("dispatched %s, want k's write carrying 2 events (recorded first)", keyOf(tk))
	}
}

// A write that may have been stored (no answer, a 5xx) stays marked sent
// when a repeat of its event is coalesced into it before the retry: the
// retry's Create answered AlreadyExists is then the event written, not a
// drop.
func TestSchedCoalescedRepeatKeepsSent(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{QPS: Unlimited}, t0)
	s.add("warm", schedItem("w", t0), t0)
	writeOK(t, s, t0)
	s.add("k", schedItem("e", t0), t0)
	stepKey(t, s, "k", t0, result{out: outFailed, fault: faultStatus})
	if !s.entries["k"].queue[0].sent {
		t.Fatal("a write answered 500 is not marked sent")
	}
	now := t0.Add(time.Millisecond)
	s.add("k", schedItem("e", now), now) // a repeat while it backs off
	q := s.entries["k"].queue
	if len(q) != 1 || q[0].n != 2 || !q[0].sent {
		t.Fatalf("after the repeat: %d writes queued, first carrying %d events, sent %v; want one write of 2, sent", len(q), q[0].n, q[0].sent)
	}
}

// Load shedding shows in Stats for at least a round (a second), even when
// MaxDelay holds the refused key for less: the server said it sheds load,
// and a status that flickers for a fraction of a second would tell an
// operator nothing.
func TestSchedSheddingShowsForARoundAtLeast(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{QPS: Unlimited, BaseDelay: 100 * time.Millisecond, MaxDelay: 200 * time.Millisecond}, t0)
	s.add("warm", schedItem("w", t0), t0)
	writeOK(t, s, t0)
	now := t0.Add(10 * time.Millisecond)
	s.add("k", schedItem("k", now), now)
	stepKey(t, s, "k", now, result{out: outFailed, fault: faultShed, retryAfter: time.Second})
	if k := s.entries["k"]; k.state != stHeld || !k.readyAt.Equal(now.Add(200*time.Millisecond)) {
		t.Fatalf("k %v until %v, want held for MaxDelay", k.state, k.readyAt.Sub(now))
	}
	var st Stats
	s.stats(&st, now.Add(900*time.Millisecond))
	if st.Server != ServerShedding {
		t.Fatalf("0.9 s after a 429 while others were accepted: server %v, want shedding", st.Server)
	}
	s.stats(&st, now.Add(1100*time.Millisecond))
	if st.Server != ServerHealthy {
		t.Fatalf("1.1 s after it: server %v, want healthy", st.Server)
	}
}

// The window of writes under way "falls back to one after a server-wide
// failure": an engine that had four writes under way sends one request at
// the return from an outage (the probe's success), not four.
func TestSchedWindowFallsBackToOneAfterAnOutage(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{QPS: Unlimited, Workers: 4}, t0)
	for i := range 5 {
		at := t0.Add(time.Duration(i) * time.Millisecond)
		s.add(fmt.Sprint("w", i), schedItem(fmt.Sprint("w", i), at), at)
		writeOK(t, s, at)
	}
	if s.window != 4 {
		t.Fatalf("window %d after 5 successes, want the 4 workers", s.window)
	}
	t1 := t0.Add(time.Second)
	for i := range 10 {
		s.add(fmt.Sprint("k", i), schedItem(fmt.Sprint("k", i), t1), t1)
	}
	var busy []*task
	for tk, _ := s.next(t1); tk != nil; tk, _ = s.next(t1) {
		busy = append(busy, tk)
	}
	if len(busy) != 4 {
		t.Fatalf("%d writes under way, want 4", len(busy))
	}
	for _, tk := range busy { // no answer: the server is down
		s.finish(tk, result{out: outFailed, fault: faultTransport}, t1.Add(10*time.Millisecond))
	}
	if !s.health.down {
		t.Fatal("the server is not seen down")
	}
	now := s.health.probeAt
	tk, _ := s.next(now)
	if tk == nil || !tk.probe {
		t.Fatalf("dispatched %s, want the probe", keyOf(tk))
	}
	s.finish(tk, result{out: outWritten}, now)
	n := 0
	for tk, _ := s.next(now); tk != nil; tk, _ = s.next(now) {
		n++
	}
	if n != 1 {
		t.Fatalf("%d writes sent at once at the return from the outage, want 1 (the window falls back to one)", n)
	}
}

// A write that may have been stored (a 5xx) and is put back in front of a
// newer state of its event, recorded while it was under way, is merged
// with it, and the merged write stays marked sent: the retry's Create
// answered AlreadyExists is then the event written, not a drop.
func TestSchedRequeueMergeKeepsSent(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{QPS: Unlimited}, t0)
	s.add("warm", schedItem("w", t0), t0)
	writeOK(t, s, t0)
	s.add("k", schedItem("e", t0), t0)
	tk, _ := s.next(t0)
	if tk == nil || tk.en.key != "k" {
		t.Fatalf("dispatched %s, want k", keyOf(tk))
	}
	now := t0.Add(time.Millisecond)
	s.add("k", schedItem("e", now), now) // a repeat while the write is under way
	s.finish(tk, result{out: outFailed, fault: faultStatus}, now.Add(time.Millisecond))
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	q := s.entries["k"].queue
	if len(q) != 1 || q[0].n != 2 || !q[0].sent || !q[0].since.Equal(t0) {
		t.Fatalf("after the 500: %d writes queued, first carrying %d events since %v, sent %v; want one write of 2 since t0, sent", len(q), q[0].n, q[0].since.Sub(t0), q[0].sent)
	}
}

// When a second key shows a failure was the server's, only the tries
// charged to the first key on no evidence are refunded: one charged after
// another write was answered (its own failure, by evidence) stands.
func TestSchedRefundOnlyTheTriesChargedOnNoEvidence(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{QPS: Unlimited}, t0)
	five := result{out: outFailed, fault: faultStatus}
	s.add("a", nsItem("X", "a", t0), t0)
	s.add("b", nsItem("X", "b", t0.Add(time.Millisecond)), t0.Add(time.Millisecond))
	stepKey(t, s, "a", t0, five) // no evidence: a suspicion
	now := t0.Add(time.Millisecond)
	stepKey(t, s, "b", now, result{out: outWritten}) // the server answers: a's charge stands
	a := s.entries["a"]
	now = maxTime(now, a.readyAt)
	stepKey(t, s, "a", now, five) // after b's answer: its own, by evidence
	now = maxTime(now, a.readyAt)
	stepKey(t, s, "a", now, five) // nothing answered since its last failure: a suspicion again
	if a.failures != 3 || s.health.down {
		t.Fatalf("a charged %d tries, down %v; want 3, up", a.failures, s.health.down)
	}
	now = now.Add(time.Millisecond)
	s.add("c", nsItem("Y", "c", now), now)
	stepKey(t, s, "c", now, five) // a second namespace, nothing answered in between: the server's
	if !s.health.down {
		t.Fatal("the server is not seen down")
	}
	if a.failures != 2 {
		t.Fatalf("a charged %d tries after the refund, want 2 (the last try refunded; the first stood once b was answered, the second was its own by evidence)", a.failures)
	}
}

// A write overtaken by a later one stops counting against the writes under
// way once it has been under way tolerance times the recent round trip,
// not a whole round: one slow write (a webhook slow in one namespace)
// holds no one back.
func TestSchedOvertakenWriteStopsCountingEarly(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{QPS: 50, Burst: 100, Workers: 4}, t0)
	rtt := 10 * time.Millisecond
	at := t0
	for i := range 20 { // learn the usual round trip: 10 ms
		s.add(fmt.Sprint("w", i), schedItem(fmt.Sprint("w", i), at), at)
		tk, _ := s.next(at)
		if tk == nil {
			t.Fatalf("warm-up write %d not dispatched", i)
		}
		s.finish(tk, result{out: outWritten}, at.Add(rtt))
		at = at.Add(20 * time.Millisecond)
	}
	if c := s.pace.concurrency(); c != 2 {
		t.Fatalf("concurrency %v, want 2 (4 · 50/s · 10 ms)", c)
	}
	for _, k := range []string{"a", "b", "c", "d"} {
		s.add(k, schedItem(k, at), at)
	}
	slow, _ := s.next(at) // never answered here
	b, _ := s.next(at.Add(time.Millisecond))
	if slow == nil || b == nil {
		t.Fatal("the first two writes were not dispatched")
	}
	s.finish(b, result{out: outWritten}, at.Add(time.Millisecond+rtt)) // b, sent later, overtakes the slow one
	c, _ := s.next(at.Add(time.Millisecond + rtt))
	if c == nil {
		t.Fatal("c not dispatched with one write counted")
	}
	if d, _ := s.next(at.Add(20 * time.Millisecond)); d != nil {
		t.Fatalf("%s dispatched with two writes counted", keyOf(d))
	}
	// Past 4 · 10 ms after the slow write was sent it is a straggler.
	if d, _ := s.next(at.Add(50 * time.Millisecond)); d == nil || d.en.key != "d" {
		t.Fatalf("dispatched %s 50 ms after the overtaken write was sent, want d (the straggler no longer counts)", keyOf(d))
	}
}

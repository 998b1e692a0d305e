package sink

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// schedRun drives a sched on simulated time: every ms it adds what add
// gives, dispatches what next allows, and finishes each write latency after
// it was sent with what answer says. It checks the invariants after every
// step.
type schedRun struct {
	t       *testing.T
	s       *sched
	t0      time.Time
	latency time.Duration
	add     func(ms int, now time.Time)
	answer  func(tk *task, now time.Time) result

	written   map[string]time.Duration // event name -> when written, after t0
	exhausted map[string]int           // key -> times dropped as retries exhausted
	downMS    int                      // ms the server was seen down
	requests  int
}

type flight struct {
	tk *task
	at time.Time
}

func (r *schedRun) run(d time.Duration) {
	r.t.Helper()
	r.written, r.exhausted = map[string]time.Duration{}, map[string]int{}
	var busy []flight
	for ms := 0; ms < int(d/time.Millisecond); ms++ {
		now := r.t0.Add(time.Duration(ms) * time.Millisecond)
		if r.add != nil {
			r.add(ms, now)
		}
		kept := busy[:0]
		for _, f := range busy {
			if f.at.After(now) {
				kept = append(kept, f)
				continue
			}
			res := r.answer(f.tk, now)
			if res.out == outWritten {
				r.written[f.tk.it.ev.Name] = now.Sub(r.t0)
			}
			if r.s.finish(f.tk, res, now) == vExhausted {
				r.exhausted[f.tk.en.key]++
			}
		}
		busy = kept
		for {
			tk, _ := r.s.next(now)
			if tk == nil {
				break
			}
			r.requests++
			busy = append(busy, flight{tk, now.Add(r.latency)})
		}
		if r.s.health.down {
			r.downMS++
		}
		if err := r.s.check(); err != nil {
			r.t.Fatalf("ms %d: %v", ms, err)
		}
	}
}

func nsItem(ns, name string, now time.Time) *item {
	it := schedItem(name, now)
	it.ev.Namespace = ns
	return it
}

// A webhook refuses every event of one namespace with a 500 while the
// server writes the others: the others are written as fast as if nothing
// were refused, the server is never taken for down, the refused keys back
// off alone and are dropped after MaxTries, and the rate is never cut.
func TestSchedWebhookFailingOneNamespace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, answer := range []struct {
		name string
		res  result
	}{
		{"500", result{out: outFailed, fault: faultStatus}},
		{"429 without Retry-After", result{out: outFailed, fault: faultLimited}},
	} {
		t.Run(answer.name, func(t *testing.T) {
			s := newTestSched(t, Options{}, t0) // the defaults: 50/s, burst 100, 4 workers, 12 tries
			good := 0
			r := &schedRun{t: t, s: s, t0: t0, latency: 20 * time.Millisecond,
				add: func(ms int, now time.Time) {
					if ms < 10000 && ms%100 == 0 { // 100 good events over 10 s, distinct objects
						s.add(fmt.Sprint("good", ms), nsItem(fmt.Sprint("team", ms%7), fmt.Sprint("g", ms), now), now)
						good++
					}
					if ms < 10000 && ms%500 == 250 { // one refused every 0.5 s
						s.add(fmt.Sprint("bad", ms), nsItem("broken", fmt.Sprint("b", ms), now), now)
					}
				},
				answer: func(tk *task, now time.Time) result {
					if tk.it.ev.Namespace == "broken" {
						return answer.res
					}
					return result{out: outWritten}
				},
			}
			r.run(60 * time.Second)
			late := 0
			for name, at := range r.written {
				if strings.HasPrefix(name, "g") {
					var ms int
					fmt.Sscanf(name, "g%d", &ms)
					if at-time.Duration(ms)*time.Millisecond > 100*time.Millisecond {
						late++
					}
				}
			}
			goodWritten := 0
			for name := range r.written {
				if strings.HasPrefix(name, "g") {
					goodWritten++
				}
			}
			if goodWritten != good || late > 0 {
				t.Errorf("%d of %d good events written, %d of them more than 100 ms after they were recorded", goodWritten, good, late)
			}
			if len(r.exhausted) != 20 || s.pendingEvents != 0 {
				t.Errorf("%d of 20 refused keys dropped after their tries, %d events still pending", len(r.exhausted), s.pendingEvents)
			}
			if r.downMS > 0 || s.pace.cuts > 0 || s.health.probes > 0 {
				t.Errorf("the server was seen down for %d ms (%d probes), %d rate cuts", r.downMS, s.health.probes, s.pace.cuts)
			}
			t.Logf("%d requests for %d good and 20 refused events", r.requests, good)
		})
	}
}

// When the server fails for everyone (500 for every key), the failure is
// the server's: after the second key fails with nothing answered in
// between, every key waits behind one probe, no key is charged, and all is
// written once the server is back. It holds for a controller writing in one
// namespace, and in several.
func TestSchedServerFailingForEveryone(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, namespaces := range []int{1, 5} {
		t.Run(fmt.Sprint(namespaces, " namespaces"), func(t *testing.T) {
			s := newTestSched(t, Options{MaxTries: 3}, t0)
			outageEnd := t0.Add(20 * time.Second)
			added := 0
			r := &schedRun{t: t, s: s, t0: t0, latency: 20 * time.Millisecond,
				add: func(ms int, now time.Time) {
					if ms < 15000 && ms%50 == 0 {
						s.add(fmt.Sprint("k", ms), nsItem(fmt.Sprint("ns", ms%namespaces), fmt.Sprint("e", ms), now), now)
						added++
					}
				},
				answer: func(tk *task, now time.Time) result {
					if tk.sentAt.After(t0.Add(time.Second)) && tk.sentAt.Before(outageEnd) {
						return result{out: outFailed, fault: faultStatus}
					}
					return result{out: outWritten}
				},
			}
			r.run(30 * time.Second)
			if len(r.exhausted) > 0 || len(r.written) != added {
				t.Errorf("%d keys dropped as retries exhausted, %d of %d written", len(r.exhausted), len(r.written), added)
			}
			if r.downMS < 15000 {
				t.Errorf("the server was seen down for %d ms of a 19 s outage", r.downMS)
			}
			// Quiet while down: about one probe per backoff step (2 s at most).
			if s.health.probes > 40 {
				t.Errorf("%d probes during a 19 s outage", s.health.probes)
			}
			t.Logf("%d requests, %d probes, down %d ms", r.requests, s.health.probes, r.downMS)
		})
	}
}

// The probe is an event that has not just failed, of a namespace that has
// not failed since the last answer: a refused key never keeps the server
// looking down for the others.
func TestSchedProbeIsNotTheRefusedKey(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{QPS: Unlimited}, t0)
	// The oldest events are of namespace "broken".
	s.add("b1", nsItem("broken", "b1", t0), t0)
	s.add("b2", nsItem("broken", "b2", t0), t0)
	later := t0.Add(time.Millisecond)
	s.add("c1", nsItem("other", "c1", later), later)
	s.add("d1", nsItem("third", "d1", later), later)
	// Transport errors: the server is down at once.
	tk, _ := s.next(t0)
	s.finish(tk, result{out: outFailed, fault: faultTransport}, t0)
	if !s.health.down {
		t.Fatal("a transport error did not take the server for down")
	}
	at := s.health.probeAt
	probe, _ := s.next(at)
	if probe == nil || !probe.probe || probe.en.ns == "broken" {
		t.Fatalf("probe %+v: want a key of another namespace than the one that failed", probe)
	}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
}

// A 429 with Retry-After while others are accepted (load shedding) is
// never charged: a key refused that way again and again is not dropped.
func TestSchedSheddingNeverExhaustsAKey(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{MaxTries: 2}, t0)
	r := &schedRun{t: t, s: s, t0: t0, latency: 10 * time.Millisecond,
		add: func(ms int, now time.Time) {
			if ms == 0 {
				s.add("shed", nsItem("a", "s", now), now)
			}
			if ms%50 == 0 {
				s.add(fmt.Sprint("k", ms), nsItem("a", fmt.Sprint("e", ms), now), now)
			}
		},
		answer: func(tk *task, now time.Time) result {
			if tk.en.key == "shed" && now.Before(t0.Add(20*time.Second)) {
				return result{out: outFailed, fault: faultShed, retryAfter: time.Second}
			}
			return result{out: outWritten}
		},
	}
	r.run(25 * time.Second)
	if r.exhausted["shed"] > 0 {
		t.Fatal("a key refused by load shedding was dropped as retries exhausted")
	}
	if _, ok := r.written["s"]; !ok {
		t.Fatal("the shed key was not written once the server accepted it")
	}
}

// A write that may have reached the server (no answer, a 5xx) is marked
// sent, so that an AlreadyExists answering its retry counts it written; a
// 429 was refused before anything was stored and is not.
func TestSchedMarksWritesThatMayHaveBeenStored(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		fault fault
		ra    time.Duration
		sent  bool
	}{
		{faultTransport, 0, true},
		{faultStatus, 0, true},
		{faultLimited, 0, false},
		{faultShed, time.Second, false},
	} {
		s := newTestSched(t, Options{QPS: Unlimited}, t0)
		s.add("warm", schedItem("w", t0), t0)
		writeOK(t, s, t0)
		s.add("k", schedItem("k", t0), t0)
		tk, _ := s.next(t0)
		s.finish(tk, result{out: outFailed, fault: c.fault, retryAfter: c.ra}, t0)
		if got := s.entries["k"].queue[0].sent; got != c.sent {
			t.Errorf("fault %v: sent %v, want %v", c.fault, got, c.sent)
		}
	}
}

// stepKey dispatches the write of key at now, finishes it with r and
// checks the invariants.
func stepKey(t *testing.T, s *sched, key string, now time.Time, r result) verdict {
	t.Helper()
	tk, _ := s.next(now)
	if tk == nil || tk.en.key != key {
		t.Fatalf("%v: dispatched %+v, want %s", now, tk, key)
	}
	v := s.finish(tk, r, now)
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	return v
}

// A key that failed twice with no evidence either way (each 5xx charged,
// "the first 5xx ... the key, until a second key says otherwise") has both
// tries refunded when a second key shows the failures were the server's,
// not one: after the outage it still has all of MaxTries for failures of
// its own.
func TestSchedServerFailureRefundsEveryTryOfTheFirstKey(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestSched(t, Options{QPS: Unlimited, MaxTries: 3}, t0)
	five := result{out: outFailed, fault: faultStatus}
	s.add("a", schedItem("a", t0), t0)
	stepKey(t, s, "a", t0, five)
	a := s.entries["a"]
	now := a.readyAt
	stepKey(t, s, "a", now, five)
	if a.failures != 2 || s.health.down {
		t.Fatalf("after two 500s of one key alone: failures %d, down %v; want 2 charged, up", a.failures, s.health.down)
	}
	s.add("b", schedItem("b", now), now)
	stepKey(t, s, "b", now, five)
	if !s.health.down || a.failures != 0 {
		t.Fatalf("after a second key's 500: down %v, a charged %d; want down and every try refunded", s.health.down, a.failures)
	}
	// The probe (b: a backs off) is answered; then a fails alone, twice:
	// with MaxTries 3 it has a try left.
	now = s.health.probeAt
	tk, _ := s.next(now)
	if tk == nil || tk.en.key != "b" || !tk.probe {
		t.Fatalf("probe %+v, want b's", tk)
	}
	s.finish(tk, result{out: outWritten}, now)
	for i := range 2 {
		now = maxTime(now, a.readyAt)
		if v := stepKey(t, s, "a", now, five); v == vExhausted {
			t.Fatalf("a dropped after %d failures of its own, MaxTries 3", i+1)
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

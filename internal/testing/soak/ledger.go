package soak

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldk8s/herald/record"
)

// Result is the outcome of a run: the totals over every recorder and what
// the ledger found off.
//
// The ledger holds when, for every recorder (every incarnation of every
// slot): every event is in exactly one Stats bucket and none is still on
// its way; Stats.Recorded is what the soak recorded; the counts of the last
// acknowledged write of each server event add up to what Stats count as
// written (Created + Patched + Coalesced), more only by occurrences that
// Stats count as dropped or filtered (core/v1's spam filter) and a later
// write of the same event carried;
// every drop has a reason the schedule explains, and events are abandoned
// only by the Shutdown of a recorder the schedule restarts (a short
// deadline). For every event the server
// holds: a recorder sent it, and its stored count (count; the series count
// for events.k8s.io/v1) is the count of its last acknowledged write, or,
// above it, the count of a write whose answer was lost. Every Flush and
// Shutdown returned within its deadline (plus Config.Slack), the heap in
// use stayed under Config.HeapLimit, and no goroutine was left.
type Result struct {
	Seed      int64
	Duration  time.Duration
	Recorded  int64
	Written   int64 // Created + Patched
	Coalesced int64
	Dropped   map[string]int64 // by reason, the nonzero ones
	Abandoned int64
	// Filtered: skipped by core/v1's spam filter.
	Filtered int64
	// Retried writes, RateCuts of the adaptive write rate.
	Retried, RateCuts int64
	// ServerEvents is how many events the server held, LostAnswers how
	// many of them hold a count above their last acknowledged write.
	ServerEvents, LostAnswers int
	Faults                    map[Kind]int
	PeakHeap                  uint64
	// Slots are the totals of each recorder slot, in the order of the
	// run's header.
	Slots    []SlotResult
	Problems []string
}

// SlotResult is what the incarnations of one recorder slot did.
type SlotResult struct {
	Name         string // as the header names it
	Incarnations int
	Recorded     int64
	Written      int64 // Created + Patched
}

// OK reports whether the ledger balanced.
func (r *Result) OK() bool { return len(r.Problems) == 0 }

// Line is the soak's last line: the buckets every recorded event is in
// (written, coalesced, filtered, dropped, abandoned: they add up to
// recorded) and the ledger's verdict.
func (r *Result) Line() string {
	var drops []string
	var total int64
	for reason, n := range r.Dropped {
		drops = append(drops, fmt.Sprintf("%s %d", reason, n))
		total += n
	}
	sort.Strings(drops)
	by := "none"
	if len(drops) > 0 {
		by = strings.Join(drops, ", ")
	}
	verdict := "ledger exact"
	if !r.OK() {
		shown := r.Problems
		if len(shown) > 5 {
			shown = append(shown[:5:5], fmt.Sprintf("... %d more", len(r.Problems)-5))
		}
		verdict = fmt.Sprintf("ledger OFF (%d problems): %s", len(r.Problems), strings.Join(shown, "; "))
	}
	return fmt.Sprintf("soak: seed %d, %v, %d recorded, %d written, %d coalesced, %d filtered, %d dropped (%s), %d abandoned — %s",
		r.Seed, r.Duration, r.Recorded, r.Written, r.Coalesced, r.Filtered, total, by, r.Abandoned, verdict)
}

// FaultLine sums the faults injected.
func (r *Result) FaultLine() string {
	var parts []string
	for k, n := range r.Faults {
		parts = append(parts, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(parts)
	return fmt.Sprintf("soak: faults injected: %s; %d filtered by the spam filter, %d writes retried, %d rate cuts; server held %d events (%d with the count of a lost answer); peak heap %d MiB",
		strings.Join(parts, ", "), r.Filtered, r.Retried, r.RateCuts, r.ServerEvents, r.LostAnswers, r.PeakHeap>>20)
}

// explained are the drop reasons the schedule explains, and by what.
func (s *soak) explained() map[string]bool {
	ok := map[string]bool{}
	if len(s.deletedNS) > 0 {
		ok["namespace_terminating"] = true
	}
	// A key refused every try: the webhook failing its namespace,
	// EventRateLimit (always on), injected errors.
	ok["retries_exhausted"] = true
	return ok
}

// ledger lists what the server holds and balances it against the
// recorders' Stats and the soak's bookkeeping.
func (s *soak) ledger(ctx context.Context) (*Result, error) {
	res := &Result{Seed: s.cfg.Seed, Duration: s.cfg.Duration, Dropped: map[string]int64{}, Faults: s.injected, PeakHeap: s.peakHeap}
	res.Problems = append(res.Problems, s.problems...)
	explained := s.explained()

	byComponent := map[string]*incarnation{}
	for _, k := range s.kinds {
		res.Slots = append(res.Slots, SlotResult{Name: k.String()})
	}
	for _, inc := range s.all {
		byComponent[inc.component] = inc
		st := inc.final
		sr := &res.Slots[inc.slot]
		sr.Incarnations++
		sr.Recorded += st.Recorded
		sr.Written += st.Created + st.Patched
		res.Recorded += st.Recorded
		res.Written += st.Created + st.Patched
		res.Coalesced += st.Coalesced
		res.Abandoned += st.Abandoned
		res.Filtered += st.Filtered
		res.Retried += st.Retried
		res.RateCuts += st.RateCuts
		for reason, n := range st.Dropped.ByReason() {
			if n == 0 {
				continue
			}
			res.Dropped[reason] += n
			if !explained[reason] {
				res.Problems = append(res.Problems, fmt.Sprintf("%s: %d dropped as %s, which no fault of the schedule explains (refusals seen: %v)", inc.id, n, reason, inc.refusals))
			}
		}
		if st.Abandoned > 0 && !inc.restarted {
			res.Problems = append(res.Problems, fmt.Sprintf("%s: %d events abandoned at its final Shutdown (%v), with every fault over", inc.id, st.Abandoned, settleShutdown))
		}
		res.Problems = append(res.Problems, inc.anomalies...)
		res.Problems = append(res.Problems, statsProblems(inc)...)
	}

	// What the server holds.
	// storedBy adds up, by incarnation and occurrenceKey, the counts the
	// server holds.
	storedBy := map[*incarnation]map[string]int64{}
	for _, ns := range s.ns {
		evs, err := listEvents(ctx, s.admin, ns)
		if err != nil {
			return nil, fmt.Errorf("soak: listing events in %s: %w", ns, err)
		}
		res.ServerEvents += len(evs)
		for _, ev := range evs {
			inc := byComponent[ev.Source.Component]
			if inc == nil {
				inc = byComponent[ev.ReportingController]
			}
			if inc == nil {
				res.Problems = append(res.Problems, fmt.Sprintf("server event %s/%s (source %q, controller %q) sent by no recorder", ev.Namespace, ev.Name, ev.Source.Component, ev.ReportingController))
				continue
			}
			if storedBy[inc] == nil {
				storedBy[inc] = map[string]int64{}
			}
			storedBy[inc][occurrenceKey(ev.InvolvedObject.Namespace, ev.InvolvedObject.Name, ev.Reason)] += int64(storedCount(inc, &ev))
			w := inc.events[ev.Namespace+"/"+ev.Name]
			lost, problem := checkStored(inc, &ev, w)
			if lost {
				res.LostAnswers++
			}
			if problem != "" {
				res.Problems = append(res.Problems, problem)
			}
			if w != nil {
				w.seen = true
			}
		}
	}
	// No event counts an occurrence the soak did not record, nor two events
	// one occurrence: per object and reason, the stored counts add up to
	// what was recorded at most. (The balance of Stats above is over the
	// whole incarnation, with drops as its slack: it cannot see a count
	// too high where some other event's occurrences were dropped.)
	for _, inc := range s.all {
		res.Problems = append(res.Problems, overCounted(inc.id, storedBy[inc], inc.byObject)...)
	}
	for _, inc := range s.all {
		for key, w := range inc.events {
			if w.acked > 0 && !w.seen {
				res.Problems = append(res.Problems, fmt.Sprintf("%s: event %s acknowledged with count %d is not on the server", inc.id, key, w.acked))
			}
		}
	}

	for _, op := range s.ops {
		if op.took > op.deadline+s.cfg.Slack {
			res.Problems = append(res.Problems, fmt.Sprintf("%s took %v, deadline %v", op.what, op.took.Round(time.Millisecond), op.deadline))
		}
	}
	if res.PeakHeap > s.cfg.HeapLimit {
		res.Problems = append(res.Problems, fmt.Sprintf("heap in use reached %d MiB, limit %d MiB", res.PeakHeap>>20, s.cfg.HeapLimit>>20))
	}
	return res, nil
}

// checkStored checks one event the server holds against the bookkeeping
// of the incarnation that sent it (w: what it knows of that event, nil if
// nothing): its stored count must be the count of its last acknowledged
// write, or above it the count of a write whose answer was lost (lost).
func checkStored(inc *incarnation, ev *v1.Event, w *written) (lost bool, problem string) {
	stored := storedCount(inc, ev)
	switch {
	case w != nil && stored == w.acked:
		return false, ""
	case w != nil && stored > w.acked && w.uncertain[stored]:
		return true, ""
	}
	var acked int32
	var unc []int32
	if w != nil {
		acked = w.acked
		for c := range w.uncertain {
			unc = append(unc, c)
		}
		sort.Slice(unc, func(i, j int) bool { return unc[i] < unc[j] })
	}
	return false, fmt.Sprintf("%s: event %s/%s (%s %s) stored with count %d, last acknowledged write %d (unacknowledged counts %v): off by %d",
		inc.id, ev.Namespace, ev.Name, ev.InvolvedObject.Name, ev.Reason, stored, acked, unc, stored-acked)
}

// overCounted compares, by occurrenceKey, the counts the server holds of
// incarnation id's events (stored) with what the soak recorded (recorded).
func overCounted(id string, stored, recorded map[string]int64) []string {
	var out []string
	for k, n := range stored {
		if r := recorded[k]; n > r {
			out = append(out, fmt.Sprintf("%s: server events of %s count %d occurrences, the soak recorded %d: %d too many", id, k, n, r, n-r))
		}
	}
	sort.Strings(out)
	return out
}

// storedCount is the count the server holds for ev: count, or the series
// count for events.k8s.io/v1.
func storedCount(inc *incarnation, ev *v1.Event) int32 {
	if inc.kind.api == eventsAPI {
		if ev.Series != nil {
			return max(ev.Series.Count, 1)
		}
		return 1
	}
	return max(ev.Count, 1)
}

// statsProblems checks one incarnation's final Stats against itself and
// against the soak's bookkeeping.
func statsProblems(inc *incarnation) []string {
	st := inc.final
	var out []string
	if !inc.done {
		out = append(out, fmt.Sprintf("%s: never shut down", inc.id))
	}
	if u := st.Unaccounted(); u != 0 {
		out = append(out, fmt.Sprintf("%s: %d events in no Stats bucket (%s)", inc.id, u, statsString(st)))
	}
	if st.Queued != 0 || st.Pending != 0 || st.InFlight != 0 {
		out = append(out, fmt.Sprintf("%s: after Shutdown queued %d, pending %d, in flight %d", inc.id, st.Queued, st.Pending, st.InFlight))
	}
	if st.Offered != st.Broadcast {
		out = append(out, fmt.Sprintf("%s: offered %d, broadcast %d (one sink)", inc.id, st.Offered, st.Broadcast))
	}
	if r := inc.recorded.Load(); st.Recorded != r {
		out = append(out, fmt.Sprintf("%s: Stats.Recorded %d, the soak recorded %d: off by %d", inc.id, st.Recorded, r, st.Recorded-r))
	}
	// A key is given up (retries_exhausted) only after soakMaxTries
	// failed requests in a row: some event must have failed that often.
	inc.mu.Lock()
	runs := inc.tryRuns
	inc.mu.Unlock()
	if st.Dropped.RetriesExhausted > 0 && runs == 0 {
		out = append(out, fmt.Sprintf("%s: %d events dropped as retries_exhausted, but no event's requests failed %d times in a row", inc.id, st.Dropped.RetriesExhausted, soakMaxTries))
	}
	var acked int64
	for _, w := range inc.events {
		acked += int64(w.acked)
	}
	// Above what Stats count as written, the acknowledged counts carry only
	// occurrences Stats count as dropped or filtered (by the core/v1 spam
	// filter, which skips an event after the correlator counted it) that a
	// later write of the same event carried.
	statsWritten := st.Created + st.Patched + st.Coalesced
	carried := st.Dropped.Total() + st.Filtered
	switch extra := acked - statsWritten; {
	case extra < 0:
		out = append(out, fmt.Sprintf("%s: Stats count %d written, the acknowledged writes carry %d: %d short", inc.id, statsWritten, acked, -extra))
	case extra > carried:
		out = append(out, fmt.Sprintf("%s: the acknowledged writes carry %d, Stats count %d written, %d dropped and %d filtered: %d too many", inc.id, acked, statsWritten, st.Dropped.Total(), st.Filtered, extra-carried))
	}
	return out
}

func statsString(st record.Stats) string {
	return fmt.Sprintf("recorded %d, offered %d, broadcast %d, aggregated %d, filtered %d, created %d, patched %d, coalesced %d, dropped %v, abandoned %d, queued %d, pending %d, in flight %d",
		st.Recorded, st.Offered, st.Broadcast, st.Aggregated, st.Filtered, st.Created, st.Patched, st.Coalesced, st.Dropped.ByReason(), st.Abandoned, st.Queued, st.Pending, st.InFlight)
}

// listEvents lists every core/v1 event of namespace (the events.k8s.io/v1
// ones too, as core/v1 shows them), page by page.
func listEvents(ctx context.Context, cs kubernetes.Interface, ns string) ([]v1.Event, error) {
	var out []v1.Event
	opts := metav1.ListOptions{Limit: 1000}
	for {
		l, err := cs.CoreV1().Events(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, l.Items...)
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

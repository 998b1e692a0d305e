package correlator

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	testclock "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/internal/testing/replay"
)

// The differential tests run client-go's correlator and ours, configured
// client-go-compatibly (SpamKeyWithoutReason), over the same sequences and
// compare every result: Skip, the whole event (name, counts, timestamps,
// message, resource version, ...) and the patch bytes.
//
// Where client-go is random: when a group's set of distinct messages is
// full, client-go removes an arbitrary one (PopAny, Go map order), and
// herald the least recently seen one. So after a group has had MaxEvents
// distinct messages, the generator never repeats one of its old messages
// (client-go may or may not still have it in the set); it only sends new
// ones, which both correlators then combine. Before that, nothing has been
// removed from any set and repeats are deterministic in both.

type diffScenario struct {
	name      string
	seed      uint64
	steps     int
	objects   int
	reasons   int
	types     int
	lruSize   int
	maxEvents int
	burst     int
	qps       float32
	// repeat is the probability of repeating an old message of a group that
	// may still repeat; maxMessages bounds its distinct messages (0: none).
	repeat      float64
	maxMessages int
	advances    []time.Duration // picked uniformly before each step
	updateState float64         // probability of feeding the "server" answer back
}

func TestDifferentialClientGo(t *testing.T) {
	scenarios := []diffScenario{
		{name: "identical repeats", seed: 1, steps: 120, objects: 3, reasons: 1, types: 1, repeat: 1, maxMessages: 1,
			advances: []time.Duration{0, time.Second}, updateState: 1},
		{name: "distinct messages past the threshold", seed: 2, steps: 80, objects: 2, reasons: 1, types: 1, repeat: 0,
			advances: []time.Duration{time.Second, 10 * time.Second}, updateState: 1},
		{name: "aggregation window expiry", seed: 3, steps: 200, objects: 2, reasons: 2, types: 1, maxEvents: 4, repeat: 0.5,
			advances: []time.Duration{0, 100 * time.Second, 400 * time.Second, 700 * time.Second}, updateState: 0.5},
		{name: "many objects past the LRU size", seed: 4, steps: 600, objects: 24, reasons: 2, types: 2, lruSize: 8, repeat: 0.8, maxMessages: 3,
			advances: []time.Duration{0, time.Second}, updateState: 0.7},
		{name: "spam bursts and refill", seed: 5, steps: 400, objects: 2, reasons: 3, types: 1, burst: 5, repeat: 0.9, maxMessages: 2,
			advances: []time.Duration{0, 0, 0, time.Second, 60 * time.Second, 299 * time.Second, 300 * time.Second, 301 * time.Second}, updateState: 1},
		{name: "spam default burst", seed: 6, steps: 200, objects: 1, reasons: 2, types: 1, repeat: 0.95, maxMessages: 2,
			advances: []time.Duration{0, 0, 0, 0, 150 * time.Second}, updateState: 1},
		{name: "fast refill", seed: 7, steps: 300, objects: 3, reasons: 2, types: 2, burst: 2, qps: 0.7, repeat: 0.7, maxMessages: 4,
			advances: []time.Duration{0, 300 * time.Millisecond, 700 * time.Millisecond, 1500 * time.Millisecond}, updateState: 0.5},
	}
	for seed := uint64(100); seed < 110; seed++ {
		scenarios = append(scenarios, diffScenario{
			name: fmt.Sprint("mixed seed ", seed), seed: seed, steps: 600, objects: 4, reasons: 2, types: 2,
			lruSize: []int{5, 16, 0}[seed%3], maxEvents: []int{3, 10}[seed%2], burst: []int{4, 25}[seed%2], repeat: 0.5,
			advances: [][]time.Duration{
				{0, 0, 0, 0, time.Second, time.Second, 30 * time.Second, 30 * time.Second, 100 * time.Second, 301 * time.Second, 601 * time.Second},
				{0, 0, 0, 0, 0, 0, 0, 0, 0, time.Second, 5 * time.Second, 40 * time.Second},
			}[seed%2],
			updateState: 0.8,
		})
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) { runDifferential(t, sc) })
	}
}

func runDifferential(t *testing.T, sc diffScenario) {
	replay.OnFailure(t, "%+v", sc)
	clk := testclock.NewFakeClock(t0)
	theirs := record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{
		LRUCacheSize: sc.lruSize, BurstSize: sc.burst, QPS: sc.qps, MaxEvents: sc.maxEvents, Clock: clk,
	})
	ours := NewEventCorrelatorWithOptions(CorrelatorOptions{
		LRUCacheSize: sc.lruSize, BurstSize: sc.burst, QPS: sc.qps, MaxEvents: sc.maxEvents, Clock: clk,
		SpamKeyWithoutReason: true,
	})
	maxEvents := sc.maxEvents
	if maxEvents == 0 {
		maxEvents = defaultMaxEvents
	}
	rng := rand.New(rand.NewPCG(sc.seed, 0))
	type group struct {
		messages []string
		frozen   bool // had maxEvents distinct messages: only new ones from now on
	}
	groups := map[string]*group{}
	nextMsg := 0
	rv := 0
	var skipped, aggregated int
	names := map[string]string{} // herald's combined event names -> client-go's
	for i := 0; i < sc.steps; i++ {
		clk.Step(sc.advances[rng.IntN(len(sc.advances))])
		object := fmt.Sprint("obj-", rng.IntN(sc.objects))
		reason := fmt.Sprint("Reason", rng.IntN(sc.reasons))
		typ := []string{v1.EventTypeNormal, v1.EventTypeWarning}[rng.IntN(sc.types)]
		g := groups[object+"/"+typ+"/"+reason]
		if g == nil {
			g = &group{}
			groups[object+"/"+typ+"/"+reason] = g
		}
		var msg string
		canRepeat := len(g.messages) > 0 && !g.frozen
		full := sc.maxMessages > 0 && len(g.messages) >= sc.maxMessages
		if canRepeat && (full || rng.Float64() < sc.repeat) {
			msg = g.messages[rng.IntN(len(g.messages))]
		} else {
			nextMsg++
			msg = fmt.Sprintf("message %d <&> \u2028 %s", nextMsg, object)
			g.messages = append(g.messages, msg)
			if len(g.messages) >= maxEvents {
				g.frozen = true
			}
		}
		ev := newEvent(clk.Now(), object, reason, msg)
		ev.Type = typ
		if rng.IntN(4) == 0 {
			ev.Annotations = map[string]string{"a": strconv.Itoa(i)}
		}
		want, werr := theirs.EventCorrelate(ev.DeepCopy())
		got, gerr := ours.EventCorrelate(ev.DeepCopy())
		if werr != nil || gerr != nil {
			t.Fatalf("step %d: errors: client-go %v, herald %v", i, werr, gerr)
		}
		if got.Skip != want.Skip {
			t.Fatalf("step %d (%s %s %q): Skip = %v, client-go %v", i, object, reason, msg, got.Skip, want.Skip)
		}
		if got.Skip {
			skipped++
			continue
		}
		if got.Aggregated {
			aggregated++
		}
		// Combined events are named <object>.<hex stamp> with a stamp
		// from the process-wide strictly increasing source, not <hex now>:
		// compare them under client-go's name, and check that each herald
		// name always stands for the same client-go one.
		gotEv := got.Event
		if gotEv.Name != want.Event.Name {
			if !got.Aggregated {
				t.Fatalf("step %d: name %q, client-go %q", i, gotEv.Name, want.Event.Name)
			}
			prev, seen := names[gotEv.Name]
			if !seen {
				// A new name's stamp is at or after now; a name seen before
				// keeps the stamp of its first occurrence.
				checkStampedName(t, gotEv.Name, object, clk.Now())
			} else if prev != want.Event.Name {
				t.Fatalf("step %d: herald name %q stands for client-go's %q and %q", i, gotEv.Name, prev, want.Event.Name)
			}
			names[gotEv.Name] = want.Event.Name
			gotEv = gotEv.DeepCopy()
			gotEv.Name = want.Event.Name
		}
		if !reflect.DeepEqual(gotEv, want.Event) {
			t.Fatalf("step %d (%s %s %q): event differs:\nherald    %+v\nclient-go %+v", i, object, reason, msg, gotEv, want.Event)
		}
		if !bytes.Equal(got.Patch, want.Patch) {
			t.Fatalf("step %d: patch %s, client-go %s", i, got.Patch, want.Patch)
		}
		if rng.Float64() < sc.updateState {
			rv++
			server := want.Event.DeepCopy()
			server.ResourceVersion = strconv.Itoa(rv)
			theirs.UpdateState(server)
			server = got.Event.DeepCopy()
			server.ResourceVersion = strconv.Itoa(rv)
			ours.UpdateState(server)
		}
	}
	st := ours.Stats()
	t.Logf("%d steps: %d skipped, %d aggregated; stats %+v", sc.steps, skipped, aggregated, st)
	if st.Filtered != uint64(skipped) || st.Correlated != uint64(sc.steps) {
		t.Errorf("Stats = %+v; want Filtered %d, Correlated %d", st, skipped, sc.steps)
	}
}

// With herald's default spam key (with the reason), the only difference is
// which events are skipped: counts, names and patches of the written ones
// are client-go's.
func TestDifferentialDefaultSpamKey(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	theirs := record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: clk})
	ours := NewEventCorrelator(clk)
	wantSkip := map[bool]int{}
	gotSkip := map[bool]int{}
	for i := 0; i < 60; i++ {
		reason := []string{"Noisy", "Important"}[i%2]
		ev := newEvent(clk.Now(), "a", reason, "m")
		want, _ := theirs.EventCorrelate(ev.DeepCopy())
		got, _ := ours.EventCorrelate(ev.DeepCopy())
		wantSkip[want.Skip]++
		gotSkip[got.Skip]++
		if !got.Skip && !want.Skip && (!reflect.DeepEqual(got.Event, want.Event) || !bytes.Equal(got.Patch, want.Patch)) {
			t.Fatalf("step %d: herald %+v %s, client-go %+v %s", i, got.Event, got.Patch, want.Event, want.Patch)
		}
	}
	// client-go: both reasons share one bucket of 25; herald: 25 each.
	if wantSkip[false] != 25 || gotSkip[false] != 50 {
		t.Errorf("written: client-go %d (want 25), herald %d (want 50)", wantSkip[false], gotSkip[false])
	}
}

package correlator

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	testclock "k8s.io/utils/clock/testing"
)

// FuzzDifferentialClientGo feeds the same sequence of operations, read from
// the input, to client-go's correlator and herald's and compares every
// result: skip, event and patch. The first two bytes choose the options
// (MaxEvents, burst, QPS, LRU size and MaxIntervalInSeconds, including zero
// and negative values; client-go's key, message and spam key functions, or
// functions of the input's own); the rest are steps: the clock forward or
// back, the last result fed back as the server's answer (UpdateState), or
// an event whose fields (odd ones included: empty reason or message,
// invalid UTF-8, counts 0, -1 and MaxInt32) come from the input. Field
// values start with a letter of their own, so client-go's concatenated keys
// cannot collide. Allowed: herald's documented differences (combined
// events' names, combined messages made valid UTF-8). client-go is random
// once a group's set of messages is full and a message repeats (it removes
// an arbitrary one): the sequence ends there.
func FuzzDifferentialClientGo(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add(bytes.Repeat([]byte{3, 0, 0}, 40))
	f.Add(bytes.Repeat([]byte{1, 7, 0, 200, 2}, 40))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := diffOps(data); err != nil {
			t.Fatal(err)
		}
	})
}

// TestDifferentialClientGoRandomOps runs FuzzDifferentialClientGo's
// comparison over 3,000 random inputs of up to 400 bytes.
func TestDifferentialClientGoRandomOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		data := make([]byte, rng.IntN(400))
		for j := range data {
			data[j] = byte(rng.IntN(256))
		}
		if err := diffOps(data); err != nil {
			t.Fatalf("input %q: %v", data, err)
		}
	}
}

// diffOps is FuzzDifferentialClientGo's comparison of one input.
func diffOps(data []byte) error {
	if len(data) < 3 {
		return nil
	}
	cfg, cfg2 := data[0], data[1]
	data = data[2:]
	maxEvents := []int{1, 3, -1, 10}[cfg&3]
	burst := []int{0, 2, 5, -1}[(cfg>>2)&3]
	qps := []float32{0, 0.5, 2, -1}[(cfg>>4)&3]
	lru := []int{0, 1, 3, 5}[(cfg>>6)&3]
	maxInt := []int{0, 0, 5, -1}[(cfg2>>4)&3]
	t0 := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	clk := testclock.NewFakeClock(t0)
	to := record.CorrelatorOptions{
		LRUCacheSize: lru, BurstSize: burst, QPS: qps, MaxEvents: maxEvents, Clock: clk, MaxIntervalInSeconds: maxInt,
	}
	oo := CorrelatorOptions{
		LRUCacheSize: lru, BurstSize: burst, QPS: qps, MaxEvents: maxEvents, Clock: clk, MaxIntervalInSeconds: maxInt,
		SpamKeyWithoutReason: true,
	}
	if cfg2&1 != 0 {
		to.KeyFunc = record.EventAggregatorByReasonFunc
		oo.KeyFunc = record.EventAggregatorByReasonFunc
	}
	if cfg2&2 != 0 {
		mf := func(e *v1.Event) string { return "custom " + e.Reason + e.Message }
		to.MessageFunc, oo.MessageFunc = mf, mf
	}
	if cfg2&4 != 0 {
		sf := func(e *v1.Event) string {
			return e.InvolvedObject.Name + "/" + e.Message + "/" + strconv.Itoa(int(e.Count)%3)
		}
		to.SpamKeyFunc, oo.SpamKeyFunc = sf, sf
	}
	if cfg2&8 != 0 {
		sf := func(e *v1.Event) string { return e.Reason + e.Type + strconv.Itoa(int(e.Count)%2) + e.ResourceVersion }
		to.SpamKeyFunc, oo.SpamKeyFunc = sf, sf
	}
	if cfg2&0xc == 0 && cfg2&0x40 != 0 {
		// herald's default key (with the reason) against client-go's key plus the reason
		oo.SpamKeyWithoutReason = false
		to.SpamKeyFunc = func(e *v1.Event) string {
			o := e.InvolvedObject
			return e.Source.Component + e.Source.Host + o.Kind + o.Namespace + o.Name + string(o.UID) + o.APIVersion + e.Type + "|" + e.Reason
		}
	}
	theirs := record.NewEventCorrelatorWithOptions(to)
	ours := NewEventCorrelatorWithOptions(oo)
	pick := func(b byte, vals ...string) string { return vals[int(b)%len(vals)] }
	// aggregated groups: aggregate key -> messages seen
	type grp struct {
		msgs       map[string]bool
		aggregated bool
	}
	groups := map[string]*grp{}
	names := map[string]string{}
	var last *v1.Event
	var lastWant *v1.Event
	for i := 0; len(data) >= 2; i++ {
		op, arg := data[0], data[1]
		data = data[2:]
		switch op % 8 {
		case 0:
			clk.Step(time.Duration(arg) * time.Second)
			continue
		case 1:
			clk.Step(-time.Duration(arg%8) * time.Second)
			continue
		case 2:
			clk.Step(time.Duration(arg) * 10 * time.Second)
			continue
		case 3:
			if last != nil && lastWant != nil {
				srv := lastWant.DeepCopy()
				srv.ResourceVersion = strconv.Itoa(i)
				if srv.Count >= 0 && srv.Count < 1<<30 {
					srv.Count += int32(arg % 3)
				}
				srv.FirstTimestamp = metav1.NewTime(clk.Now().Add(-time.Duration(arg) * time.Second))
				theirs.UpdateState(srv)
				srv2 := last.DeepCopy()
				srv2.ResourceVersion = strconv.Itoa(i)
				srv2.Count = srv.Count
				srv2.FirstTimestamp = srv.FirstTimestamp
				ours.UpdateState(srv2)
			}
			last, lastWant = nil, nil
			continue
		}
		if len(data) < 2 {
			return nil
		}
		b2, b3 := data[0], data[1]
		data = data[2:]
		now := clk.Now()
		ev := &v1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: "n" + strconv.Itoa(i), Namespace: "ns"},
			InvolvedObject: v1.ObjectReference{
				Kind: pick(op>>3, "KPod", "KNode"), Namespace: "ns",
				Name:      pick(arg, "oa", "ob"),
				FieldPath: pick(arg>>1, "", "fspec"),
				UID:       types.UID(pick(arg>>2, "u1", "")), APIVersion: "v1",
			},
			Source:              v1.EventSource{Component: pick(arg>>3, "ca", ""), Host: pick(arg>>4, "", "hx")},
			Type:                pick(b2, "Normal", "Warning"),
			Reason:              pick(b2>>1, "R1", "R2", ""),
			Message:             pick(b3, "m1", "m2", "m3", "m4", "", "m<&>\u2028", "m\xff\xfe"),
			ReportingController: pick(b2>>3, "", "x"),
			Count:               []int32{1, 1, 1, 0, 4, -1, 2147483647}[int(b3>>3)%7],
			FirstTimestamp:      metav1.NewTime(now),
			LastTimestamp:       metav1.NewTime(now),
		}
		aggKey, _ := record.EventAggregatorByReasonFunc(ev)
		g := groups[aggKey]
		if g == nil {
			g = &grp{msgs: map[string]bool{}}
			groups[aggKey] = g
		}
		if maxEvents > 1 && g.aggregated && g.msgs[ev.Message] {
			return nil // client-go's PopAny makes the rest random
		}
		g.msgs[ev.Message] = true
		last, lastWant = nil, nil
		want, werr := theirs.EventCorrelate(ev.DeepCopy())
		got, gerr := ours.EventCorrelate(ev.DeepCopy())
		if (werr == nil) != (gerr == nil) {
			return fmt.Errorf("step %d: errors: client-go %v, herald %v", i, werr, gerr)
		}
		if got.Aggregated {
			g.aggregated = true
		}
		if got.Skip != want.Skip {
			return fmt.Errorf("step %d: skip herald %v client-go %v", i, got.Skip, want.Skip)
		}
		if got.Skip {
			continue
		}
		ge := got.Event.DeepCopy()
		if got.Aggregated {
			if p, ok := names[ge.Name]; ok && p != want.Event.Name {
				return fmt.Errorf("step %d: name %q maps to %q and %q", i, ge.Name, p, want.Event.Name)
			}
			names[ge.Name] = want.Event.Name
			ge.Name = want.Event.Name
			// documented: combined messages made valid UTF-8 (herald)
			if strings.ToValidUTF8(want.Event.Message, "\uFFFD") == ge.Message {
				ge.Message = want.Event.Message
			}
		}
		if !reflect.DeepEqual(ge, want.Event) {
			return fmt.Errorf("step %d (aggregated %v): event differs\nherald    %+v\nclient-go %+v", i, got.Aggregated, ge, want.Event)
		}
		if !bytes.Equal(got.Patch, want.Patch) && !(got.Aggregated && strings.Contains(string(want.Patch), "\ufffd")) {
			return fmt.Errorf("step %d: patch herald %s client-go %s", i, got.Patch, want.Patch)
		}
		last, lastWant = got.Event, want.Event
	}
	return nil
}

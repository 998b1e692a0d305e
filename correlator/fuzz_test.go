package correlator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/record"
	testclock "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/internal/eventname"
)

// clientGoPatch computes the patch the way client-go's eventObserve does:
// marshal the event as it is and with Count 0, LastTimestamp at the epoch
// and an empty Message, and diff the two.
func clientGoPatch(t *testing.T, ev *v1.Event) (patch, oldJSON []byte) {
	t.Helper()
	old := *ev
	old.Count = 0
	old.LastTimestamp = metav1.NewTime(time.Unix(0, 0))
	old.Message = ""
	newJSON, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	oldJSON, err = json.Marshal(&old)
	if err != nil {
		t.Fatal(err)
	}
	patch, err = strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, ev)
	if err != nil {
		t.Fatal(err)
	}
	return patch, oldJSON
}

// clientGoCorrelatorPatch runs ev through client-go's correlator after an
// occurrence with count ev.Count-1, which makes ev a repeat (unless
// ev.Count-1 is 0, which client-go takes for "not seen"), and returns the
// patch and count of the result.
func clientGoCorrelatorPatch(t *testing.T, ev *v1.Event) ([]byte, int32) {
	t.Helper()
	clk := testclock.NewFakeClock(time.Unix(1795000000, 0))
	theirs := record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: clk})
	first := ev.DeepCopy()
	first.Count = ev.Count - 1
	if _, err := theirs.EventCorrelate(first); err != nil {
		t.Fatal(err)
	}
	res, err := theirs.EventCorrelate(ev.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	return res.Patch, res.Event.Count
}

func TestPatchCases(t *testing.T) {
	at := time.Date(2026, 11, 22, 3, 0, 41, 999999999, time.FixedZone("X", 3600))
	cases := []struct {
		count   int32
		last    metav1.Time
		message string
		want    string
	}{
		{2, metav1.NewTime(at), "same message", `{"count":2,"lastTimestamp":"2026-11-22T02:00:41Z","message":"same message"}`},
		{3, metav1.NewTime(at), "", `{"count":3,"lastTimestamp":"2026-11-22T02:00:41Z"}`},
		{4, metav1.Time{}, "m", `{"count":4,"lastTimestamp":null,"message":"m"}`},
		{5, metav1.NewTime(time.Unix(0, 999)), "m", `{"count":5,"message":"m"}`},
		{6, metav1.NewTime(time.Unix(-1, 0)), "m", `{"count":6,"lastTimestamp":"1969-12-31T23:59:59Z","message":"m"}`},
		{0, metav1.NewTime(time.Unix(0, 0)), "", `{}`},
		{-7, metav1.NewTime(at), "<a&b> \"q\" \\ \n\t\r\b\f\x01\x7f \u2028\u2029 é \xff", `{"count":-7,"lastTimestamp":"2026-11-22T02:00:41Z","message":"\u003ca\u0026b\u003e \"q\" \\ \n\t\r\b\f\u0001` + "\x7f" + ` \u2028\u2029 é ` + "\uFFFD" + `"}`},
	}
	for _, tc := range cases {
		ev := &v1.Event{Count: tc.count, LastTimestamp: tc.last, Message: tc.message, Reason: "R"}
		got := appendPatch(nil, tc.count, tc.last, tc.message)
		if string(got) != tc.want {
			t.Errorf("appendPatch(%d, %v, %q) = %s, want %s", tc.count, tc.last, tc.message, got, tc.want)
		}
		if ref, _ := clientGoPatch(t, ev); !bytes.Equal(got, ref) {
			t.Errorf("appendPatch(%d, %v, %q) = %s, client-go's diff %s", tc.count, tc.last, tc.message, got, ref)
		}
		if tc.count-1 != 0 {
			if ref, _ := clientGoCorrelatorPatch(t, ev); !bytes.Equal(got, ref) {
				t.Errorf("appendPatch(%d, %v, %q) = %s, client-go's correlator %s", tc.count, tc.last, tc.message, got, ref)
			}
		}
	}
}

// FuzzPatch checks that the patch is valid JSON, byte-for-byte client-go's
// diff (computed directly and through client-go's correlator), and that
// applying it to the old document gives the new count, last timestamp and
// message.
func FuzzPatch(f *testing.F) {
	f.Add(int32(2), int64(1795000000), int64(5), false, "same message")
	f.Add(int32(1), int64(0), int64(0), false, "")
	f.Add(int32(-1), int64(0), int64(999), true, "<>&\u2028\xff\x00\"\\")
	f.Add(int32(2147483647), int64(-62135596800), int64(0), false, "é\u00e9\U0001F600\xed\xa0\x80")
	f.Add(int32(-2147483648), int64(253402300799), int64(999999999), false, "\t\n")
	f.Fuzz(func(t *testing.T, count int32, sec, nsec int64, zero bool, message string) {
		var last metav1.Time
		if !zero {
			last = metav1.NewTime(time.Unix(sec, nsec))
		}
		ev := &v1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "a.1", Namespace: "ns"},
			InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "a", Namespace: "ns"},
			Reason:         "R",
			Message:        message,
			Count:          count,
			LastTimestamp:  last,
			Type:           v1.EventTypeNormal,
		}
		got := appendPatch(make([]byte, 0, patchSize(message)), count, last, message)
		if !json.Valid(got) {
			t.Fatalf("invalid JSON: %s", got)
		}
		want, oldJSON := clientGoPatch(t, ev)
		if !bytes.Equal(got, want) {
			t.Fatalf("patch %s, client-go's diff %s", got, want)
		}

		// Through client-go's correlator: a previous occurrence with count-1
		// (if that is "seen", i.e. not 0) makes the next one a repeat.
		if count-1 != 0 {
			wantPatch, wantCount := clientGoCorrelatorPatch(t, ev)
			ours := NewEventCorrelatorWithOptions(CorrelatorOptions{Clock: testclock.NewFakeClock(time.Unix(1795000000, 0))})
			first := ev.DeepCopy()
			first.Count = count - 1
			if _, err := ours.EventCorrelate(first); err != nil {
				t.Fatal(err)
			}
			g, err := ours.EventCorrelate(ev.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(g.Patch, wantPatch) || g.Event.Count != wantCount {
				t.Fatalf("correlator: herald count %d patch %s, client-go count %d patch %s", g.Event.Count, g.Patch, wantCount, wantPatch)
			}
		}

		// Applying the patch gives the new fields, when the time is one
		// metav1.Time can parse back (years 0-9999).
		if y := last.UTC().Year(); !zero && (y < 0 || y > 9999) {
			return
		}
		patched, err := strategicpatch.StrategicMergePatch(oldJSON, got, &v1.Event{})
		if err != nil {
			t.Fatalf("applying %s: %v", got, err)
		}
		var out v1.Event
		if err := json.Unmarshal(patched, &out); err != nil {
			t.Fatalf("patched document %s: %v", patched, err)
		}
		var wantEv v1.Event
		newJSON, _ := json.Marshal(ev)
		if err := json.Unmarshal(newJSON, &wantEv); err != nil {
			t.Fatal(err)
		}
		if out.Count != wantEv.Count || out.Message != wantEv.Message || !out.LastTimestamp.Equal(&wantEv.LastTimestamp) {
			t.Fatalf("patched: count %d last %v message %q; want %d %v %q", out.Count, out.LastTimestamp, out.Message, wantEv.Count, wantEv.LastTimestamp, wantEv.Message)
		}
	})
}

// FuzzKeyCorrelator checks through the correlator that two events share a
// correlation key exactly when every field of client-go's event key is
// equal, however the bytes are split between fields.
func FuzzKeyCorrelator(f *testing.F) {
	f.Add("ab", "c", "Pod", "ns", "x", "", "u", "v1", "Normal", "R", "m", "a", "bc", "Pod", "ns", "x", "", "u", "v1", "Normal", "R", "m")
	f.Add("c", "h", "Pod", "ns", "x", "", "u", "v1", "Normal", "R", "x", "c", "h", "Pod", "ns", "x", "", "u", "v1", "Normal", "Rx", "")
	f.Add("c", "h", "Pod", "ns", "x", "", "u", "v1", "Normal", "R", "m", "c", "h", "Pod", "ns", "x", "", "u", "v1", "Normal", "R", "m")
	f.Fuzz(func(t *testing.T, c1, h1, k1, ns1, n1, fp1, uid1, api1, ty1, r1, m1, c2, h2, k2, ns2, n2, fp2, uid2, api2, ty2, r2, m2 string) {
		mk := func(c, h, k, ns, n, fp, uid, api, ty, r, m string) *v1.Event {
			return &v1.Event{
				InvolvedObject: v1.ObjectReference{Kind: k, Namespace: ns, Name: n, FieldPath: fp, UID: types.UID(uid), APIVersion: api},
				Source:         v1.EventSource{Component: c, Host: h},
				Type:           ty, Reason: r, Message: m, Count: 1,
			}
		}
		a := mk(c1, h1, k1, ns1, n1, fp1, uid1, api1, ty1, r1, m1)
		b := mk(c2, h2, k2, ns2, n2, fp2, uid2, api2, ty2, r2, m2)
		equal := [11]string{c1, h1, k1, ns1, n1, fp1, uid1, api1, ty1, r1, m1} == [11]string{c2, h2, k2, ns2, n2, fp2, uid2, api2, ty2, r2, m2}
		c := NewEventCorrelatorWithOptions(CorrelatorOptions{DisableAggregation: true, DisableSpamFilter: true})
		ra, _ := c.EventCorrelate(a)
		rb, _ := c.EventCorrelate(b)
		if (ra.Key == rb.Key) != equal {
			t.Fatalf("keys %q and %q; fields equal: %v", ra.Key, rb.Key, equal)
		}
		if (rb.Event.Count == 2) != equal {
			t.Fatalf("second count %d; fields equal: %v", rb.Event.Count, equal)
		}
		spamEqual := [9]string{c1, h1, k1, ns1, n1, uid1, api1, ty1, r1} == [9]string{c2, h2, k2, ns2, n2, uid2, api2, ty2, r2}
		if (defaultSpamKey(a) == defaultSpamKey(b)) != spamEqual {
			t.Fatalf("spam keys %q and %q; fields equal: %v", defaultSpamKey(a), defaultSpamKey(b), spamEqual)
		}
		spamEqual = [8]string{c1, h1, k1, ns1, n1, uid1, api1, ty1} == [8]string{c2, h2, k2, ns2, n2, uid2, api2, ty2}
		if (spamKeyWithoutReason(a) == spamKeyWithoutReason(b)) != spamEqual {
			t.Fatalf("spam keys without reason %q and %q; fields equal: %v", spamKeyWithoutReason(a), spamKeyWithoutReason(b), spamEqual)
		}
		aggA, _ := EventAggregatorByReasonFunc(a)
		aggB, _ := EventAggregatorByReasonFunc(b)
		aggEqual := [9]string{c1, h1, k1, ns1, n1, uid1, api1, ty1, r1} == [9]string{c2, h2, k2, ns2, n2, uid2, api2, ty2, r2}
		if (aggA == aggB) != aggEqual {
			t.Fatalf("aggregate keys %q and %q; fields equal: %v", aggA, aggB, aggEqual)
		}
	})
}

// FuzzCombinedEvent checks contract 7 for combined events made from
// arbitrary object names, messages and limits: the name is a valid DNS-1123
// subdomain different from every event seen, the message fits the limit and
// is cut on a UTF-8 boundary.
func FuzzCombinedEvent(f *testing.F) {
	f.Add("My_Pod", "m", 0)
	f.Add("system:controller:x", "日本語のメッセージ", 40)
	f.Add(string(make([]byte, 300)), "\xff\xfe", -1)
	f.Fuzz(func(t *testing.T, object, message string, limit int) {
		c := NewWithMessageLimit(CorrelatorOptions{
			Clock: testclock.NewFakeClock(t0), MaxEvents: 2, DisableSpamFilter: true,
		}, limit)
		names := map[string]bool{}
		for i := range 3 {
			ev := newEvent(t0, object, "R", fmt.Sprint(i, message))
			ev.Name = eventname.New(object, t0)
			names[ev.Name] = true
			res, err := c.EventCorrelate(ev)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Aggregated {
				continue
			}
			got := res.Event
			if errs := validation.IsDNS1123Subdomain(got.Name); len(errs) > 0 {
				t.Fatalf("combined event name %q: %v", got.Name, errs)
			}
			if names[got.Name] {
				t.Fatalf("combined event takes the name %q of an event of its own", got.Name)
			}
			// What the server receives: the message made valid UTF-8
			// (a run of invalid bytes becomes U+FFFD), then cut.
			full := strings.ToValidUTF8(aggregateMessagePrefix+ev.Message, "\uFFFD")
			max := limit
			if max == 0 {
				max = defaultMessageLimit
			}
			switch {
			case !strings.HasPrefix(full, got.Message):
				t.Fatalf("message %q is not a prefix of %q", got.Message, full)
			case max > 0 && len(got.Message) > max:
				t.Fatalf("message of %d bytes over the limit %d", len(got.Message), max)
			case !utf8.ValidString(got.Message):
				t.Fatalf("message is not valid UTF-8: %q", got.Message)
			}
		}
	})
}

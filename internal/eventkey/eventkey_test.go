package eventkey

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestJoin(t *testing.T) {
	cases := []struct {
		fields []string
		want   string
	}{
		{nil, ""},
		{[]string{""}, "0:"},
		{[]string{"ab", "c"}, "2:ab1:c"},
		{[]string{"a", "bc"}, "1:a2:bc"},
		{[]string{strings.Repeat("x", 12), ""}, "12:" + strings.Repeat("x", 12) + "0:"},
	}
	for _, tc := range cases {
		if got := Join("", tc.fields...); got != tc.want {
			t.Errorf("Join(%q) = %q, want %q", tc.fields, got, tc.want)
		}
	}
	ev := &v1.Event{Reason: "R", Message: "m"}
	if k := Event(ev); !strings.HasPrefix(k, EventPrefix) {
		t.Errorf("Event key %q lacks its prefix", k)
	}
	if k := Correlation(Aggregate(ev)); !strings.HasPrefix(k, AggregatePrefix) || k == Event(ev) {
		t.Errorf("aggregate correlation key %q", k)
	}
}

// FuzzKey checks that Join is injective: Split recovers the fields, so two
// field lists with equal keys are equal.
func FuzzKey(f *testing.F) {
	f.Add("ab", "c", "", "1:x")
	f.Add("a", "bc", "10:", "")
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		fields := []string{a, b, c, d}
		key := Join("", fields...)
		got, ok := Split(key)
		if !ok || !reflect.DeepEqual(got, fields) {
			t.Fatalf("Split(Join(%q)) = %q, %v", fields, got, ok)
		}
		// A different split of the same bytes gives a different key.
		other := []string{a + b, c, d, ""}
		if !reflect.DeepEqual(other, fields) && Join("", other...) == key {
			t.Fatalf("%q and %q share key %q", fields, other, key)
		}
		ev := &v1.Event{
			Source:              v1.EventSource{Component: a, Host: b},
			InvolvedObject:      v1.ObjectReference{Kind: c, Namespace: d, Name: a + d, UID: "u" + types.UID(b), APIVersion: c + a, FieldPath: d},
			Type:                b + c,
			Reason:              d + a,
			ReportingController: c,
			ReportingInstance:   a,
			Message:             b,
		}
		for _, withReason := range []bool{false, true} {
			if got, want := SpamOfAggregate(Aggregate(ev), withReason), Spam(ev, withReason); got != want {
				t.Fatalf("SpamOfAggregate(withReason %v) = %q, want %q", withReason, got, want)
			}
		}
		if Join(EventPrefix, fields...) == Join(AggregatePrefix, fields...) {
			t.Fatal("prefixes do not separate keys")
		}
	})
}

func BenchmarkEvent(b *testing.B) {
	ev := &v1.Event{
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "pod-0", UID: "0b5c3a52-5d0e-4a8e-9f4e-0a1b2c3d4e5f", APIVersion: "v1"},
		Source:         v1.EventSource{Component: "controller", Host: "node-1"},
		Type:           "Normal", Reason: "Started", Message: "Started container app",
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = Event(ev)
	}
}

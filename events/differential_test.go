package events_test

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	cgevents "k8s.io/client-go/tools/events"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// emission is one AnnotatedEventf call.
type emission struct {
	regarding, related        runtime.Object
	ann                       map[string]string
	typ, reason, action, note string
}

// occurrenceKey is client-go's series key for the emissions of a test (the
// objects carry their resourceVersion in it).
func (e emission) key() string {
	return fmt.Sprintf("%s|%s|%s|%s|%s", objKey(e.regarding), objKey(e.related), e.typ, e.reason, e.action)
}

func objKey(o runtime.Object) string {
	if o == nil {
		return ""
	}
	switch x := o.(type) {
	case *v1.Pod:
		return "Pod/" + x.Namespace + "/" + x.Name + "@" + x.ResourceVersion
	case *v1.Node:
		return "Node/" + x.Name + "@" + x.ResourceVersion
	case *v1.ConfigMap:
		return "ConfigMap/" + x.Namespace + "/" + x.Name + "@" + x.ResourceVersion
	}
	return fmt.Sprintf("%T", o)
}

// storedEvent is what the differential test compares.
type storedEvent struct {
	Namespace                              string
	Regarding                              v1.ObjectReference
	Related                                *v1.ObjectReference
	Type, Reason, Action, Note             string
	ReportingController, ReportingInstance string
	Annotations                            map[string]string
	Count                                  int32 // 0 without a series
}

var eventName = regexp.MustCompile(`^(.*)\.[0-9a-f]+$`)

func toStored(t *testing.T, who string, evs []eventsv1.Event) []storedEvent {
	t.Helper()
	out := make([]storedEvent, 0, len(evs))
	for _, e := range evs {
		m := eventName.FindStringSubmatch(e.Name)
		if m == nil || m[1] != e.Regarding.Name {
			t.Errorf("%s: event name %q is not <regarding name>.<hex> (regarding %q)", who, e.Name, e.Regarding.Name)
		}
		if e.EventTime.IsZero() {
			t.Errorf("%s: %s has no eventTime", who, e.Name)
		}
		s := storedEvent{
			Namespace: e.Namespace, Regarding: e.Regarding, Related: e.Related,
			Type: e.Type, Reason: e.Reason, Action: e.Action, Note: e.Note,
			ReportingController: e.ReportingController, ReportingInstance: e.ReportingInstance,
			Annotations: e.Annotations,
		}
		if e.Series != nil {
			s.Count = e.Series.Count
			if e.Series.LastObservedTime.IsZero() {
				t.Errorf("%s: %s has a series without lastObservedTime", who, e.Name)
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i]) < fmt.Sprint(out[j]) })
	return out
}

// clientGoRun records the emissions with client-go's tools/events and
// returns what its sink stored. It waits for each write client-go makes
// (occurrences 1 and 2 of a key) before the next emission, so that the
// "first" occurrence is the first emitted, as in herald.
func clientGoRun(t *testing.T, controller string, ems []emission) []eventsv1.Event {
	t.Helper()
	cs := fake.NewClientset()
	var writes atomic.Int64
	cs.PrependReactor("*", "events", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if v := a.GetVerb(); v == "create" || v == "patch" {
			// Counted when the write starts: client-go has updated its
			// cache by then, which is all the next emission needs.
			writes.Add(1)
		}
		return false, nil, nil
	})
	b := cgevents.NewBroadcaster(&cgevents.EventSinkImpl{Interface: cs.EventsV1()})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { b.Shutdown(); cancel() }()
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	r := b.NewRecorder(scheme.Scheme, controller)
	// client-go has AnnotatedEventf from v0.37 on; herald builds with older
	// client-go too (annotated.go), whose recorder has Eventf only.
	// Without it, the emissions go through Eventf and each stored event
	// gets the annotations of its first emission, as client-go v0.37's
	// AnnotatedEventf stores them (make compat runs this test against
	// client-go v0.37 itself, so the two stay the same).
	ar, annotated := r.(events.AnnotatedEventRecorder)
	firstAnn := map[string]map[string]string{}
	seen := map[string]int{}
	var want int64
	for _, e := range ems {
		seen[e.key()]++
		if annotated {
			ar.AnnotatedEventf(e.regarding, e.related, e.ann, e.typ, e.reason, e.action, e.note)
		} else {
			r.Eventf(e.regarding, e.related, e.typ, e.reason, e.action, e.note)
			if k := storedKey(objName(e.regarding), e.typ, e.reason, e.action); firstAnn[k] == nil && e.ann != nil {
				firstAnn[k] = e.ann
			}
		}
		if seen[e.key()] <= 2 {
			want++
			check.Eventually(t, fmt.Sprintf("client-go write %d", want), func() error {
				n := writes.Load()
				return check.Errorf(n >= want, "%d writes started", n)
			})
		}
	}
	// The reactor counts a write when it starts; wait until the tracker
	// shows every write too: the stored objects and series.
	var out []eventsv1.Event
	check.Eventually(t, "client-go's stored events", func() error {
		l, err := cs.EventsV1().Events("").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		series := 0
		for _, e := range l.Items {
			if e.Series != nil {
				series++
			}
		}
		wantSeries := 0
		for _, n := range seen {
			if n >= 2 {
				wantSeries++
			}
		}
		out = l.Items
		return check.Errorf(len(l.Items) == len(seen) && series == wantSeries,
			"%d events stored, %d of them series; want %d and %d", len(l.Items), series, len(seen), wantSeries)
	})
	for i := range out {
		if a := firstAnn[storedKey(out[i].Regarding.Name, out[i].Type, out[i].Reason, out[i].Action)]; a != nil {
			out[i].Annotations = maps.Clone(a)
		}
	}
	return out
}

// storedKey identifies a stored event of these tests by what it keeps of
// its emissions.
func storedKey(regarding, typ, reason, action string) string {
	return regarding + "|" + typ + "|" + reason + "|" + action
}

func objName(o runtime.Object) string {
	if m, err := meta.Accessor(o); err == nil {
		return m.GetName()
	}
	return ""
}

// heraldRun records the emissions with herald and returns what its sink
// (the same fake clientset) stored after Flush, and the stats.
func heraldRun(t *testing.T, controller string, ems []emission) ([]eventsv1.Event, events.Stats) {
	t.Helper()
	cs := fake.NewClientset()
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()}, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited})))
	defer b.Shutdown()
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := b.NewRecorder(scheme.Scheme, controller).(events.AnnotatedEventRecorder)
	for _, e := range ems {
		r.AnnotatedEventf(e.regarding, e.related, e.ann, e.typ, e.reason, e.action, e.note)
	}
	flush(t, b)
	st := b.Stats()
	check.Settled(t, st)
	return listEvents(t, cs), st
}

func rv(p *v1.Pod, rv string) *v1.Pod { c := p.DeepCopy(); c.ResourceVersion = rv; return c }

func TestDifferentialClientGo(t *testing.T) {
	pa := rv(pod("ns", "a"), "10")
	pb := rv(pod("ns2", "b"), "3")
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "n-uid", ResourceVersion: "7"}}
	cm := &v1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	N, W := v1.EventTypeNormal, v1.EventTypeWarning
	rep := func(n int, e emission) []emission {
		out := make([]emission, n)
		for i := range out {
			out[i] = e
		}
		return out
	}
	cases := []struct {
		name string
		ems  []emission
	}{
		{"singles", []emission{
			{regarding: pa, typ: N, reason: "Started", action: "Start", note: "started a"},
			{regarding: pb, typ: W, reason: "Failed", action: "Sync", note: "failed b"},
			{regarding: cm, typ: N, reason: "Updated", action: "Update", note: "cm"},
			{regarding: node, typ: W, reason: "NotReady", action: "Check", note: "node"},
		}},
		{"series", rep(5, emission{regarding: pa, typ: W, reason: "BackOff", action: "Restart", note: "back-off"})},
		{"two series", append(rep(3, emission{regarding: pa, typ: W, reason: "R1", action: "A", note: "x"}),
			rep(4, emission{regarding: pb, typ: W, reason: "R1", action: "A", note: "y"})...)},
		{"note differs", []emission{
			{regarding: pa, typ: N, reason: "R", action: "A", note: "note 1"},
			{regarding: pa, typ: N, reason: "R", action: "A", note: "note 2"},
			{regarding: pa, typ: N, reason: "R", action: "A", note: "note 3"},
		}},
		{"action related rv differ", []emission{
			{regarding: pa, typ: N, reason: "R", action: "A1", note: "n"},
			{regarding: pa, typ: N, reason: "R", action: "A2", note: "n"},
			{regarding: pa, related: node, typ: N, reason: "R", action: "A1", note: "n"},
			{regarding: pa, related: cm, typ: N, reason: "R", action: "A1", note: "n"},
			{regarding: rv(pa, "11"), typ: N, reason: "R", action: "A1", note: "n"},
			{regarding: pa, typ: W, reason: "R", action: "A1", note: "n"},
			{regarding: pa, typ: N, reason: "R", action: "A1", note: "n"},
		}},
		{"cluster scoped", rep(2, emission{regarding: node, typ: N, reason: "R", action: "A", note: "n"})},
		{"annotations", []emission{
			{regarding: pa, ann: map[string]string{"example.com/a": "1"}, typ: N, reason: "R", action: "A", note: "n"},
			{regarding: pa, ann: map[string]string{"example.com/a": "2"}, typ: N, reason: "R", action: "A", note: "n"},
			{regarding: pb, ann: map[string]string{"example.com/b": "x", "c": "y"}, typ: N, reason: "R", action: "A", note: "n"},
		}},
	}
	const ctl = "example.com/differential"
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cg := toStored(t, "client-go", clientGoRun(t, ctl, c.ems))
			hevs, st := heraldRun(t, ctl, c.ems)
			h := toStored(t, "herald", hevs)
			// herald writes the current count; client-go's stays at 2
			// until its 30-minute refresh.
			occ := map[string]int32{}
			for _, e := range c.ems {
				occ[e.key()]++
			}
			hc := make([]storedEvent, len(h))
			for i, e := range h {
				hc[i] = e
				if e.Count > 2 {
					hc[i].Count = 2
				}
			}
			if d := cmp.Diff(cg, hc); d != "" {
				t.Errorf("client-go (-) and herald (+) differ:\n%s", d)
			}
			var total int32
			for _, e := range h {
				if e.Count == 0 {
					total++
				} else {
					total += e.Count
				}
			}
			if int(total) != len(c.ems) || len(h) != len(occ) {
				t.Errorf("herald: %d events with %d occurrences; want %d events, %d occurrences", len(h), total, len(occ), len(c.ems))
			}
			if st.Recorded != int64(len(c.ems)) || st.Dropped.Total() != 0 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// Where herald deliberately differs: fields are cut to the server's limits
// (client-go sends them whole and the server refuses the event), and an
// event the server would refuse is dropped locally, counted.
func TestDifferentialDocumentedDifferences(t *testing.T) {
	const ctl = "example.com/differential"
	long := strings.Repeat("n", 2000)
	ems := []emission{
		{regarding: pod("ns", "a"), typ: v1.EventTypeNormal, reason: strings.Repeat("R", 200), action: strings.Repeat("A", 200), note: long},
		{regarding: pod("ns", "b"), typ: v1.EventTypeNormal, reason: "R", action: "", note: "no action"},
	}
	cg := clientGoRun(t, ctl, ems)
	if len(cg) != 2 {
		t.Fatalf("client-go stored %d events", len(cg))
	}
	h, st := heraldRun(t, ctl, ems)
	if len(h) != 1 || st.Dropped.Invalid != 1 || st.Created != 1 {
		t.Fatalf("herald stored %d, stats %+v", len(h), st)
	}
	e := h[0]
	if len(e.Note) != events.MaxNoteLength || len(e.Reason) != events.MaxReasonLength || len(e.Action) != events.MaxActionLength {
		t.Errorf("herald lengths: note %d reason %d action %d", len(e.Note), len(e.Reason), len(e.Action))
	}
	for _, c := range cg {
		if c.Regarding.Name == "a" && len(c.Note) != 2000 {
			t.Errorf("client-go note %d bytes", len(c.Note))
		}
	}
}

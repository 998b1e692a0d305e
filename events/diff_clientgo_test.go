package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/scheme"
	cgevents "k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/reference"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// ---------------------------------------------------------------------------
// The server: a sink that applies the API server's events.k8s.io/v1 create
// validation (k8s.io/kubernetes pkg/apis/core/validation/events.go) to what
// it receives as JSON (invalid UTF-8 becomes U+FFFD per byte, as
// encoding/json writes it), and logs every write.

type diffWrite struct {
	Verb  string // create, patch
	Name  string
	Body  string // the patch
	Count int32  // series count sent (create with series, or patch)
	Err   string
}

type diffServer struct {
	mu     sync.Mutex
	events map[string]*eventsv1.Event
	order  []string // names, in creation order
	writes []diffWrite
}

func newDiffServer() *diffServer { return &diffServer{events: map[string]*eventsv1.Event{}} }

// wire is what the server decodes of s (JSON).
func wire(s string) string {
	b, _ := json.Marshal(s)
	var out string
	_ = json.Unmarshal(b, &out)
	return out
}

func serverInvalid(e *eventsv1.Event) string {
	var errs []string
	add := func(c bool, m string) {
		if c {
			errs = append(errs, m)
		}
	}
	add(e.Namespace == "", "no namespace")
	add(len(validation.IsDNS1123Subdomain(e.Namespace)) > 0 && e.Namespace != "", "namespace")
	add(len(validation.IsDNS1123Subdomain(e.Name)) > 0, "name "+e.Name)
	add(e.Regarding.Namespace == "" && e.Namespace != "default" && e.Namespace != "kube-system", "regarding ns")
	add(e.ReportingController == "" || len(validation.IsQualifiedName(e.ReportingController)) > 0, "reportingController")
	add(e.ReportingInstance == "" || len(e.ReportingInstance) > 128, "reportingInstance")
	add(e.Action == "" || len(e.Action) > 128, "action")
	add(e.Reason == "" || len(e.Reason) > 128, "reason")
	add(len(e.Note) > 1024, "note")
	add(e.Type != "Normal" && e.Type != "Warning", "type")
	add(e.EventTime.IsZero(), "eventTime")
	add(e.Series != nil && (e.Series.Count < 2 || e.Series.LastObservedTime.IsZero()), "series")
	return strings.Join(errs, ",")
}

func (s *diffServer) Create(_ context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := ev.DeepCopy()
	c.Note, c.Reason, c.Action, c.ReportingInstance = wire(c.Note), wire(c.Reason), wire(c.Action), wire(c.ReportingInstance)
	w := diffWrite{Verb: "create", Name: ev.Name}
	if ev.Series != nil {
		w.Count = ev.Series.Count
	}
	if bad := serverInvalid(c); bad != "" {
		w.Err = "invalid: " + bad
		s.writes = append(s.writes, w)
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}, ev.Name, nil)
	}
	if _, ok := s.events[ev.Name]; ok {
		w.Err = "exists"
		s.writes = append(s.writes, w)
		return nil, alreadyExists(ev.Name)
	}
	s.writes = append(s.writes, w)
	c.ResourceVersion = fmt.Sprint(len(s.writes))
	s.events[ev.Name] = c
	s.order = append(s.order, ev.Name)
	return c.DeepCopy(), nil
}

func (s *diffServer) Update(context.Context, *eventsv1.Event) (*eventsv1.Event, error) {
	panic("Update called")
}

func (s *diffServer) Patch(_ context.Context, ev *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := diffWrite{Verb: "patch", Name: ev.Name, Body: string(data)}
	cur, ok := s.events[ev.Name]
	if !ok {
		w.Err = "notfound"
		s.writes = append(s.writes, w)
		return nil, notFound(ev.Name)
	}
	c := cur.DeepCopy()
	if err := applySeriesPatch(c, data); err != nil {
		w.Err = err.Error()
		s.writes = append(s.writes, w)
		return nil, err
	}
	w.Count = c.Series.Count
	s.writes = append(s.writes, w)
	c.ResourceVersion = fmt.Sprint(len(s.writes))
	s.events[ev.Name] = c
	return c.DeepCopy(), nil
}

// ---------------------------------------------------------------------------
// client-go's series state machine (tools/events event_broadcaster.go,
// recordToSink, recordEvent, finishSeries, refreshExistingEventSeries,
// createPatchBytesForSeries, getKey: v0.35.10 lines 126-310), transcribed
// with its clocks replaced by the fake clock: client-go reads
// clock.RealClock there, which a test cannot step. Its recorder is
// client-go's own (the events come from a client-go broadcaster's watcher).

type cgKey struct {
	eventType, action, reason, reportingController, reportingInstance string
	regarding, related                                                v1.ObjectReference
}

func cgGetKey(e *eventsv1.Event) cgKey {
	k := cgKey{eventType: e.Type, action: e.Action, reason: e.Reason, reportingController: e.ReportingController,
		reportingInstance: e.ReportingInstance, regarding: e.Regarding}
	if e.Related != nil {
		k.related = *e.Related
	}
	return k
}

type cgModel struct {
	cache map[cgKey]*eventsv1.Event
	sink  *diffServer
	clk   *clocktesting.FakeClock
}

const cgFinishTime = 6 * time.Minute

func (m *cgModel) recordToSink(event *eventsv1.Event) {
	eventCopy := event.DeepCopy()
	var evToRecord *eventsv1.Event
	key := cgGetKey(eventCopy)
	if iso, ok := m.cache[key]; ok {
		if iso.Series != nil {
			iso.Series.Count++
			iso.Series.LastObservedTime = metav1.MicroTime{Time: m.clk.Now()}
		} else {
			iso.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.MicroTime{Time: m.clk.Now()}}
			evToRecord = iso.DeepCopy()
		}
	} else {
		m.cache[key] = eventCopy
		evToRecord = eventCopy.DeepCopy()
	}
	if evToRecord != nil {
		m.recordEvent(evToRecord) // the sink never asks for a retry here
	}
}

func (m *cgModel) recordEvent(event *eventsv1.Event) (*eventsv1.Event, bool) {
	var newEvent *eventsv1.Event
	var err error
	isSeries := event.Series != nil
	if isSeries {
		old := event.DeepCopy()
		old.Series = nil
		oldData, _ := json.Marshal(old)
		newData, _ := json.Marshal(event)
		patch, perr := strategicpatch.CreateTwoWayMergePatch(oldData, newData, eventsv1.Event{})
		if perr != nil {
			panic(perr)
		}
		newEvent, err = m.sink.Patch(context.Background(), event, patch)
	}
	if !isSeries || apierrors.IsNotFound(err) {
		event.ResourceVersion = ""
		newEvent, err = m.sink.Create(context.Background(), event)
	}
	if err == nil {
		return newEvent, false
	}
	if apierrors.IsAlreadyExists(err) && isSeries {
		return nil, true
	}
	return nil, false
}

// finishSeries is client-go's, run at "now" (a tick of its 6-minute loop).
func (m *cgModel) finishSeries() {
	now := m.clk.Now()
	for k, event := range m.cache {
		if event.Series != nil {
			if event.Series.LastObservedTime.Time.Before(now.Add(-cgFinishTime)) {
				if _, retry := m.recordEvent(event); !retry {
					delete(m.cache, k)
				}
			}
		} else if event.EventTime.Time.Before(now.Add(-cgFinishTime)) {
			delete(m.cache, k)
		}
	}
}

func (m *cgModel) refresh() {
	for k, event := range m.cache {
		if event.Series != nil {
			if rec, retry := m.recordEvent(event); !retry && rec != nil {
				m.cache[k] = rec
			}
		}
	}
}

// ---------------------------------------------------------------------------
// The inputs.

// unregistered is an object whose kind no scheme knows.
type unregistered struct {
	metav1.TypeMeta
	metav1.ObjectMeta
}

func (u *unregistered) DeepCopyObject() runtime.Object {
	c := *u
	u.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func diffObjects() []runtime.Object {
	p := func(ns, name, rv string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("u-" + name), ResourceVersion: rv}}
	}
	return []runtime.Object{
		p("ns", "a", "10"),
		p("ns", "a", "11"), // the same pod at another resourceVersion
		p("ns2", "b", ""),
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "n-uid", ResourceVersion: "7"}},
		&v1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}},
		&v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "a", UID: "u-a", FieldPath: "spec.containers{c}"},
		&v1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: "node-2"},
		&unregistered{TypeMeta: metav1.TypeMeta{Kind: "Widget", APIVersion: "example.com/v1"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w"}},
		&unregistered{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nokind"}}, // no kind: no reference
		nil,
		p("ns", strings.Repeat("x", 245), "1"), // name.<hex> longer than 253
		p("ns", "Upper_Case", "1"),
		&v1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "kind-only"}},
		&v1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "version-only"}},
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": map[string]any{"name": "g", "namespace": "ns", "uid": "g-uid"}}},
		&unstructured.Unstructured{Object: map[string]any{"kind": "Gadget", "metadata": map[string]any{"name": "g2", "namespace": "ns"}}},
		&v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}},
		&v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "Bad_NS", Name: "x"},
		&v1.ObjectReference{},
	}
}

var (
	diffTypes   = []string{v1.EventTypeNormal, v1.EventTypeWarning, v1.EventTypeWarning, "Info"}
	diffReasons = []string{"Started", "BackOff", "BackOff", strings.Repeat("R", 127) + "é", "R\xff"}
	diffActions = []string{"Start", "Restart", strings.Repeat("A", 129)}
	diffNotes   = []string{"", "plain", "count %d of %s", "100% done", "%v%v%v", strings.Repeat("n", 1023) + "é",
		strings.Repeat("é", 700), "bad \xff\xfe utf8", strings.Repeat("\xff", 400)}
	diffSteps = []time.Duration{0, time.Millisecond, time.Second, time.Minute, cgFinishTime - time.Second, cgFinishTime,
		cgFinishTime + time.Microsecond, 13 * time.Minute, 31 * time.Minute}
)

type diffOp struct {
	stepOp                    bool          // a clock step instead of an Eventf
	step                      time.Duration // the step
	reg, rel                  int           // rel < 0: none
	typ, reason, action, note int
	args                      bool
}

func (o diffOp) String() string {
	if o.stepOp {
		return fmt.Sprintf("step %v", o.step)
	}
	return fmt.Sprintf("Eventf(reg %d, rel %d, %q, reason %d, action %d, note %d, args %v)", o.reg, o.rel, diffTypes[o.typ], o.reason, o.action, o.note, o.args)
}

func randomOps(rng *rand.Rand, n int) []diffOp {
	nobj := len(diffObjects())
	ops := make([]diffOp, 0, n)
	for range n {
		if rng.IntN(4) == 0 {
			ops = append(ops, diffOp{stepOp: true, step: diffSteps[rng.IntN(len(diffSteps))]})
			continue
		}
		o := diffOp{reg: rng.IntN(nobj), rel: rng.IntN(nobj+3) - 3, typ: rng.IntN(len(diffTypes)),
			reason: rng.IntN(len(diffReasons)), action: rng.IntN(len(diffActions)), note: rng.IntN(len(diffNotes)), args: rng.IntN(2) == 0}
		// Mostly a few keys, so that series form.
		if rng.IntN(3) != 0 {
			o.reg, o.rel, o.typ, o.reason, o.action = 0, -1, 1, 1, 1
			if rng.IntN(2) == 0 {
				o.reg = 3
			}
		}
		ops = append(ops, o)
	}
	return ops
}

// ---------------------------------------------------------------------------
// herald's documented differences (docs/events-v1.md, docs/options.md),
// applied to client-go's event: the note made valid UTF-8 and cut to 1024
// bytes as the server counts them, reason, action and reporting instance
// cut to 128; an event with an empty reason or action, a reporting
// controller that is not a qualified name or a regarding namespace that is
// not a DNS-1123 label is refused at Eventf.

func cutValid(s string, limit int) string {
	// Valid UTF-8, each run of invalid bytes one U+FFFD (herald's rule,
	// docs/options.md; from client-go's JSON the server would store one
	// U+FFFD per invalid byte).
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= limit {
		return s
	}
	s = s[:limit]
	for len(s) > 0 && !utf8ValidEnd(s) {
		s = s[:len(s)-1]
	}
	return s
}

func utf8ValidEnd(s string) bool { return strings.ToValidUTF8(s, "") == s }

func documented(e *eventsv1.Event) (*eventsv1.Event, bool) {
	if e.Reason == "" || e.Action == "" || len(validation.IsQualifiedName(e.ReportingController)) > 0 {
		return nil, false
	}
	if ns := e.Regarding.Namespace; ns != "" && len(validation.IsDNS1123Label(ns)) > 0 {
		return nil, false // docs/options.md, Valid events: refused
	}
	c := e.DeepCopy()
	if c.Related != nil && c.Related.Namespace != "" && len(validation.IsDNS1123Label(c.Related.Namespace)) > 0 {
		c.Related = nil // herald leaves it out (docs/events-v1.md)
	}
	c.Note = cutValid(c.Note, 1024)
	c.Reason = cutValid(c.Reason, 128)
	c.Action = cutValid(c.Action, 128)
	c.ReportingInstance = cutValid(c.ReportingInstance, 128)
	return c, true
}

// ---------------------------------------------------------------------------
// The comparison.

var (
	hexName  = regexp.MustCompile(`^(.*)\.([0-9a-f]+)$`)
	uuidName = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// diffControllers are the reporting controllers of the runs: valid, not
// qualified names (herald refuses every event, the server every one of
// client-go's), and one whose reporting instance is over 128 bytes.
var diffControllers = []string{"example.com/diff", "kubelet", "Bad Controller!", "",
	strings.Repeat("s", 100) + ".example.com/" + strings.Repeat("c", 63)}

// diffRun runs ops through client-go (its recorder, then the transcribed
// series machine) and herald, and returns the differences found. With
// interval NoSeriesInterval herald is flushed after each call; with 0 (the
// default interval) only before each clock step.
func diffRun(t *testing.T, ctl string, interval time.Duration, ops []diffOp) []string {
	t.Helper()
	t0 := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	objs := diffObjects()

	// client-go.
	cgClk := clocktesting.NewFakeClock(t0)
	cgSrv := newDiffServer()
	model := &cgModel{cache: map[cgKey]*eventsv1.Event{}, sink: cgSrv, clk: cgClk}
	cgb := cgevents.NewBroadcaster(&cgevents.EventSinkImpl{})
	defer cgb.Shutdown()
	got := make(chan *eventsv1.Event, 16)
	stop, err := cgb.StartEventWatcher(func(o runtime.Object) { got <- o.(*eventsv1.Event).DeepCopy() })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cgr := cgb.NewRecorder(scheme.Scheme, ctl).WithLogger(klog.Logger{})
	model.refresh() // client-go's loops run once at the start
	model.finishSeries()
	lastRefresh := t0

	// herald.
	hClk := clocktesting.NewFakeClock(t0)
	hSrv := newDiffServer()
	hb := events.NewBroadcaster(hSrv, events.WithSeriesInterval(interval),
		events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{Clock: hClk, QPS: sink.Unlimited}), record.WithLogger(klog.Logger{})))
	defer hb.Shutdown()
	if err := hb.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	hr := hb.NewRecorder(scheme.Scheme, ctl).WithLogger(klog.Logger{})
	// What each broadcaster's watchers see: every event, before series.
	var hwMu sync.Mutex
	var hWatched, cgWatched []*eventsv1.Event
	hstop, err := hb.StartEventWatcher(func(o runtime.Object) {
		hwMu.Lock()
		hWatched = append(hWatched, o.(*eventsv1.Event))
		hwMu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer hstop()

	var diffs []string
	emitted := 0
	invalid := 0
	for i, op := range ops {
		if op.stepOp {
			if interval == 0 {
				flush(t, hb)
			}
			cgClk.Step(op.step)
			hClk.Step(op.step)
			// A tick of client-go's finish loop now (the phase most
			// favourable to herald's exact 6 minutes), and its refresh
			// every 30 minutes.
			if cgClk.Since(lastRefresh) >= 30*time.Minute {
				model.refresh()
				lastRefresh = cgClk.Now()
			}
			model.finishSeries()
			continue
		}
		reg := objs[op.reg]
		var rel runtime.Object
		if op.rel >= 0 {
			rel = objs[op.rel]
		}
		typ, reason, action, note := diffTypes[op.typ], diffReasons[op.reason], diffActions[op.action], diffNotes[op.note]
		var args []any
		if op.args {
			args = []any{3, "x"}
		}
		emitted++
		// Does client-go's recorder emit it? (a reference and a valid type)
		_, refErr := reference.GetReference(scheme.Scheme, reg)
		cgEmits := reg != nil && refErr == nil && (typ == "Normal" || typ == "Warning")
		cgr.Eventf(reg, rel, typ, reason, action, note, args...)
		if cgEmits {
			select {
			case e := <-got:
				e.EventTime = metav1.NewMicroTime(cgClk.Now()) // client-go reads time.Now()
				if d, ok := documented(e); ok {
					cgWatched = append(cgWatched, d.DeepCopy())
					model.recordToSink(d)
				} else {
					invalid++
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("op %d %v: client-go emitted nothing", i, op)
			}
		} else {
			invalid++
		}
		hr.Eventf(reg, rel, typ, reason, action, note, args...)
		if interval != 0 {
			flush(t, hb) // herald correlates at this clock reading
		}
	}
	// The end: client-go finishes every series (final counts), herald
	// flushes.
	if interval == 0 {
		flush(t, hb)
	}
	cgClk.Step(13 * time.Minute)
	model.finishSeries()
	model.finishSeries()
	flushStepping(t, hb, hClk)
	st := hb.Stats()
	check.Settled(t, st)
	if st.Recorded != int64(emitted) || st.Dropped.Invalid != int64(invalid) || st.Dropped.Total() != int64(invalid) {
		diffs = append(diffs, fmt.Sprintf("herald stats: recorded %d (want %d), invalid %d (want %d), dropped %d", st.Recorded, emitted, st.Dropped.Invalid, invalid, st.Dropped.Total()))
	}

	// The watchers saw the same events, in the same order.
	hwMu.Lock()
	if len(hWatched) != len(cgWatched) {
		diffs = append(diffs, fmt.Sprintf("watchers saw %d events (herald) vs %d (client-go)", len(hWatched), len(cgWatched)))
	} else {
		for i := range hWatched {
			h, c := jsonRound(hWatched[i]), jsonRound(cgWatched[i])
			if hexName.FindStringSubmatch(h.Name) == nil && len(validation.IsDNS1123Subdomain(h.Name)) > 0 {
				diffs = append(diffs, fmt.Sprintf("watched event %d: name %q", i, h.Name))
			}
			h.Name, c.Name = "", ""
			if !reflect.DeepEqual(h, c) {
				diffs = append(diffs, fmt.Sprintf("watched event %d differs:\nherald    %+v\nclient-go %+v", i, h, c))
			}
		}
	}
	hwMu.Unlock()

	// Every write herald stored was accepted; client-go's too (after the
	// documented differences).
	for _, w := range hSrv.writes {
		if w.Err != "" {
			diffs = append(diffs, fmt.Sprintf("herald write refused: %+v", w))
		}
	}
	for _, w := range cgSrv.writes {
		if w.Err != "" {
			diffs = append(diffs, fmt.Sprintf("client-go write refused: %+v", w))
		}
	}
	// The stored events, in creation order.
	if len(hSrv.order) != len(cgSrv.order) {
		diffs = append(diffs, fmt.Sprintf("stored %d events (herald) vs %d (client-go)", len(hSrv.order), len(cgSrv.order)))
		return diffs
	}
	// Match the events by content (herald's workers may create them in
	// another order).
	byContent := func(srv *diffServer) {
		sort.SliceStable(srv.order, func(i, j int) bool {
			a, b := srv.events[srv.order[i]].DeepCopy(), srv.events[srv.order[j]].DeepCopy()
			a.Name, a.ResourceVersion, a.Series, b.Name, b.ResourceVersion, b.Series = "", "", nil, "", "", nil
			return a.String() < b.String()
		})
	}
	byContent(hSrv)
	byContent(cgSrv)
	hWrites, cgWrites := map[string][]diffWrite{}, map[string][]diffWrite{}
	for _, w := range hSrv.writes {
		hWrites[w.Name] = append(hWrites[w.Name], w)
	}
	for _, w := range cgSrv.writes {
		cgWrites[w.Name] = append(cgWrites[w.Name], w)
	}
	for i := range hSrv.order {
		h, c := hSrv.events[hSrv.order[i]], cgSrv.events[cgSrv.order[i]]
		// Names: "<regarding name>.<hex>"; client-go a UUID when that is
		// not a valid name, herald a cleaned-up name (docs/options.md).
		if m := hexName.FindStringSubmatch(c.Name); m != nil {
			if hm := hexName.FindStringSubmatch(h.Name); hm == nil || hm[1] != m[1] {
				diffs = append(diffs, fmt.Sprintf("event %d: name %q vs client-go %q", i, h.Name, c.Name))
			}
		} else if !uuidName.MatchString(c.Name) {
			diffs = append(diffs, fmt.Sprintf("event %d: client-go name %q", i, c.Name))
		} else if len(validation.IsDNS1123Subdomain(h.Name)) > 0 {
			diffs = append(diffs, fmt.Sprintf("event %d: herald name %q invalid", i, h.Name))
		}
		hc, cc := h.DeepCopy(), c.DeepCopy()
		for _, e := range []*eventsv1.Event{hc, cc} {
			e.Name, e.ResourceVersion = "", ""
		}
		if !reflect.DeepEqual(jsonRound(hc), jsonRound(cc)) {
			diffs = append(diffs, fmt.Sprintf("event %d differs:\nherald    %+v\nclient-go %+v", i, hc, cc))
		}
		// client-go's writes of this event (create, patch 2, refresh and
		// final counts) are among herald's, with the same bodies.
		hw := hWrites[h.Name]
		for _, w := range cgWrites[c.Name] {
			if interval == 0 {
				break // herald folds counts into fewer writes
			}
			found := false
			for _, x := range hw {
				if x.Verb == w.Verb && x.Count == w.Count && x.Body == w.Body {
					found = true
					break
				}
			}
			if !found {
				diffs = append(diffs, fmt.Sprintf("event %d: client-go's write %+v not among herald's %+v", i, w, hw))
			}
		}
	}
	return diffs
}

// jsonRound is e as the server would return it.
func jsonRound(e *eventsv1.Event) *eventsv1.Event {
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	out := &eventsv1.Event{}
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	return out
}

// TestDifferentialRandomClientGo runs random sequences of Eventf calls and
// clock steps through client-go's tools/events and herald's events, and
// compares what their watchers see and what the server stores (see
// diffRun). With NoSeriesInterval herald is flushed after each call, and
// every write client-go makes (create, patch of count 2, refresh and final
// counts) must be among herald's with the same body; at the default series
// interval herald folds counts, and the stored events must still be equal.
func TestDifferentialRandomClientGo(t *testing.T) {
	for _, c := range []struct {
		name     string
		interval time.Duration
		n        int
	}{{"every write", events.NoSeriesInterval, 120}, {"series interval", 0, 60}} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 11))
			for i := range c.n {
				ops := randomOps(rng, 5+rng.IntN(40))
				ctl := diffControllers[rng.IntN(len(diffControllers))]
				if d := diffRun(t, ctl, c.interval, ops); len(d) > 0 {
					var b strings.Builder
					for _, op := range ops {
						fmt.Fprintf(&b, "  %v\n", op)
					}
					t.Fatalf("sequence %d, controller %q:\n%s\ndifferences:\n%s", i, ctl, b.String(), strings.Join(d, "\n"))
				}
			}
		})
	}
}

// FuzzDifferentialRandomClientGo is TestDifferentialRandomClientGo with
// the sequence's seed, length and series interval from the fuzzer.
func FuzzDifferentialRandomClientGo(f *testing.F) {
	f.Add(uint64(1), uint8(20), false)
	f.Add(uint64(2), uint8(40), true)
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, interval bool) {
		rng := rand.New(rand.NewPCG(seed, 11))
		ops := randomOps(rng, int(n%60))
		ctl := diffControllers[rng.IntN(len(diffControllers))]
		iv := events.NoSeriesInterval
		if interval {
			iv = 0
		}
		if d := diffRun(t, ctl, iv, ops); len(d) > 0 {
			t.Fatalf("controller %q, ops %v:\n%s", ctl, ops, strings.Join(d, "\n"))
		}
	})
}

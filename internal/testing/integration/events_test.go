package integration

// Integration tests of herald's events package (events.k8s.io/v1) against
// the package's real kube-apiserver: what a user sees with kubectl, exact
// series counts, and client-go's sink given to herald's broadcaster. The
// other events_*_test.go files cover RBAC, shutdown, an API server restart
// and the adapter.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	cgevents "k8s.io/client-go/tools/events"
	"k8s.io/klog/v2/ktesting"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// evController is the reportingController of the events package's
// recorders in this package (a qualified name, as the API server requires).
const evController = "example.com/herald-it"

// evInstance is the reportingInstance herald's recorders give evController.
func evInstance(t *testing.T) string {
	t.Helper()
	host, err := os.Hostname()
	if err != nil {
		t.Fatalf("hostname: %v", err)
	}
	return evController + "-" + host
}

// evHarness is one events.k8s.io/v1 broadcaster recording to one sink,
// with its logs captured.
type evHarness struct {
	t    *testing.T
	eb   events.EventBroadcaster
	rec  events.EventRecorderLogger
	logs ktesting.Buffer
}

// newEvHarness starts an events broadcaster (shut down when t ends)
// recording to s. Its logs go to t.Log and to a buffer.
func newEvHarness(t *testing.T, s events.EventSink, opts ...events.Option) *evHarness {
	t.Helper()
	logger, logs := bufferedLogger(t)
	h := &evHarness{t: t, logs: logs}
	h.eb = events.NewBroadcaster(s, append([]events.Option{events.WithBroadcasterOptions(record.WithLogger(logger))}, opts...)...)
	// Registered after the logger's own cleanup, so it runs before it.
	t.Cleanup(h.eb.Shutdown)
	if err := h.eb.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatalf("StartRecordingToSinkWithContext: %v", err)
	}
	h.rec = h.eb.NewRecorder(scheme.Scheme, evController)
	return h
}

// flush waits (at most d) until everything recorded so far has been
// handled, checks the Stats accounting and returns the Stats.
func (h *evHarness) flush(d time.Duration) record.Stats { return flushChecked(h.t, h.eb, d) }

// asHarness lets the core/v1 log helpers (checkDropLog) read h's logs.
func (h *evHarness) asHarness() *harness { return &harness{t: h.t, logs: h.logs} }

// evSink is herald's events.k8s.io/v1 sink for cfg.
func evSink(t *testing.T, cfg *rest.Config) events.EventSink {
	t.Helper()
	return &events.EventSinkImpl{Interface: newClientset(t, cfg).EventsV1()}
}

// listV1 returns every events.k8s.io/v1 Event in namespace matching opts
// (all pages).
func listV1(ctx context.Context, cs kubernetes.Interface, namespace string, opts metav1.ListOptions) ([]eventsv1.Event, error) {
	return listPaged(ctx, opts, func(ctx context.Context, opts metav1.ListOptions) ([]eventsv1.Event, string, error) {
		l, err := cs.EventsV1().Events(namespace).List(ctx, opts)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	})
}

// waitV1 polls the API server (bounded by pollTimeout) until the
// events.k8s.io/v1 Events of namespace matching opts pass check, and returns
// them. It fails t with check's last complaint otherwise.
func waitV1(t *testing.T, cs kubernetes.Interface, namespace string, opts metav1.ListOptions, check func([]eventsv1.Event) error) []eventsv1.Event {
	t.Helper()
	return waitList(t, fmt.Sprintf("events.k8s.io/v1 events in %q (%+v)", namespace, opts),
		func(ctx context.Context) ([]eventsv1.Event, error) { return listV1(ctx, cs, namespace, opts) }, check, describeV1)
}

// occurrences is how many occurrences an events.k8s.io/v1 Event stands for.
func occurrences(e eventsv1.Event) int32 {
	if e.Series == nil {
		return 1
	}
	return e.Series.Count
}

// seriesKeyOf names an event in the checks: the regarding object's name,
// and the action unless it is the default one of these tests.
func seriesKeyOf(e eventsv1.Event) string {
	if e.Action == "" || e.Action == defaultAction {
		return e.Regarding.Name
	}
	return e.Regarding.Name + "/" + e.Action
}

// defaultAction is the action of most events recorded in these tests.
const defaultAction = "Sync"

// countV1 checks that there is exactly one event per key in want (see
// seriesKeyOf) standing for the number of occurrences given there, without
// a series for a single occurrence and with a valid one (count >= 2,
// lastObservedTime set) otherwise, and no other event.
func countV1(want map[string]int32) func([]eventsv1.Event) error {
	return func(evs []eventsv1.Event) error {
		got := map[string][]eventsv1.Event{}
		for _, e := range evs {
			k := seriesKeyOf(e)
			got[k] = append(got[k], e)
		}
		for k, n := range want {
			es := got[k]
			if len(es) != 1 {
				return fmt.Errorf("%s: %d events, want 1", k, len(es))
			}
			e := es[0]
			switch {
			case occurrences(e) != n:
				return fmt.Errorf("%s: %d occurrences (series %+v), want %d", k, occurrences(e), e.Series, n)
			case n == 1 && e.Series != nil:
				return fmt.Errorf("%s: a single occurrence with series %+v", k, e.Series)
			case n > 1 && e.Series.LastObservedTime.IsZero():
				return fmt.Errorf("%s: series %+v without lastObservedTime", k, e.Series)
			}
		}
		for k, es := range got {
			if _, ok := want[k]; !ok {
				return fmt.Errorf("unexpected events %s: %d of them", k, len(es))
			}
		}
		return nil
	}
}

func describeV1(evs []eventsv1.Event) string {
	var b strings.Builder
	for i, e := range evs {
		if i == 20 {
			fmt.Fprintf(&b, "  ... %d more\n", len(evs)-i)
			break
		}
		fmt.Fprintf(&b, "  %s/%s regarding=%s/%s action=%s reason=%s occurrences=%d note=%.80q\n",
			e.Namespace, e.Name, e.Regarding.Kind, e.Regarding.Name, e.Action, e.Reason, occurrences(e), e.Note)
	}
	return b.String()
}

// TestEventsV1Fields records events.k8s.io/v1 events about a Pod (with a
// related ConfigMap), a cluster-scoped Node and Namespace, and an object
// known only by an ObjectReference, and checks every field the API server
// stores (as client-go's events recorder writes them), and what `kubectl
// events` and `kubectl get events.events.k8s.io -o json` show.
func TestEventsV1Fields(t *testing.T) {
	ctx := t.Context()
	cs := adminClient(t)
	ns := env.CreateNamespace(t, "ev-fields")
	instance := evInstance(t)

	pod, cm, node := createFieldObjects(t, cs, ns, "herald-it-evnode-")
	nsObj, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting the namespace: %v", err)
	}
	widget := &v1.ObjectReference{
		Kind: "Widget", APIVersion: "widgets.example.com/v1", Namespace: ns, Name: "gadget-7",
		UID: types.UID("uid-gadget-7-" + randSuffix()), ResourceVersion: "42", FieldPath: "spec.parts[0]",
	}
	cmRef := &v1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: ns, Name: cm.Name, UID: cm.UID, ResourceVersion: cm.ResourceVersion}

	cases := []struct {
		name    string
		obj     runtime.Object
		related runtime.Object
		eventNS string
		ref     v1.ObjectReference
		relRef  *v1.ObjectReference
		typ     string
		reason  string
		action  string
		note    string
	}{
		{
			name: "pod with related configmap", obj: pod, related: cm, eventNS: ns,
			ref:    v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion},
			relRef: cmRef,
			typ:    v1.EventTypeNormal, reason: "Scheduled", action: "Binding", note: "Successfully assigned " + ns + "/web-0 to nowhere",
		},
		{
			name: "node (cluster-scoped)", obj: node, eventNS: metav1.NamespaceDefault,
			ref: v1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: node.Name, UID: node.UID, ResourceVersion: node.ResourceVersion},
			typ: v1.EventTypeWarning, reason: "NodeNotReady", action: "Probe", note: "Node " + node.Name + " status is now: NodeNotReady",
		},
		{
			name: "namespace (cluster-scoped)", obj: nsObj, eventNS: metav1.NamespaceDefault,
			ref: v1.ObjectReference{Kind: "Namespace", APIVersion: "v1", Name: ns, UID: nsObj.UID, ResourceVersion: nsObj.ResourceVersion},
			typ: v1.EventTypeNormal, reason: "QuotaApplied", action: "Admit", note: "quota applied to " + ns,
		},
		{
			name: "object reference", obj: widget, related: cmRef, eventNS: ns, ref: *widget, relRef: cmRef,
			typ: v1.EventTypeWarning, reason: "PartMissing", action: "Assemble", note: "part 3 of 4 is missing",
		},
	}

	h := newEvHarness(t, evSink(t, env.Admin))
	start := time.Now()
	for _, c := range cases {
		h.rec.Eventf(c.obj, c.related, c.typ, c.reason, c.action, "%s", c.note)
	}
	s := h.flush(flushTimeout)
	end := time.Now()
	if s.Recorded != int64(len(cases)) || s.Created != int64(len(cases)) || s.Dropped.Total() != 0 {
		t.Errorf("stats %+v, want %d recorded and created, none dropped", s, len(cases))
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := metav1.ListOptions{FieldSelector: "regarding.uid=" + string(c.ref.UID)}
			evs := waitV1(t, cs, c.eventNS, opts, func(evs []eventsv1.Event) error {
				if len(evs) != 1 {
					return fmt.Errorf("%d events, want 1", len(evs))
				}
				return nil
			})
			e := evs[0]
			if e.Namespace != c.eventNS {
				t.Errorf("namespace %q, want %q", e.Namespace, c.eventNS)
			}
			if e.Regarding != c.ref {
				t.Errorf("regarding %+v, want %+v", e.Regarding, c.ref)
			}
			switch {
			case c.relRef == nil && e.Related != nil:
				t.Errorf("related %+v, want none", e.Related)
			case c.relRef != nil && (e.Related == nil || *e.Related != *c.relRef):
				t.Errorf("related %+v, want %+v", e.Related, c.relRef)
			}
			if e.Type != c.typ || e.Reason != c.reason || e.Action != c.action || e.Note != c.note {
				t.Errorf("type/reason/action/note %q/%q/%q/%q, want %q/%q/%q/%q", e.Type, e.Reason, e.Action, e.Note, c.typ, c.reason, c.action, c.note)
			}
			if e.ReportingController != evController || e.ReportingInstance != instance {
				t.Errorf("reportingController/Instance %q/%q, want %q/%q", e.ReportingController, e.ReportingInstance, evController, instance)
			}
			// eventTime is kept to the microsecond.
			if et := e.EventTime.Time; et.Before(start.Truncate(time.Microsecond)) || et.After(end) {
				t.Errorf("eventTime %v, want within [%v, %v]", et, start, end)
			}
			if e.Series != nil {
				t.Errorf("series %+v for a single occurrence", e.Series)
			}
			if e.DeprecatedSource != (v1.EventSource{}) || !e.DeprecatedFirstTimestamp.IsZero() || !e.DeprecatedLastTimestamp.IsZero() || e.DeprecatedCount != 0 {
				t.Errorf("deprecated fields set: source %+v, first %v, last %v, count %d",
					e.DeprecatedSource, e.DeprecatedFirstTimestamp, e.DeprecatedLastTimestamp, e.DeprecatedCount)
			}
			// client-go: fmt.Sprintf("%v.%x", ref.Name, t.UnixNano()).
			m := regexp.MustCompile(`^` + regexp.QuoteMeta(c.ref.Name) + `\.([0-9a-f]+)$`).FindStringSubmatch(e.Name)
			if m == nil {
				t.Fatalf("name %q, want %q.<hex nanoseconds>", e.Name, c.ref.Name)
			}
			nanos, err := strconv.ParseUint(m[1], 16, 64)
			if err != nil {
				t.Fatalf("name %q: suffix: %v", e.Name, err)
			}
			if d := time.Unix(0, int64(nanos)).Sub(e.EventTime.Time); d < -time.Second || d > time.Second {
				t.Errorf("name %q encodes %v, eventTime is %v", e.Name, time.Unix(0, int64(nanos)).UTC(), e.EventTime.UTC())
			}
		})
	}

	t.Run("kubectl events", func(t *testing.T) {
		kubectlShows(t, []string{"Pod/web-0", "Widget/gadget-7", "Scheduled", "PartMissing",
			"Successfully assigned " + ns + "/web-0 to nowhere", "part 3 of 4 is missing"},
			"events", "-n", ns)
		kubectlShows(t, []string{"Node/" + node.Name, "NodeNotReady", "status is now: NodeNotReady"},
			"events", "-n", metav1.NamespaceDefault, "--for", "node/"+node.Name)
	})

	t.Run("kubectl get events.events.k8s.io -o json", func(t *testing.T) {
		out, err := env.Kubectl(ctx, "get", "events.events.k8s.io", "-n", ns, "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			APIVersion string           `json:"apiVersion"`
			Items      []map[string]any `json:"items"`
		}
		if err := json.Unmarshal(out, &list); err != nil {
			t.Fatalf("kubectl output: %v\n%s", err, out)
		}
		if len(list.Items) != 2 {
			t.Fatalf("%d events in %s, want 2:\n%s", len(list.Items), ns, out)
		}
		for _, it := range list.Items {
			if it["apiVersion"] != "events.k8s.io/v1" {
				t.Errorf("apiVersion %v", it["apiVersion"])
			}
			for _, k := range []string{"regarding", "related", "action", "reason", "note", "type", "eventTime", "reportingController", "reportingInstance"} {
				if v, ok := it[k]; !ok || v == nil || v == "" {
					t.Errorf("event %v: field %s is %v", it["metadata"], k, v)
				}
			}
			if it["reportingController"] != evController || it["reportingInstance"] != instance {
				t.Errorf("reportingController/Instance %v/%v", it["reportingController"], it["reportingInstance"])
			}
			for _, k := range []string{"deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount", "series"} {
				if v := it[k]; v != nil {
					t.Errorf("event %v: %s is %v, want unset", it["metadata"], k, v)
				}
			}
			if src, ok := it["deprecatedSource"].(map[string]any); ok && len(src) != 0 {
				t.Errorf("deprecatedSource %v, want empty", src)
			}
		}
	})
}

// TestEventsV1Series records N occurrences of one event (N = 1, 2, 50) and
// events differing only in their action: after Flush each is one stored
// Event whose series count is exactly its number of occurrences.
func TestEventsV1Series(t *testing.T) {
	cs := adminClient(t)
	ns := env.CreateNamespace(t, "ev-series")
	h := newEvHarness(t, evSink(t, env.Admin), events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited})))

	want := map[string]int32{}
	var total int64
	for _, n := range []int32{1, 2, 50} {
		name := fmt.Sprintf("n-%d", n)
		want[name] = n
		for i := range n {
			// The note differs; it is not part of the series' identity,
			// and the first occurrence's note is kept.
			h.rec.Eventf(podRef(ns, name), nil, v1.EventTypeWarning, "BackOff", defaultAction, "Back-off restarting failed container (%d)", i)
			total++
		}
	}
	// One object, three actions: three series.
	for action, n := range map[string]int32{"Pull": 3, "Start": 2, "Kill": 1} {
		want["multi/"+action] = n
		for range n {
			h.rec.Eventf(podRef(ns, "multi"), nil, v1.EventTypeNormal, "Lifecycle", action, "container %s", strings.ToLower(action))
			total++
		}
	}
	s := h.flush(flushTimeout)
	if s.Recorded != total || written(s) != total || s.Dropped.Total() != 0 || s.Created != int64(len(want)) {
		t.Errorf("stats %+v: want %d recorded and written, %d created, none dropped", s, total, len(want))
	}
	evs := waitV1(t, cs, ns, metav1.ListOptions{}, countV1(want))
	for _, e := range evs {
		if e.Regarding.Name == "n-50" && e.Note != "Back-off restarting failed container (0)" {
			t.Errorf("series n-50 has note %q, want the first occurrence's", e.Note)
		}
		if e.Series != nil && e.Series.LastObservedTime.Before(&e.EventTime) {
			t.Errorf("%s: series lastObservedTime %v before eventTime %v", e.Name, e.Series.LastObservedTime, e.EventTime)
		}
	}
	// kubectl events shows a series' count in its LAST SEEN column.
	kubectlShows(t, []string{"(x50 over", "(x3 over", "(x2 over", "Pod/n-50", "Pod/multi"}, "events", "-n", ns)
}

// TestEventsV1ManySeries records 10 occurrences of each of 200 events,
// interleaved, so that 200 series grow at once: after Flush every stored
// count is exactly 10.
func TestEventsV1ManySeries(t *testing.T) {
	const objects, repeats = 200, 10
	cs := adminClient(t)
	ns := env.CreateNamespace(t, "ev-many-series")
	h := newEvHarness(t, evSink(t, env.Admin), events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited, Workers: 8})))

	want := make(map[string]int32, objects)
	for i := range objects {
		want[fmt.Sprintf("obj-%03d", i)] = repeats
	}
	start := time.Now()
	for r := range repeats {
		for i := range objects {
			h.rec.Eventf(podRef(ns, fmt.Sprintf("obj-%03d", i)), nil, v1.EventTypeWarning, "Unhealthy", defaultAction, "Readiness probe failed (%d)", r)
		}
	}
	s := h.flush(flushTimeout)
	t.Logf("%d series of %d written in %v; stats %+v", objects, repeats, time.Since(start).Round(time.Millisecond), s)
	if s.Recorded != objects*repeats || written(s) != objects*repeats || s.Created != objects || s.Dropped.Total() != 0 {
		t.Errorf("stats %+v: want %d recorded and written, %d created, none dropped", s, objects*repeats, objects)
	}
	waitV1(t, cs, ns, metav1.ListOptions{}, countV1(want))
}

// TestEventsV1ClientGoSink gives client-go's own events.EventSinkImpl to
// herald's broadcaster: it writes creates and series patches to the real
// server.
func TestEventsV1ClientGoSink(t *testing.T) {
	cs := adminClient(t)
	ns := env.CreateNamespace(t, "ev-cg-sink")
	h := newEvHarness(t, &cgevents.EventSinkImpl{Interface: cs.EventsV1()})

	for range 3 {
		h.rec.Eventf(podRef(ns, "hot"), nil, v1.EventTypeWarning, "BackOff", defaultAction, "Back-off pulling image")
	}
	h.rec.Eventf(podRef(ns, "cold"), nil, v1.EventTypeNormal, "Pulled", defaultAction, "Pulled image")
	s := h.flush(flushTimeout)
	if s.Recorded != 4 || written(s) != 4 || s.Created != 2 || s.Dropped.Total() != 0 {
		t.Errorf("stats %+v: want 4 recorded and written, 2 created, none dropped", s)
	}
	waitV1(t, cs, ns, metav1.ListOptions{}, countV1(map[string]int32{"hot": 3, "cold": 1}))
}

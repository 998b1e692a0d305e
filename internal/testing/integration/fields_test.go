package integration

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldk8s/herald/internal/testing/check"
)

// TestEventFields records one event about each kind of object (a Pod and a
// ConfigMap that exist, a cluster-scoped Node, and an object known only by
// an ObjectReference) and checks that the API server stores the fields
// client-go's recorder would write, and that kubectl lists them.
func TestEventFields(t *testing.T) {
	cs := adminClient(t)
	ns := env.CreateNamespace(t, "fields")

	pod, cm, node := createFieldObjects(t, cs, ns, "herald-it-node-")
	widget := &v1.ObjectReference{
		Kind: "Widget", APIVersion: "widgets.example.com/v1", Namespace: ns, Name: "gadget-7",
		UID: types.UID("uid-gadget-7"), ResourceVersion: "42", FieldPath: "spec.parts[0]",
	}

	cases := []struct {
		name    string
		obj     runtime.Object
		eventNS string
		ref     v1.ObjectReference
		typ     string
		reason  string
		message string
	}{
		{
			name: "pod", obj: pod, eventNS: ns,
			ref: v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion},
			typ: v1.EventTypeNormal, reason: "Scheduled", message: "Successfully assigned " + ns + "/web-0 to nowhere",
		},
		{
			name: "configmap", obj: cm, eventNS: ns,
			ref: v1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: ns, Name: cm.Name, UID: cm.UID, ResourceVersion: cm.ResourceVersion},
			typ: v1.EventTypeWarning, reason: "InvalidConfig", message: `key "mode" is missing`,
		},
		{
			name: "node (cluster-scoped)", obj: node, eventNS: metav1.NamespaceDefault,
			ref: v1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: node.Name, UID: node.UID, ResourceVersion: node.ResourceVersion},
			typ: v1.EventTypeNormal, reason: "NodeReady", message: "Node " + node.Name + " status is now: NodeReady",
		},
		{
			name: "object reference", obj: widget, eventNS: ns, ref: *widget,
			typ: v1.EventTypeWarning, reason: "PartMissing", message: "part 3 of 4 is missing",
		},
	}

	h := newHarness(t, heraldSink(t, env.Admin))
	start := time.Now()
	for _, c := range cases {
		h.rec.Eventf(c.obj, c.typ, c.reason, "%s", c.message)
	}
	s := h.flush(flushTimeout)
	end := time.Now()
	if s.Recorded != int64(len(cases)) || s.Created != int64(len(cases)) || s.Dropped.Total() != 0 {
		t.Errorf("stats %+v, want %d recorded and created, none dropped", s, len(cases))
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(c.ref.UID)}
			evs := waitEvents(t, cs, c.eventNS, opts, func(evs []v1.Event) error {
				if len(evs) != 1 {
					return fmt.Errorf("%d events, want 1", len(evs))
				}
				return nil
			})
			checkClientGoFields(t, evs[0], c.eventNS, c.ref, c.typ, c.reason, c.message, start, end)
		})
	}

	t.Run("kubectl get events", func(t *testing.T) {
		want := []string{"pod/web-0", "configmap/settings", "widget/gadget-7", "Scheduled", "InvalidConfig", "PartMissing",
			"Successfully assigned", `key "mode" is missing`, source.Component + ", " + source.Host}
		kubectlShows(t, want, "get", "events", "-n", ns, "-o", "wide")
		kubectlShows(t, []string{"node/" + node.Name, "NodeReady"},
			"get", "events", "-n", metav1.NamespaceDefault, "--field-selector", "involvedObject.name="+node.Name)
	})
}

// kubectlShows runs kubectl until its output contains every string of want
// (bounded by pollTimeout).
func kubectlShows(t *testing.T, want []string, args ...string) {
	t.Helper()
	var out []byte
	ctx, cancel := context.WithTimeout(context.Background(), pollTimeout)
	defer cancel()
	check.Eventually(t, "kubectl "+strings.Join(args, " "), func() error {
		var err error
		out, err = env.Kubectl(ctx, args...)
		if err != nil {
			return err
		}
		for _, w := range want {
			if !strings.Contains(string(out), w) {
				return fmt.Errorf("output lacks %q:\n%s", w, out)
			}
		}
		return nil
	})
	t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out)
}

// checkClientGoFields checks that ev, written once between start and end,
// has the fields client-go's recorder gives an event.
func checkClientGoFields(t *testing.T, ev v1.Event, namespace string, ref v1.ObjectReference, typ, reason, message string, start, end time.Time) {
	t.Helper()
	if ev.Namespace != namespace {
		t.Errorf("namespace %q, want %q", ev.Namespace, namespace)
	}
	if ev.InvolvedObject != ref {
		t.Errorf("involvedObject %+v, want %+v", ev.InvolvedObject, ref)
	}
	if ev.Type != typ || ev.Reason != reason || ev.Message != message {
		t.Errorf("type/reason/message %q/%q/%q, want %q/%q/%q", ev.Type, ev.Reason, ev.Message, typ, reason, message)
	}
	if ev.Count != 1 {
		t.Errorf("count %d, want 1", ev.Count)
	}
	if ev.Source != source {
		t.Errorf("source %+v, want %+v", ev.Source, source)
	}
	if ev.ReportingController != source.Component || ev.ReportingInstance != source.Host {
		t.Errorf("reportingComponent/Instance %q/%q, want %q/%q", ev.ReportingController, ev.ReportingInstance, source.Component, source.Host)
	}
	// The API server keeps timestamps to the second.
	lo, hi := start.Truncate(time.Second), end.Add(time.Second)
	first, last := ev.FirstTimestamp.Time, ev.LastTimestamp.Time
	if first.IsZero() || !first.Equal(last) || first.Before(lo) || first.After(hi) {
		t.Errorf("firstTimestamp %v, lastTimestamp %v: want equal, within [%v, %v]", first, last, lo, hi)
	}
	if !ev.EventTime.IsZero() || ev.Series != nil || ev.Action != "" || ev.Related != nil {
		t.Errorf("events.k8s.io-only fields set: eventTime %v, series %v, action %q, related %v", ev.EventTime, ev.Series, ev.Action, ev.Related)
	}
	// client-go: fmt.Sprintf("%v.%x", ref.Name, t.UnixNano()).
	m := regexp.MustCompile(`^` + regexp.QuoteMeta(ref.Name) + `\.([0-9a-f]+)$`).FindStringSubmatch(ev.Name)
	if m == nil {
		t.Errorf("name %q, want %q.<hex nanoseconds>", ev.Name, ref.Name)
		return
	}
	nanos, err := strconv.ParseInt(m[1], 16, 64)
	if err != nil {
		t.Errorf("name %q: suffix: %v", ev.Name, err)
		return
	}
	if d := time.Unix(0, nanos).Sub(first); d < 0 || d >= 2*time.Second {
		t.Errorf("name %q encodes %v, firstTimestamp is %v", ev.Name, time.Unix(0, nanos).UTC(), first.UTC())
	}
}

// createFieldObjects creates the objects the field tests record events
// about: a Pod web-0 and a ConfigMap settings in ns, and a Node named
// nodePrefix plus a random suffix (deleted when t ends).
func createFieldObjects(t *testing.T, cs kubernetes.Interface, ns, nodePrefix string) (*v1.Pod, *v1.ConfigMap, *v1.Node) {
	t.Helper()
	ctx := t.Context()
	pod, err := cs.CoreV1().Pods(ns).Create(ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the Pod: %v", err)
	}
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data:       map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the ConfigMap: %v", err)
	}
	node, err := cs.CoreV1().Nodes().Create(ctx, &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nodePrefix + randSuffix()},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the Node: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cs.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting node %s: %v", node.Name, err)
		}
	})
	return pod, cm, node
}

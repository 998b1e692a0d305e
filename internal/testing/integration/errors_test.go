package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"

	"github.com/heraldk8s/herald/internal/testing/check"
)

// droppedLog is the message the delivery engine logs a permanent drop with.
const droppedLog = "Dropped event, will not retry"

// TestForbidden records as the restricted user into a namespace it may not
// write events in: each event is a counted Forbidden drop after exactly one
// POST (no retry storm), with one clear error log line. The same recorder
// still writes into the namespace the user may write in.
func TestForbidden(t *testing.T) {
	const n = 5
	cs := adminClient(t)
	ns := env.CreateNamespace(t, "forbidden")
	proxy := newProxy(t)
	h := newHarness(t, heraldSink(t, proxy.Config(env.Restricted)))

	for i := range n {
		h.rec.Eventf(podRef(ns, fmt.Sprintf("app-%d", i)), v1.EventTypeWarning, "FailedCreate", "Error creating: quota exceeded (%d)", i)
	}
	s := h.flush(flushTimeout)
	if s.Dropped.Forbidden != n || s.Dropped.Total() != n || s.Retried != 0 || written(s) != 0 {
		t.Errorf("stats %+v: want %d dropped as forbidden, nothing retried or written", s, n)
	}
	eventsPath := "/namespaces/" + ns + "/events"
	if got := proxy.Requests("POST", eventsPath); got != n {
		t.Errorf("%d POSTs to %s, want exactly %d (one per event)", got, eventsPath, n)
	}
	if got := proxy.Requests("PATCH", eventsPath) + proxy.Requests("PUT", eventsPath); got != 0 {
		t.Errorf("%d PATCH/PUT requests to %s, want 0", got, eventsPath)
	}
	checkDropLog(t, h, "forbidden", "forbidden", env.RestrictedUser)
	waitEvents(t, cs, ns, metav1.ListOptions{}, countEvents(map[string]int32{}))

	// Control: the restricted user's own namespace accepts the same kind of
	// event through the same recorder.
	allowed := podRef(env.RestrictedNamespace, "allowed-"+randSuffix())
	h.rec.Event(allowed, v1.EventTypeNormal, "Created", "Created container app")
	s = h.flush(flushTimeout)
	if s.Created != 1 || s.Dropped.Total() != n {
		t.Errorf("stats %+v: want 1 created in %s, still %d dropped", s, env.RestrictedNamespace, n)
	}
	waitEvents(t, cs, env.RestrictedNamespace, metav1.ListOptions{FieldSelector: "involvedObject.name=" + allowed.Name},
		countEvents(map[string]int32{allowed.Name: 1}))
}

// TestNamespaceTerminating records into a namespace that is being deleted
// (a ConfigMap with a finalizer of ours keeps it Terminating; the test
// environment runs no namespace controller anyway): each event is a counted
// namespace_terminating drop after exactly one POST, logged once.
func TestNamespaceTerminating(t *testing.T) {
	const n = 5
	const finalizer = "herald.example.com/hold"
	cs := adminClient(t)
	ns := env.CreateNamespace(t, "terminating")
	ctx := t.Context()

	hold := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hold", Finalizers: []string{finalizer}}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, hold, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ConfigMap with finalizer: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		_, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, "hold", types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("removing the finalizer of %s/hold: %v", ns, err)
		}
	})
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting namespace %s: %v", ns, err)
	}
	check.Eventually(t, "namespace "+ns+" Terminating", func() error {
		got, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.Phase != v1.NamespaceTerminating {
			return fmt.Errorf("phase %q", got.Status.Phase)
		}
		return nil
	})

	proxy := newProxy(t)
	h := newHarness(t, heraldSink(t, proxy.Config(env.Admin)))
	for i := range n {
		h.rec.Eventf(podRef(ns, fmt.Sprintf("job-%d", i)), v1.EventTypeNormal, "Completed", "Job completed (%d)", i)
	}
	s := h.flush(flushTimeout)
	if s.Dropped.NamespaceTerminating != n || s.Dropped.Total() != n || s.Retried != 0 || written(s) != 0 {
		t.Errorf("stats %+v: want %d dropped as namespace_terminating, nothing retried or written", s, n)
	}
	eventsPath := "/namespaces/" + ns + "/events"
	if got := proxy.Requests("POST", eventsPath); got != n {
		t.Errorf("%d POSTs to %s, want exactly %d (one per event)", got, eventsPath, n)
	}
	if got := proxy.Requests("PATCH", eventsPath) + proxy.Requests("PUT", eventsPath); got != 0 {
		t.Errorf("%d PATCH/PUT requests to %s, want 0", got, eventsPath)
	}
	// Expected while a namespace goes away: logged at V(5) as client-go
	// does, not as an error.
	if logs := h.errorLogs(droppedLog); len(logs) != 0 {
		t.Errorf("%d error-level drop log lines for namespace-terminating drops, want 0: %v", len(logs), logs)
	}
	waitEvents(t, cs, ns, metav1.ListOptions{}, countEvents(map[string]int32{}))
}

// checkDropLog checks that the drops were logged at error level exactly
// once (the engine bounds its drop logs), with the drop reason and an error
// whose text contains each of errContains.
func checkDropLog(t *testing.T, h *harness, reason string, errContains ...string) {
	t.Helper()
	// A drop is logged just after its Flush is released.
	var logs []ktesting.LogEntry
	check.Eventually(t, "the drop's error-level log line", func() error {
		logs = h.errorLogs(droppedLog)
		return check.Errorf(len(logs) > 0, "no error-level %q log line yet", droppedLog)
	})
	if len(logs) != 1 {
		t.Errorf("%d error-level %q log lines, want 1:\n%s", len(logs), droppedLog, h.logs.String())
		return
	}
	e := logs[0]
	if got := kv(e, "dropReason"); got != reason {
		t.Errorf("log line has dropReason %v, want %q: %+v", got, reason, e)
	}
	if e.Err == nil {
		t.Errorf("log line carries no error: %+v", e)
		return
	}
	for _, s := range errContains {
		if !strings.Contains(e.Err.Error(), s) {
			t.Errorf("logged error %q does not mention %q", e.Err, s)
		}
	}
}

// kv returns the value logged under key, or nil.
func kv(e ktesting.LogEntry, key string) any {
	for _, l := range [][]any{e.WithKVList, e.ParameterKVList} {
		for i := 0; i+1 < len(l); i += 2 {
			if l[i] == key {
				return l[i+1]
			}
		}
	}
	return nil
}

package controllerruntime_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// levelSink is a logr.LogSink whose verbosity changes at run time (as
// zap's AtomicLevel does), keeping what it logs.
type levelSink struct {
	v    *atomic.Int32
	mu   *sync.Mutex
	msgs *[]string
}

func (s levelSink) Init(logr.RuntimeInfo)  {}
func (s levelSink) Enabled(level int) bool { return int32(level) <= s.v.Load() }
func (s levelSink) Info(level int, msg string, kv ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.msgs = append(*s.msgs, fmt.Sprintf("V(%d) %s %v", level, msg, kv))
}
func (s levelSink) Error(error, string, ...any)    {}
func (s levelSink) WithValues(...any) logr.LogSink { return s }
func (s levelSink) WithName(string) logr.LogSink   { return s }

// Events are logged at V(1) while V(1) is enabled, read at each event as
// controller-runtime's recorders read it: here V(1) is enabled after
// NewManager (a level raised at run time), and herald's recorders log
// their events then as controller-runtime's own does.
func TestEventsLoggedOnceV1IsEnabled(t *testing.T) {
	ns := env.CreateNamespace(t, "herald-cr-logging")
	var v atomic.Int32 // V(0) at first
	var mu sync.Mutex
	var msgs []string
	opts := baseOptions()
	opts.Logger = logr.New(levelSink{v: &v, mu: &mu, msgs: &msgs})
	mgr := newManager(t, opts)
	stop := startManager(t, mgr)
	defer func() { _, _ = stop() }()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "logged"}}
	mgr.GetEventRecorder(controllerName).Eventf(cm, nil, corev1.EventTypeNormal, "QuietV1", "Act", "not logged")
	flush(t, mgr)
	v.Store(1)
	mgr.GetEventRecorder(controllerName).Eventf(cm, nil, corev1.EventTypeNormal, "LoggedV1", "Act", "logged")
	mgr.GetEventRecorderFor("herald-cr-test").Eventf(cm, corev1.EventTypeNormal, "LoggedCore", "logged") //nolint:staticcheck // the deprecated recorder is part of the API
	mgr.Manager.GetEventRecorder(controllerName).Eventf(cm, nil, corev1.EventTypeNormal, "LoggedByCR", "Act", "logged by controller-runtime")
	flush(t, mgr)
	eventually(t, "controller-runtime to log its own event", func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if !strings.Contains(strings.Join(msgs, "\n"), "LoggedByCR") {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	mu.Lock()
	all := strings.Join(msgs, "\n")
	mu.Unlock()
	for _, reason := range []string{"LoggedV1", "LoggedCore"} {
		if !strings.Contains(all, "reason "+reason+" ") {
			t.Errorf("the %s event was not logged at V(1); log:\n%s", reason, all)
		}
	}
	if strings.Contains(all, "QuietV1") {
		t.Errorf("an event recorded while V(1) was off was logged:\n%s", all)
	}
}

package sink_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// AlreadyExists drops, "expected in normal operation" and logged at V(5),
// use up the 1,024 reason+namespace pairs of the loud first-drop log, so a
// new refusal in a new namespace is no longer logged at error level.
// The first drop of each reason in each namespace is logged at error level
// (up to 1,024 pairs): the quiet drops (AlreadyExists, a namespace
// terminating, logged at V(5)) take none of those places, so that a
// controller whose namespaces come and go still gets a new namespace's
// first refusal loud.
func TestQuietDropsLeaveTheFirstLoudLine(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx := klog.NewContext(context.Background(), logger)
	s := sinktest.New()
	s.SetFault(func(_ context.Context, _ sinktest.Op, ev *v1.Event) error {
		if strings.HasPrefix(ev.Namespace, "dup-") {
			return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "events"}, ev.Name)
		}
		return apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, ev.Name, fmt.Errorf("no RBAC in %s", ev.Namespace))
	})
	eng, err := sink.NewEngine(s, sink.Options{QPS: sink.Unlimited, Clock: clocktesting.NewFakeClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	eng.Start(ctx)
	defer eng.Stop(context.Background())
	add := func(ns, name string) {
		ev := event(name, 1)
		ev.Namespace, ev.InvolvedObject.Namespace = ns, ns
		eng.Add(ns+"/"+name, ev, nil)
		if err := eng.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	add("noisy", "a") // the first forbidden: loud (rate log and first in ns)
	for i := range 1024 {
		add(fmt.Sprintf("dup-%d", i), "d")
	}
	add("fresh", "b") // a new namespace's first forbidden: must be loud
	if st := eng.Stats(); st.Dropped.Forbidden != 2 || st.Dropped.AlreadyExists != 1024 {
		t.Fatalf("stats %+v", st)
	}
	// A drop is logged after its Flush is released: Stop waits for the
	// workers, and so for the log lines.
	eng.Stop(context.Background())
	buf := logger.GetSink().(ktesting.Underlier).GetBuffer()
	n := strings.Count(buf.String(), "no RBAC in fresh")
	errLines := 0
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.HasPrefix(l, "E") && strings.Contains(l, "fresh") {
			errLines++
		}
	}
	if errLines != 1 {
		t.Errorf("%d error-level lines for namespace fresh's first forbidden drop (%d mentions); want 1", errLines, n)
	}
}

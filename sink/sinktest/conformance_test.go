package sinktest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

func TestFakeSinkConforms(t *testing.T) {
	sinktest.Run(t, func(*testing.T) (sink.EventSink, string) { return sinktest.New(), "ns" })
}

// wrongSink is the fake sink made wrong in one way, on the plain path
// (Create, Patch) or on the context path the engine prefers.
type wrongSink struct {
	*sinktest.Sink
	way string
}

func (w *wrongSink) Create(ev *v1.Event) (*v1.Event, error) {
	if old, ok := w.Get(ev.Namespace, ev.Name); ok && w.way == "plain create twice succeeds" {
		return old, nil
	}
	return w.Sink.Create(ev)
}

func (w *wrongSink) Patch(ev *v1.Event, data []byte) (*v1.Event, error) {
	switch old, ok := w.Get(ev.Namespace, ev.Name); {
	case ok && w.way == "plain patch ignored":
		return old, nil
	case ok && w.way == "plain patch not stored":
		scratch := sinktest.New()
		old.ResourceVersion = ""
		if _, err := scratch.Create(old); err != nil {
			return nil, err
		}
		return scratch.Patch(ev, data)
	case !ok && w.way == "plain patch of a missing event fails otherwise":
		return nil, errors.New("internal error")
	}
	return w.Sink.Patch(ev, data)
}

func (w *wrongSink) CreateContext(ctx context.Context, ev *v1.Event) (*v1.Event, error) {
	if old, ok := w.Get(ev.Namespace, ev.Name); ok && w.way == "context create twice succeeds" {
		return old, nil
	}
	return w.Sink.CreateContext(ctx, ev)
}

func (w *wrongSink) PatchContext(ctx context.Context, ev *v1.Event, data []byte) (*v1.Event, error) {
	switch old, ok := w.Get(ev.Namespace, ev.Name); {
	case ok && w.way == "context patch ignored":
		return old, nil
	case !ok && w.way == "context patch of a missing event fails otherwise":
		return nil, errors.New("internal error")
	}
	return w.Sink.PatchContext(ctx, ev, data)
}

// Run fails a sink wrong in any of the ways the engine would trust, on
// either path the engine writes through. Each wrong sink goes through Run
// in a process of its own (this test again, with SINKTEST_WRONG_WAY set),
// whose failure is the expected outcome: one of Run's checks must fail
// there, not the process in some other way.
func TestRunFailsForWrongSinks(t *testing.T) {
	if way := os.Getenv("SINKTEST_WRONG_WAY"); way != "" {
		sinktest.Run(t, func(*testing.T) (sink.EventSink, string) { return &wrongSink{Sink: sinktest.New(), way: way}, "ns" })
		return
	}
	for _, way := range []string{
		"plain create twice succeeds", "plain patch ignored", "plain patch not stored", "plain patch of a missing event fails otherwise",
		"context create twice succeeds", "context patch ignored", "context patch of a missing event fails otherwise",
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRunFailsForWrongSinks$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "SINKTEST_WRONG_WAY="+way)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--- FAIL: TestRunFailsForWrongSinks/") {
			t.Errorf("Run did not fail a check on a sink that is wrong (%s): %v\n%s", way, err, out)
		}
	}
}

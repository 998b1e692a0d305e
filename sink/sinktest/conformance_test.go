package sinktest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
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

// TestRunOnWrongSink is run by TestRunFailsForWrongSinks in a process of
// its own, where Run's failure is the expected outcome.
func TestRunOnWrongSink(t *testing.T) {
	way := os.Getenv("SINKTEST_WRONG_WAY")
	if way == "" {
		t.Skip("run by TestRunFailsForWrongSinks")
	}
	sinktest.Run(t, func(*testing.T) (sink.EventSink, string) { return &wrongSink{Sink: sinktest.New(), way: way}, "ns" })
}

// Run fails a sink wrong in any of the ways the engine would trust, on
// either path the engine writes through.
func TestRunFailsForWrongSinks(t *testing.T) {
	for _, way := range []string{
		"plain create twice succeeds", "plain patch ignored", "plain patch not stored", "plain patch of a missing event fails otherwise",
		"context create twice succeeds", "context patch ignored", "context patch of a missing event fails otherwise",
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRunOnWrongSink$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SINKTEST_WRONG_WAY="+way)
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("Run passed a sink that is wrong (%s):\n%s", way, out)
		}
	}
}

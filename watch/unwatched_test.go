package watch_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	apiwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/watch"
)

// TestUnwatchedEventsSkipTheQueue: with no watcher registered, events are
// counted as distributed at once (nobody can be offered them; the loop is
// not woken, and prepare never sees them); a watcher whose Watch has
// returned gets every event queued after it, even before the loop has
// registered it; once the loop has forgotten a stopped watcher, events skip
// the queue again.
func TestUnwatchedEventsSkipTheQueue(t *testing.T) {
	prepared := make(chan runtime.Object, 10)
	b := watchFuncs.NewPreparing(10, int(watch.WaitIfChannelFull), func(o runtime.Object) { prepared <- o })
	defer b.Shutdown()
	for i := range 100 {
		if ok, err := b.ActionOrDrop(apiwatch.Added, &num{i}); !ok || err != nil {
			t.Fatalf("ActionOrDrop: %v %v", ok, err)
		}
		if err := b.Action(apiwatch.Added, &num{i}); err != nil {
			t.Fatal(err)
		}
	}
	if s := b.Stats(); s.Distributed != 200 || s.Queued != 0 || s.Dropped != 0 {
		t.Fatalf("stats %+v", s)
	}
	if len(prepared) != 0 {
		t.Fatal("prepare ran for an event nobody watched")
	}

	w, err := b.Watch()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Action(apiwatch.Added, &num{1000}); err != nil { // the registration may still be queued
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Object.(*num).N != 1000 {
			t.Fatalf("got %+v", ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher did not get the event queued after its Watch returned")
	}
	if len(prepared) != 1 {
		t.Fatalf("prepare ran %d times, want 1", len(prepared))
	}

	w.Stop()
	if err := b.Action(apiwatch.Added, &num{1001}); err != nil { // the loop forgets the stopped watcher here
		t.Fatal(err)
	}
	check.Eventually(t, "the loop to forget the stopped watcher", func() error {
		s := b.Stats()
		return check.Errorf(s.Distributed == 202, "distributed %d, want 202; stats %+v", s.Distributed, s)
	})
	before := len(prepared)
	if err := b.Action(apiwatch.Added, &num{1002}); err != nil {
		t.Fatal(err)
	}
	if s := b.Stats(); s.Distributed != 203 || s.Queued != 0 {
		t.Fatalf("after the watcher was forgotten: stats %+v", s)
	}
	if len(prepared) != before {
		t.Fatal("prepare ran for an event queued after the only watcher was forgotten")
	}
}

package watch_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/heraldk8s/herald/internal/watchext"
	"github.com/heraldk8s/herald/watch"
)

// watchFuncs are the parts of the Broadcaster that are not public API.
var watchFuncs = watchext.Get[watch.Broadcaster]()

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// guard bounds every wait in the tests. It only turns a hang into a failure;
// no test relies on time passing.
const guard = 20 * time.Second

// num is the object of an ordinary test event.
type num struct{ N int }

func (*num) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (n *num) DeepCopyObject() runtime.Object { c := *n; return &c }

// mark is the object of a test mark.
type mark struct{ ID int }

func (*mark) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (m *mark) DeepCopyObject() runtime.Object { c := *m; return &c }

// label renders an event as "n" for a num and "mN" for a mark.
func label(t testing.TB, ev apiwatch.Event) string {
	t.Helper()
	switch o := ev.Object.(type) {
	case *num:
		if ev.Type != apiwatch.Added {
			t.Errorf("event %d has type %q, want %q", o.N, ev.Type, apiwatch.Added)
		}
		return itoa(o.N)
	case *mark:
		if ev.Type != apiwatch.Added {
			t.Errorf("mark %d has type %q, want %q", o.ID, ev.Type, apiwatch.Added)
		}
		return "m" + itoa(o.ID)
	default:
		t.Errorf("unexpected object %T", ev.Object)
		return "?"
	}
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + itoa(n%10)
}

func labels(n ...int) []string {
	out := make([]string, len(n))
	for i, v := range n {
		out[i] = itoa(v)
	}
	return out
}

func span(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, itoa(i))
	}
	return out
}

func act(t testing.TB, b *watch.Broadcaster, n int) {
	t.Helper()
	if err := b.Action(apiwatch.Added, &num{n}); err != nil {
		t.Fatalf("Action(%d): %v", n, err)
	}
}

func mustWatch(t testing.TB, b *watch.Broadcaster) watchext.Watcher {
	t.Helper()
	wi, err := b.Watch()
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	return wi.(watchext.Watcher)
}

// recv returns the next event of w, failing if the channel is closed or
// nothing arrives within guard.
func recv(t testing.TB, w apiwatch.Interface) string {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("result channel closed, want an event")
		}
		return label(t, ev)
	case <-time.After(guard):
		t.Fatalf("no event within %v", guard)
		return ""
	}
}

// collect reads w until its channel is closed, in a goroutine; the returned
// function waits for that and returns what was read.
func collect(t testing.TB, w apiwatch.Interface) func() []string {
	t.Helper()
	done := make(chan []string, 1)
	go func() {
		var got []string
		for ev := range w.ResultChan() {
			got = append(got, label(t, ev))
		}
		done <- got
	}()
	return func() []string {
		t.Helper()
		select {
		case got := <-done:
			return got
		case <-time.After(guard):
			t.Fatalf("result channel not closed within %v", guard)
			return nil
		}
	}
}

// drain reads what is left in w, which must be closed already or be closed
// within guard.
func drain(t testing.TB, w apiwatch.Interface) []string {
	t.Helper()
	return collect(t, w)()
}

// async runs f in a goroutine; the returned function waits for it to return.
func async(t testing.TB, f func()) (wait func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	return func() {
		t.Helper()
		select {
		case <-done:
		case <-time.After(guard):
			t.Fatalf("call did not return within %v", guard)
		}
	}
}

// stuck returns a broadcaster whose loop is blocked, for as long as the
// returned watcher is neither read nor stopped, holding the event -1: its
// incoming queue and the watcher's channel are unbuffered, and Action(-1)
// returns only once the loop has taken the event.
func stuck(t testing.TB) (*watch.Broadcaster, watchext.Watcher) {
	t.Helper()
	b := watch.NewLongQueueBroadcaster(0, watch.WaitIfChannelFull)
	w := mustWatch(t, b)
	act(t, b, -1)
	return b, w
}

func background() context.Context { return context.Background() }

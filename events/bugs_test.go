package events_test

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	cgevents "k8s.io/client-go/tools/events"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// record.WithMessageLimit(math.MaxInt) keeps core/v1 messages whole; an
// events.k8s.io/v1 note must still fit the server's 1024 bytes.
func TestNoteLimitWithUnlimitedMessages(t *testing.T) {
	for _, limit := range []int{math.MaxInt, 4096, 10} {
		s := newMemSink()
		b := events.NewBroadcaster(s, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited}), record.WithMessageLimit(limit)))
		if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		b.NewRecorder(scheme.Scheme, "ctl").Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "%s", strings.Repeat("x", 3000))
		b.Shutdown()
		evs := s.all()
		want := min(limit, events.MaxNoteLength)
		if len(evs) != 1 || len(evs[0].Note) != want {
			t.Errorf("WithMessageLimit(%d): %d events, note %d bytes, want %d", limit, len(evs), len(evs[0].Note), want)
		}
	}
}

// client-go's EventSinkImpl without a client is refused like herald's.
func TestClientGoSinkWithoutClient(t *testing.T) {
	b := events.NewBroadcaster(&cgevents.EventSinkImpl{})
	defer b.Shutdown()
	if err := b.StartRecordingToSinkWithContext(context.Background()); err == nil {
		t.Fatal("no error for a client-go EventSinkImpl without a client")
	}
}

// When the adapter's context ends, it shuts down; the goroutine of the
// deprecated StartRecordingToSink ends with it, even with a stopCh that
// never closes.
func TestAdapterStartRecordingEndsWithContext(t *testing.T) {
	base := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	cs := fake.NewClientset()
	servesEventsV1(cs)
	a := events.NewEventBroadcasterAdapterWithContext(ctx, cs)
	a.StartRecordingToSink(nil)
	a.NewRecorder("ctl").Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "n")
	cancel()
	waitFor(t, func() bool { return goleak.Find(base) == nil }, "the adapter's goroutines to end")
}

// A watcher's event is its own: mutating it changes neither the stored
// event nor what other watchers see.
func TestWatcherEventIsOwn(t *testing.T) {
	s := newMemSink()
	b := events.NewBroadcaster(s, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited})))
	defer b.Shutdown()
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	var seen []string
	var mu sync.Mutex
	for i := 0; i < 2; i++ {
		stop, err := b.StartEventWatcher(func(o runtime.Object) {
			e := o.(*eventsv1.Event)
			mu.Lock()
			seen = append(seen, e.Annotations["k"]+"/"+e.Related.Name)
			mu.Unlock()
			e.Annotations["k"] = "mutated"
			e.Related.Name = "mutated"
			e.Note = "mutated"
		})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
	}
	r := b.NewRecorder(scheme.Scheme, "ctl").(events.AnnotatedEventRecorder)
	r.AnnotatedEventf(pod("ns", "p"), pod("ns", "rel"), map[string]string{"k": "v"}, v1.EventTypeNormal, "R", "A", "n")
	flush(t, b)
	evs := s.all()
	if len(evs) != 1 || evs[0].Annotations["k"] != "v" || evs[0].Related.Name != "rel" || evs[0].Note != "n" {
		t.Errorf("stored %+v", evs)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, x := range seen {
		if x != "v/rel" {
			t.Errorf("a watcher saw %q", seen)
		}
	}
}

// References passed as regarding or related are copied: the caller may
// change them after Eventf.
func TestReferencesCopied(t *testing.T) {
	s := newMemSink()
	b := events.NewBroadcaster(s, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited})))
	defer b.Shutdown()
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	reg := &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "p"}
	rel := &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "q"}
	b.NewRecorder(scheme.Scheme, "ctl").Eventf(reg, rel, v1.EventTypeNormal, "R", "A", "n")
	reg.Name, rel.Name = "changed", "changed"
	flush(t, b)
	evs := s.all()
	if len(evs) != 1 || evs[0].Regarding.Name != "p" || evs[0].Related == nil || evs[0].Related.Name != "q" {
		t.Errorf("stored %+v", evs)
	}
}

// A broadcaster shut down by its own context (record.WithContext) leaves no
// goroutine of the deprecated StartRecordingToSink(nil) behind.
func TestDeprecatedStartRecordingNilStopChEndsWithContext(t *testing.T) {
	base := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	b := events.NewBroadcaster(newMemSink(), events.WithBroadcasterOptions(record.WithContext(ctx)))
	b.StartRecordingToSink(nil)
	b.NewRecorder(scheme.Scheme, "ctl").Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "n")
	cancel()
	waitFor(t, func() bool { return goleak.Find(base) == nil }, "the broadcaster's goroutines to end")
}

// TestDeprecatedStartEndsWithContext: with record.WithContext, the end of
// that context shuts the broadcaster down, and the goroutine of a
// deprecated StartRecordingToSink whose stop channel never closes ends too.
func TestDeprecatedStartEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: fake.NewClientset().EventsV1()}, events.WithBroadcasterOptions(record.WithContext(ctx)))
	b.StartRecordingToSink(make(chan struct{}))
	cancel()
	// Wait for the shutdown the context started (without calling
	// Shutdown, which would end the goroutine by itself).
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := b.StartEventWatcher(func(runtime.Object) {}); err != nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatal("the broadcaster did not shut down when its context ended")
		}
		time.Sleep(time.Millisecond)
	}
	goleak.VerifyNone(t)
}

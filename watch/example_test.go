package watch_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/heraldk8s/herald/watch"
)

func Example() {
	b := watch.NewBroadcaster(100, watch.DropIfChannelFull)
	w, err := b.Watch()
	if err != nil {
		panic(err)
	}
	for _, reason := range []string{"Scheduled", "Pulled", "Started"} {
		if _, err := b.ActionOrDrop(apiwatch.Added, &corev1.Event{Reason: reason}); err != nil {
			panic(err)
		}
	}
	// Shutdown hands the queued events to w, then closes its channel.
	b.Shutdown()
	for ev := range w.ResultChan() {
		fmt.Println(ev.Type, ev.Object.(*corev1.Event).Reason)
	}
	// Output:
	// ADDED Scheduled
	// ADDED Pulled
	// ADDED Started
}

// flushMark is a consumer's own mark type; the consumer tells it from
// ordinary events by its Go type.
type flushMark struct{ done chan struct{} }

func (*flushMark) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (m *flushMark) DeepCopyObject() runtime.Object { return m }

func ExampleBroadcaster_Mark() {
	b := watch.NewBroadcaster(100, watch.DropIfChannelFull)
	defer b.Shutdown()
	w, err := b.Watch()
	if err != nil {
		panic(err)
	}
	// The consumer handles events until its channel closes, and closes a
	// mark's done channel when it gets there.
	go func() {
		for ev := range w.ResultChan() {
			switch o := ev.Object.(type) {
			case *flushMark:
				close(o.done)
			case *corev1.Event:
				fmt.Println("handled", o.Reason)
			}
		}
	}()
	_ = b.Action(apiwatch.Added, &corev1.Event{Reason: "Started"})

	// Flush: once the mark comes back, every event queued before it has
	// been handled (or counted as dropped).
	m := &flushMark{done: make(chan struct{})}
	if err := b.Mark(context.Background(), m); err != nil {
		panic(err)
	}
	<-m.done
	fmt.Println("flushed")
	// Output:
	// handled Started
	// flushed
}

func ExampleBroadcaster_WatchWithPrefix() {
	b := watch.NewBroadcaster(10, watch.WaitIfChannelFull)
	// Start the watcher with the state it has missed, then live events.
	w, err := b.WatchWithPrefix([]apiwatch.Event{
		{Type: apiwatch.Added, Object: &corev1.Event{Reason: "Earlier"}},
	})
	if err != nil {
		panic(err)
	}
	_ = b.Action(apiwatch.Added, &corev1.Event{Reason: "Live"})
	b.Shutdown()
	for ev := range w.ResultChan() {
		fmt.Println(ev.Object.(*corev1.Event).Reason)
	}
	// Output:
	// Earlier
	// Live
}

package watch_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
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

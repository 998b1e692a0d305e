package correlator_test

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/correlator"
)

func event(now time.Time, reason, message string) *v1.Event {
	return &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("web-0.%x", now.UnixNano()), Namespace: "default"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", APIVersion: "v1"},
		Source:         v1.EventSource{Component: "my-controller"},
		Type:           v1.EventTypeWarning,
		Reason:         reason,
		Message:        message,
		FirstTimestamp: metav1.NewTime(now),
		LastTimestamp:  metav1.NewTime(now),
		Count:          1,
	}
}

// A repeated event updates one event: the first occurrence is created, the
// next ones come with a patch carrying the new count.
func ExampleEventCorrelator_EventCorrelate() {
	clock := testclock.NewFakeClock(time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC))
	c := correlator.NewEventCorrelator(clock)
	for i := 0; i < 3; i++ {
		res, err := c.EventCorrelate(event(clock.Now(), "BackOff", "Back-off restarting failed container"))
		if err != nil {
			panic(err)
		}
		fmt.Printf("count=%d patch=%s\n", res.Event.Count, res.Patch)
		clock.Step(time.Second)
	}
	// Output:
	// count=1 patch=
	// count=2 patch={"count":2,"lastTimestamp":"2026-01-02T15:04:06Z","message":"Back-off restarting failed container"}
	// count=3 patch={"count":3,"lastTimestamp":"2026-01-02T15:04:07Z","message":"Back-off restarting failed container"}
}

// Events that differ only in their message are combined once ten distinct
// messages occur within ten minutes.
func ExampleEventCorrelator_aggregation() {
	clock := testclock.NewFakeClock(time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC))
	c := correlator.NewEventCorrelator(clock)
	for i := 1; i <= 11; i++ {
		res, _ := c.EventCorrelate(event(clock.Now(), "FailedMount", fmt.Sprintf("volume vol-%d not found", i)))
		if res.Aggregated {
			fmt.Printf("%d: count=%d message=%q\n", i, res.Event.Count, res.Event.Message)
		}
	}
	fmt.Printf("%+v\n", c.Stats())
	// Output:
	// 10: count=1 message="(combined from similar events): volume vol-10 not found"
	// 11: count=2 message="(combined from similar events): volume vol-11 not found"
	// {Correlated:11 Aggregated:2 Filtered:0 AggregateEvictions:0 ObserveEvictions:0 SpamEvictions:0 AggregateEntries:1 ObserveEntries:10 SpamEntries:1}
}

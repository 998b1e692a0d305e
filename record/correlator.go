package record

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/heraldk8s/herald/correlator"
)

// EventCorrelator is client-go's EventCorrelator: for each event it decides
// whether it is combined with similar events (aggregation), which stored
// event it updates and with what count, and whether it is skipped (the spam
// filter). It is safe for concurrent use. A broadcaster makes the
// correlator of each of its sinks itself; this name is for code written
// against client-go's. See package correlator.
type EventCorrelator = correlator.EventCorrelator

// NewEventCorrelator returns a correlator with client-go's defaults: events
// are combined once 10 distinct messages of similar events occur within 10
// minutes of each other, and a source may send a burst of 25 events about
// an object with one type and reason, refilled at one per 5 minutes.
func NewEventCorrelator(clock clock.PassiveClock) *EventCorrelator {
	return correlator.NewEventCorrelator(clock)
}

// NewEventCorrelatorWithOptions returns a correlator configured by options;
// a zero field means its default.
func NewEventCorrelatorWithOptions(options CorrelatorOptions) *EventCorrelator {
	return correlator.NewEventCorrelatorWithOptions(options)
}

// EventAggregatorByReasonFunc is the default aggregation key function: the
// aggregate key holds the event's Source, InvolvedObject (not FieldPath),
// Type, Reason, ReportingController and ReportingInstance, and the local key
// is its Message, so similar events are those that differ only in their
// message. Unlike client-go's, the fields are length-prefixed, not
// concatenated, so two keys are equal only when every field is.
func EventAggregatorByReasonFunc(event *v1.Event) (string, string) {
	return correlator.EventAggregatorByReasonFunc(event)
}

// EventAggregatorByReasonMessageFunc is the default message of a combined
// event: "(combined from similar events): " followed by the event's
// message.
func EventAggregatorByReasonMessageFunc(event *v1.Event) string {
	return correlator.EventAggregatorByReasonMessageFunc(event)
}

// NewEventAggregator returns an aggregator keeping up to lruCacheSize
// aggregate keys, which combines events once maxEvents distinct local keys
// of one aggregate key occur with at most maxIntervalInSeconds between
// consecutive ones. A zero argument (a negative lruCacheSize too) and a nil
// function or clock mean the default (4096, EventAggregatorByReasonFunc,
// EventAggregatorByReasonMessageFunc, 10, 600, the real clock).
func NewEventAggregator(lruCacheSize int, keyFunc EventAggregatorKeyFunc, messageFunc EventAggregatorMessageFunc,
	maxEvents int, maxIntervalInSeconds int, clock clock.PassiveClock) *EventAggregator {
	return correlator.NewEventAggregator(lruCacheSize, keyFunc, messageFunc, maxEvents, maxIntervalInSeconds, clock)
}

// NewEventSourceObjectSpamFilter returns a spam filter keeping up to
// lruCacheSize token buckets, one per spam key, of burst tokens each,
// refilled at qps tokens per second. A zero argument (a negative
// lruCacheSize too) and a nil clock or key function mean the default (4096,
// 25, one per 5 minutes, the real clock, a key of the event's source,
// involved object, type and reason). client-go uses the arguments as given,
// and its spam key has no reason.
func NewEventSourceObjectSpamFilter(lruCacheSize, burst int, qps float32, clock clock.PassiveClock,
	spamKeyFunc EventSpamKeyFunc) *EventSourceObjectSpamFilter {
	return correlator.NewEventSourceObjectSpamFilter(lruCacheSize, burst, qps, clock, spamKeyFunc)
}

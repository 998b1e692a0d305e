package correlator

import (
	v1 "k8s.io/api/core/v1"

	"github.com/heraldk8s/herald/internal/eventkey"
)

// EventAggregatorKeyFunc groups events for aggregation. It returns the
// aggregateKey, which names the group of similar events, and the localKey,
// which tells events of one group apart (the message, by default). The
// correlator uses the strings as-is.
type EventAggregatorKeyFunc func(event *v1.Event) (aggregateKey string, localKey string)

// EventAggregatorMessageFunc makes the message of a combined event from the
// event that triggered it.
type EventAggregatorMessageFunc func(event *v1.Event) string

// EventSpamKeyFunc returns the key whose token bucket limits an event. The
// correlator uses the string as-is.
type EventSpamKeyFunc func(event *v1.Event) string

// EventFilterFunc reports whether an event should be skipped.
type EventFilterFunc func(event *v1.Event) bool

// EventAggregatorByReasonFunc is the default [EventAggregatorKeyFunc]: the
// aggregate key holds the event's Source, InvolvedObject (Kind, Namespace,
// Name, UID, APIVersion; not FieldPath), Type, Reason, ReportingController
// and ReportingInstance, and the local key is the Message: similar events
// are those that differ only in their message (and FieldPath).
//
// Difference from client-go: the fields are length-prefixed instead of
// concatenated, so two events get the same aggregate key only when every
// field is equal. The string is opaque. The event must not be nil.
func EventAggregatorByReasonFunc(event *v1.Event) (string, string) {
	return eventkey.Aggregate(event), event.Message
}

// EventAggregatorByReasonMessageFunc is the default
// [EventAggregatorMessageFunc]: "(combined from similar events): " followed by the
// event's message.
func EventAggregatorByReasonMessageFunc(event *v1.Event) string {
	return aggregateMessagePrefix + event.Message
}

// defaultSpamKey is herald's default [EventSpamKeyFunc]: the event's Source,
// InvolvedObject (Kind, Namespace, Name, UID, APIVersion; not FieldPath),
// Type and Reason. Each reason about an object has its own token bucket, so
// a noisy reason cannot silence another one.
//
// Difference from client-go: client-go's key has no Reason (see
// spamKeyWithoutReason), and its fields are concatenated instead of
// length-prefixed. The string is opaque. The event must not be nil.
func defaultSpamKey(event *v1.Event) string {
	return eventkey.Spam(event, true)
}

// spamKeyWithoutReason is the [EventSpamKeyFunc] with client-go's
// fields: the event's Source, InvolvedObject (Kind, Namespace, Name, UID,
// APIVersion; not FieldPath) and Type, so every reason about one object and
// type shares one token bucket. It is used when
// [CorrelatorOptions].SpamKeyWithoutReason is set. Unlike client-go's, the
// fields are length-prefixed, so different events cannot share a key by
// accident of concatenation. The string is opaque. The event must not be nil.
func spamKeyWithoutReason(event *v1.Event) string {
	return eventkey.Spam(event, false)
}

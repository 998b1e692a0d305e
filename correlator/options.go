package correlator

import (
	"cmp"

	"k8s.io/utils/clock"
)

// Defaults, the same as client-go's tools/record.
const (
	// defaultLRUCacheSize is the default number of entries of each of the
	// three caches (aggregation, observation, spam filter).
	defaultLRUCacheSize = 4096
	// defaultBurstSize is the default number of events a spam key may
	// send at once (the size of its token bucket, which starts full).
	defaultBurstSize = 25
	// defaultQPS is the default refill rate of a spam key's token bucket:
	// one event every five minutes.
	defaultQPS float32 = 1. / 300.
	// defaultMaxEvents is the default number of distinct messages of similar
	// events within the interval that triggers aggregation.
	defaultMaxEvents = 10
	// defaultMaxIntervalInSeconds is the default aggregation window, measured
	// from the last similar event.
	defaultMaxIntervalInSeconds = 600
	// defaultMessageLimit is the default longest message of a combined
	// event, in bytes: the events.k8s.io note limit, and the default
	// message limit of herald's recorder.
	defaultMessageLimit = 1024
	// aggregateMessagePrefix starts the message of a combined event made by
	// [EventAggregatorByReasonMessageFunc].
	aggregateMessagePrefix = "(combined from similar events): "
)

// CorrelatorOptions configures an [EventCorrelator]. A zero field means its
// default, so the zero CorrelatorOptions is client-go's configuration except
// for the spam key, which includes the event's Reason (see
// SpamKeyWithoutReason).
type CorrelatorOptions struct {
	// LRUCacheSize is the number of entries of each of the three caches
	// (aggregation records, observations, spam token buckets); when one is
	// full, its least recently used entry is evicted and counted in
	// [Stats]. Default 4096. A negative size also means the default
	// (client-go would keep no entry at all).
	LRUCacheSize int
	// BurstSize is the size of each spam key's token bucket, which starts
	// full. Default 25. A negative burst filters every event.
	BurstSize int
	// QPS is the refill rate of each spam key's token bucket, in events per
	// second. Default 1/300 (one every five minutes). A negative QPS never
	// refills.
	QPS float32
	// KeyFunc groups events for aggregation. Default
	// [EventAggregatorByReasonFunc]. A custom function is used as-is.
	KeyFunc EventAggregatorKeyFunc
	// MessageFunc makes the message of a combined event. Default
	// [EventAggregatorByReasonMessageFunc].
	MessageFunc EventAggregatorMessageFunc
	// MaxEvents is the number of distinct local keys (messages) of similar
	// events within MaxIntervalInSeconds at which events are combined.
	// Default 10. A negative value never aggregates.
	MaxEvents int
	// MaxIntervalInSeconds is the aggregation window, measured from the
	// last similar event. Default 600.
	MaxIntervalInSeconds int
	// Clock is the time of EventCorrelate. Default: the real clock.
	Clock clock.PassiveClock
	// SpamKeyFunc groups events for the spam filter. Default: the event's
	// source, involved object (not its field path), type and reason, without
	// the reason if SpamKeyWithoutReason is set. A custom function is used
	// as-is and SpamKeyWithoutReason is then ignored.
	SpamKeyFunc EventSpamKeyFunc

	// DisableAggregation turns aggregation off: every event is counted under
	// its own event key and never combined. Herald addition.
	DisableAggregation bool
	// DisableSpamFilter turns the spam filter off: no event is skipped.
	// Herald addition.
	DisableSpamFilter bool
	// SpamKeyWithoutReason makes the default spam key ignore the Reason, as
	// client-go's does, so all reasons about one object and type share one
	// token bucket. By default herald's spam key includes the Reason, so one
	// noisy reason cannot silence another. Herald addition.
	SpamKeyWithoutReason bool
}

// withDefaults returns o with every zero (or invalid) field set to its
// default.
func (o CorrelatorOptions) withDefaults() CorrelatorOptions {
	if o.LRUCacheSize <= 0 {
		o.LRUCacheSize = defaultLRUCacheSize
	}
	o.BurstSize = cmp.Or(o.BurstSize, defaultBurstSize)
	o.QPS = cmp.Or(o.QPS, defaultQPS)
	o.MaxEvents = cmp.Or(o.MaxEvents, defaultMaxEvents)
	o.MaxIntervalInSeconds = cmp.Or(o.MaxIntervalInSeconds, defaultMaxIntervalInSeconds)
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}

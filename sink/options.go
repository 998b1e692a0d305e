package sink

import (
	"cmp"
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// Defaults of [Options]. A zero field in Options means its default.
const (
	DefaultWorkers        = 4
	DefaultQPS            = 50
	DefaultBurst          = 100
	DefaultMaxTries       = 12 // client-go's maxTriesPerEvent
	DefaultMaxPending     = 10000
	DefaultBaseDelay      = 500 * time.Millisecond
	DefaultMaxDelay       = 2 * time.Second
	DefaultRequestTimeout = 30 * time.Second
)

// Options tunes an [Engine]. The zero value is valid and means every default.
type Options struct {
	// Workers is the number of goroutines writing to the sink. Default 4.
	Workers int
	// QPS and Burst size the engine's own token bucket, shared by all its
	// writes (retries included). Defaults 50 and 100. A negative QPS turns
	// the configured limit off (the adaptive rate still applies after a 429).
	QPS   float64
	Burst int
	// DisableAdaptiveRate keeps the write rate at QPS whatever the server
	// answers, and every 429 is then handled as a server-wide failure (one
	// probe after the Retry-After). By default a 429 while the server
	// accepts other writes cuts the rate (to 0.7 times the rate of recent
	// successful writes, at least 0.5/s, once per Retry-After), and it
	// grows back by 0.5 write/s plus 10% per second: many engines writing
	// to one server then share its capacity instead of offering a multiple
	// of it (see the package documentation).
	DisableAdaptiveRate bool
	// MaxTries is how many failed writes of one key, in a row, drop its
	// events as retries_exhausted (default 12, client-go's). Only the
	// failures judged the key's count (see the package documentation's
	// table): a 5xx or a 429 without Retry-After while the server answers
	// other writes. The server's failures (a failed probe, no answer, 5xx
	// of distinct keys with nothing answered in between) and load
	// shedding (a 429 with Retry-After) are never charged, so during an
	// outage events wait (bounded by MaxPending) however long it lasts.
	MaxTries int
	// MaxPending caps the writes waiting (one per event waiting to be
	// written; repeats of one event are one write). Default 10000.
	MaxPending int
	// BaseDelay and MaxDelay bound the backoff between probes while the
	// server is seen down, and between the tries of a key whose own writes
	// fail: the n-th probe (or try) after the failure waits a random
	// time in [d/2, d] with d = BaseDelay·2^(n-1) capped at MaxDelay. A
	// Retry-After from the server is honoured instead, up to MaxDelay (so a
	// server asking for an hour does not park events for an hour), plus up
	// to half of it more at random for events just recorded, less for older
	// ones (the fraction is 1s/(1s+age)). Defaults 500 ms and 2 s: an engine sends
	// at most one request every 2 s to a server that is down, and finds it
	// back within 2 s of its return. A negative MaxDelay means no wait at
	// all (client-go's WithSleepDuration(0)).
	BaseDelay, MaxDelay time.Duration
	// KeyInterval is the shortest time between the starts of two writes
	// of one key (one correlation key: one event series on the server).
	// With it, a hot series (an event repeated many times a second) is not
	// written once per round trip: the newest state waits, coalescing the
	// repeats as usual (it carries their count), and is written once the
	// interval since the key's previous write was sent has passed.
	//
	// The interval starts when a write is sent (dispatched to a worker),
	// and applies only after a write the server answered about that key:
	// stored, or dropped for good. A retry after a server-wide failure is
	// timed by the backoff alone. Keys are independent: one key's interval
	// never delays another's write. A key waiting for its interval counts
	// in Stats' Pending and OldestPending but not in HeldBack, and a Flush
	// (or Wait, or Barrier) does not wait out intervals: the keys it waits
	// for are written at once. The engine remembers a key's last write for
	// the interval only.
	//
	// Zero, the default, means no interval: a key's next write may start as
	// soon as its previous one has finished. A negative value means the
	// same.
	KeyInterval time.Duration
	// RequestTimeout bounds one request of a ContextEventSink. Default 30 s.
	RequestTimeout time.Duration
	// Clock drives backoff, the token bucket and timeouts. Default: the real clock.
	Clock clock.WithTicker
	// OnWritten, if set, is called after each successful write with the
	// key, the event as it was sent and the event the API server returned,
	// from the worker goroutine, outside the engine's locks, before a Flush
	// waiting for the write returns. record uses it to feed the correlator
	// (UpdateStateForWrite).
	OnWritten func(key string, sent, stored *v1.Event)

	noDelay bool // MaxDelay was negative: retry at once
}

func (o Options) withDefaults() (Options, error) {
	if o.Workers < 0 || o.Burst < 0 || o.MaxTries < 0 || o.MaxPending < 0 || o.BaseDelay < 0 || o.RequestTimeout < 0 {
		return o, errors.New("sink: negative option")
	}
	if o.MaxDelay < 0 { // no wait between tries
		o.MaxDelay, o.BaseDelay = 0, 0
		o.noDelay = true
	}
	o.Workers = cmp.Or(o.Workers, DefaultWorkers)
	o.QPS = cmp.Or(o.QPS, DefaultQPS)
	o.Burst = cmp.Or(o.Burst, DefaultBurst)
	o.MaxTries = cmp.Or(o.MaxTries, DefaultMaxTries)
	o.MaxPending = cmp.Or(o.MaxPending, DefaultMaxPending)
	if !o.noDelay {
		o.MaxDelay = cmp.Or(o.MaxDelay, DefaultMaxDelay)
		o.BaseDelay = min(cmp.Or(o.BaseDelay, DefaultBaseDelay), o.MaxDelay)
	}
	o.RequestTimeout = cmp.Or(o.RequestTimeout, DefaultRequestTimeout)
	o.KeyInterval = max(o.KeyInterval, 0) // negative: no interval, as zero
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o, nil
}

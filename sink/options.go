package sink

import (
	"math"
	"time"

	"github.com/heraldk8s/herald/internal/optval"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// The defaults of [Options]; a zero field means its default.
const (
	defaultWorkers        = 4
	defaultQPS            = 50
	defaultBurst          = 100
	defaultMaxTries       = 12 // client-go's maxTriesPerEvent
	defaultMaxPending     = 10000
	defaultBaseDelay      = 500 * time.Millisecond
	defaultMaxDelay       = 2 * time.Second
	defaultRequestTimeout = 30 * time.Second
	// maxWorkers bounds Workers: more would start a goroutine per event.
	maxWorkers = 1024
)

// Named values of [Options], for what no number says.
const (
	// Unlimited, as QPS, turns the configured write limit off (the
	// adaptive rate still applies after a 429), as rate.Inf does in
	// golang.org/x/time/rate.
	Unlimited = math.MaxFloat64
	// NoWait, as MaxDelay, tries a failed write again at once, with no
	// backoff and no Retry-After honoured (client-go's
	// WithSleepDuration(0)).
	NoWait time.Duration = math.MinInt64
)

// Options tunes an [Engine]. The zero value is valid and means every
// default. In every field, zero means the default, and a value out of range
// (negative, NaN or infinite, Workers above 1024) means the default too:
// the engine logs one error naming the field when it starts. A limit is
// turned off with a named value ([Unlimited], [NoWait]), not a negative
// number.
type Options struct {
	// Workers is the number of goroutines writing to the sink, and the
	// most writes under way. While the rate has a limit, the engine keeps
	// only as many under way as carry it at max(2, Workers) times the
	// usual round trip, at least one: one at the default 50 writes/s and
	// round trips under 10 ms. Default 4; at most 1024.
	Workers int
	// QPS and Burst size the engine's own token bucket, shared by all its
	// requests (retries and probes included); a request that fails other
	// than with a 429 gives its token back, so that QPS bounds the writes
	// the server answers and one event's failures cost the others nothing.
	// Defaults 50 and 100. QPS [Unlimited]
	// turns the configured limit off (the adaptive rate still applies
	// after a 429).
	QPS   float64
	Burst int
	// DisableAdaptiveRate keeps the write rate at QPS whatever the server
	// answers, and every 429 is then handled as a server-wide failure (one
	// probe after the Retry-After). By default a 429 while the server
	// accepts other writes cuts the rate, which grows back (see the
	// package documentation): many engines writing to one server then
	// share its capacity instead of offering a multiple of it.
	DisableAdaptiveRate bool
	// MaxTries is how many failed writes of one key, in a row, drop its
	// events as retries_exhausted (default 12, client-go's). Only the
	// failures judged the key's count (see the package documentation's
	// table): a retried failure other than a 429 with Retry-After while the
	// server answers other writes (or the first 5xx or 429 without
	// Retry-After, or no answer within BaseDelay of another answer, until
	// a second key shows it is the server's; those tries are then
	// refunded).
	// The server's failures (a failed probe, no answer, 5xx
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
	// server asking for an hour does not park events for an hour); a probe
	// waits up to half of it more at random when the engine's oldest event
	// was just recorded, less when it is older (the fraction is
	// 1s/(1s+age)). Defaults 500 ms and 2 s: an engine sends one request
	// every 1 to 2 s to a server that is down, and finds it back within
	// 2 s of its return. An engine holding many events probes sooner,
	// never sooner than BaseDelay (before the jitter): d above is at most
	// √(2·60 s·t/n) for n events waiting and an outage of t so far (the
	// package doc has the reason), so 1,500 events find the end of a 3 s
	// outage within about half a second. MaxDelay [NoWait] means no wait
	// at all.
	// record.WithSleepDuration is client-go's name for MaxDelay.
	BaseDelay, MaxDelay time.Duration
	// RequestTimeout bounds one request of a ContextEventSink (and of
	// client-go's *typedcorev1.EventSinkImpl, which the engine writes
	// through its client). Default 30 s.
	RequestTimeout time.Duration
	// Clock drives backoff, Retry-After waits, the token bucket and the
	// key interval (RequestTimeout runs on the real clock). Default: the
	// real clock. Given to a broadcaster (record.WithSinkOptions), it is
	// the broadcaster's clock too: its recorders' timestamps and its
	// correlators' (unless CorrelatorOptions.Clock is set). Tests pass a
	// k8s.io/utils/clock/testing.FakeClock.
	Clock clock.WithTicker
	// OnWritten, if set, is called after each successful write with the
	// key, the event as it was sent and the event the API server returned,
	// from the worker goroutine, outside the engine's locks, before a Flush
	// waiting for the write returns. It must not call the engine's Flush or
	// Stop: both wait for the write it reports, so a Flush returns only
	// when its context ends and a Stop only at its deadline (never, with a
	// context that never ends).
	OnWritten func(key string, sent, stored *v1.Event)

	// keyInterval is the shortest time between the starts of two writes
	// of one key (one correlation key: one event series on the server).
	// The events package sets it (its series interval, through
	// internal/hook); zero means none.
	//
	// With it, a hot series (an event repeated many times a second) is not
	// written once per round trip: the newest state waits, coalescing the
	// repeats as usual (it carries their count), and is written once the
	// interval since the key's previous write was sent has passed. The
	// interval starts when a write is sent (dispatched to a worker), and
	// applies only after a write the server answered about that key:
	// stored, or dropped for good. A retry after a server-wide failure is
	// timed by the backoff alone. Keys are independent: one key's interval
	// never delays another's write. A key waiting for its interval counts
	// in Stats' Pending and OldestPending but not in HeldBack, and a Flush
	// (or Wait) does not wait out intervals: the keys it waits for are
	// written at once. The engine remembers a key's last write for the
	// interval only.
	keyInterval time.Duration
	noDelay     bool // MaxDelay was NoWait: retry at once
}

// withDefaults returns o with every zero or invalid field set to its
// default (the rule of internal/optval), and the invalid fields.
func (o Options) withDefaults() (Options, optval.List) {
	var bad optval.List
	optval.Set(&bad, "Workers", &o.Workers, defaultWorkers, maxWorkers)
	optval.Set(&bad, "Burst", &o.Burst, defaultBurst, math.MaxInt)
	optval.Set(&bad, "MaxTries", &o.MaxTries, defaultMaxTries, math.MaxInt)
	optval.Set(&bad, "MaxPending", &o.MaxPending, defaultMaxPending, math.MaxInt)
	switch {
	case o.QPS == 0:
		o.QPS = defaultQPS
	case o.QPS == Unlimited:
		o.QPS = math.Inf(1)
	case o.QPS < 0 || math.IsNaN(o.QPS) || math.IsInf(o.QPS, 0):
		bad = append(bad, optval.Invalid{Option: "QPS", Value: o.QPS, Default: float64(defaultQPS)})
		o.QPS = defaultQPS
	}
	optval.Set(&bad, "RequestTimeout", &o.RequestTimeout, defaultRequestTimeout, math.MaxInt64)
	if o.MaxDelay == NoWait {
		o.MaxDelay, o.BaseDelay, o.noDelay = 0, 0, true
	} else {
		optval.Set(&bad, "MaxDelay", &o.MaxDelay, defaultMaxDelay, math.MaxInt64)
		optval.Set(&bad, "BaseDelay", &o.BaseDelay, defaultBaseDelay, math.MaxInt64)
		o.BaseDelay = min(o.BaseDelay, o.MaxDelay)
	}
	o.keyInterval = max(o.keyInterval, 0)
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o, bad
}

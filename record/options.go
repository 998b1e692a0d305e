package record

import (
	"context"
	"math"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/heraldk8s/herald/internal/hook"
	"github.com/heraldk8s/herald/sink"
)

// Defaults of the broadcaster options.
const (
	// DefaultQueueLength is the capacity of the broadcaster's incoming queue
	// and of each watcher's channel. client-go uses 1000; herald uses 10000
	// so that one reconcile burst of 10,000 events fits even while the
	// pipeline behind the queue shares the CPU with the caller. The queues
	// hold pointers (tens of bytes a slot); an event's memory is held only
	// while it is queued.
	DefaultQueueLength = 10000
	// DefaultShutdownGracePeriod bounds Shutdown's flush.
	DefaultShutdownGracePeriod = 10 * time.Second
	// DefaultMessageLimit is the longest message, in bytes, the recorder
	// keeps (the events.k8s.io note limit); longer ones are cut on a UTF-8
	// boundary.
	DefaultMessageLimit = 1024
)

// Limits of the broadcaster options. A value above its limit is absurd (it
// would allocate gigabytes or start a goroutine per event) and treated like
// a negative one: the default is used and one error is logged.
const (
	// MaxQueueLength is the largest WithQueueLength: 2^20 slots, about
	// 32 MiB for the incoming queue and 24 MiB for each watcher's channel,
	// allocated up front.
	MaxQueueLength = 1 << 20
	// MaxWorkers is the largest WithWorkers.
	MaxWorkers = 1024
)

// BroadcasterOption configures a broadcaster made by NewBroadcaster. Like
// client-go's, it is a function type.
//
// For the numeric options, zero means the default, with two exceptions
// that keep client-go's meaning: WithSleepDuration(0) means no wait, and
// WithWriteLimit's negative qps turns the limit off. An invalid value
// (negative where not documented otherwise, above the option's limit, NaN)
// means the default, and NewBroadcaster logs one error naming the option.
// No option value makes NewBroadcaster panic or a sink be refused.
type BroadcasterOption func(*config)

type config struct {
	ctx           context.Context
	logger        *klog.Logger
	correlator    CorrelatorOptions
	engine        sink.Options
	clock         clock.WithTicker
	queueLength   int
	gracePeriod   time.Duration
	messageLimit  int
	sleepDuration time.Duration
	sleepSet      bool // WithSleepDuration was given

	// newCorrelator, set through the hook by the events package, makes the
	// correlator of each sink instead of record's own.
	newCorrelator hook.NewCorrelator

	// invalid lists the options that had an invalid value and were reset
	// to their default; NewBroadcaster logs each once.
	invalid []invalidOption
}

// invalidOption is an option whose value was invalid.
type invalidOption struct {
	option string
	value  any
	def    any
}

// WithCorrelatorOptions sets the options of the correlator of each sink
// (client-go's option). A zero field means its default.
func WithCorrelatorOptions(options CorrelatorOptions) BroadcasterOption {
	return func(c *config) { c.correlator = options }
}

// WithContext ties the broadcaster to ctx (client-go's option): its logger is
// taken from ctx, and when ctx is cancelled the broadcaster shuts down as by
// Shutdown (flushing for the grace period).
func WithContext(ctx context.Context) BroadcasterOption {
	return func(c *config) { c.ctx = ctx }
}

// WithSleepDuration sets the longest wait between two probes while the API
// server is seen down, between two tries of an event whose own writes fail,
// and the longest Retry-After honoured (client-go's option; there it was the
// fixed wait between tries of one event). Default 2 s. Zero (or a negative duration) means no wait: a failed write is tried
// again at once, as client-go does with a zero sleep.
func WithSleepDuration(d time.Duration) BroadcasterOption {
	return func(c *config) { c.sleepDuration, c.sleepSet = d, true }
}

// WithLogger sets the logger of the broadcaster and of its recorders.
// Default: the logger of the WithContext context, else klog.Background().
func WithLogger(logger klog.Logger) BroadcasterOption {
	return func(c *config) { c.logger = &logger }
}

// WithClock sets the clock of the recorder (timestamps), the correlator
// (unless CorrelatorOptions.Clock is set) and the delivery engine. Default:
// the real clock. Tests pass a k8s.io/utils/clock/testing.FakeClock.
func WithClock(clk clock.WithTicker) BroadcasterOption {
	return func(c *config) { c.clock = clk }
}

// WithQueueLength sets the capacity of the incoming queue and of each
// watcher's channel. Default 10000 (client-go: 1000); at most
// MaxQueueLength.
func WithQueueLength(n int) BroadcasterOption {
	return func(c *config) { c.queueLength = n }
}

// WithWorkers sets the number of goroutines each sink writes with. Default
// 4; at most MaxWorkers.
func WithWorkers(n int) BroadcasterOption {
	return func(c *config) { c.engine.Workers = n }
}

// WithWriteLimit sets the token bucket every sink's writes go through.
// Default 50 writes/s with a burst of 100; a negative qps turns it off.
func WithWriteLimit(qps float64, burst int) BroadcasterOption {
	return func(c *config) { c.engine.QPS, c.engine.Burst = qps, burst }
}

// WithAdaptiveWriteRate turns the adaptive write rate on (the default) or
// off. On, a 429 from the API server cuts every sink's write rate, which
// then grows back (see package sink): many controllers writing to one
// server converge to its capacity. Off, the rate stays at WithWriteLimit's
// and every 429 is handled as a failure of the server (one probe at a time
// after its Retry-After).
func WithAdaptiveWriteRate(enabled bool) BroadcasterOption {
	return func(c *config) { c.engine.DisableAdaptiveRate = !enabled }
}

// WithMaxTries sets how many failed writes of one key in a row drop its
// events (retries_exhausted). Default 12 (client-go's). Only failures judged
// the key's are charged: a 5xx or a 429 without Retry-After while the server
// answers other events (a webhook refusing its namespace, EventRateLimit).
// The server's failures and load shedding (429 with Retry-After) are not:
// during an outage events wait (WithMaxPending bounds them). See package
// sink for the rule.
func WithMaxTries(n int) BroadcasterOption {
	return func(c *config) { c.engine.MaxTries = n }
}

// WithMaxPending caps the writes waiting per sink (one per event waiting to
// be written; repeats of an event are one write). Default 10000.
func WithMaxPending(n int) BroadcasterOption {
	return func(c *config) { c.engine.MaxPending = n }
}

// WithRequestTimeout bounds one API request. Default 30 s.
func WithRequestTimeout(d time.Duration) BroadcasterOption {
	return func(c *config) { c.engine.RequestTimeout = d }
}

// WithRetryBackoff sets the first delay before a probe after the API server
// was seen failing, and before the second try of an event whose own write
// failed; it doubles with each failure up to the sleep duration. Default
// 500 ms.
func WithRetryBackoff(d time.Duration) BroadcasterOption {
	return func(c *config) { c.engine.BaseDelay = d }
}

// WithShutdownGracePeriod bounds how long Shutdown flushes. Default 10 s.
func WithShutdownGracePeriod(d time.Duration) BroadcasterOption {
	return func(c *config) { c.gracePeriod = d }
}

// WithMessageLimit sets the longest message in bytes; longer messages are cut
// on a UTF-8 boundary. Default 1024. A negative value keeps messages whole
// (the one option where a negative value is not invalid).
func WithMessageLimit(n int) BroadcasterOption {
	return func(c *config) { c.messageLimit = n }
}

func newConfig(opts []BroadcasterOption) config {
	c := config{}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.ctx == nil {
		c.ctx = context.Background()
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	c.queueLength = c.check("WithQueueLength", c.queueLength, DefaultQueueLength, MaxQueueLength)
	c.gracePeriod = checkDuration(&c, "WithShutdownGracePeriod", c.gracePeriod, DefaultShutdownGracePeriod)
	c.engine.Workers = c.check("WithWorkers", c.engine.Workers, sink.DefaultWorkers, MaxWorkers)
	c.engine.MaxTries = c.check("WithMaxTries", c.engine.MaxTries, sink.DefaultMaxTries, math.MaxInt)
	c.engine.MaxPending = c.check("WithMaxPending", c.engine.MaxPending, sink.DefaultMaxPending, math.MaxInt)
	c.engine.Burst = c.check("WithWriteLimit burst", c.engine.Burst, sink.DefaultBurst, math.MaxInt)
	if math.IsNaN(c.engine.QPS) {
		c.invalid = append(c.invalid, invalidOption{"WithWriteLimit qps", c.engine.QPS, float64(sink.DefaultQPS)})
		c.engine.QPS = sink.DefaultQPS
	}
	c.engine.RequestTimeout = checkDuration(&c, "WithRequestTimeout", c.engine.RequestTimeout, sink.DefaultRequestTimeout)
	c.engine.BaseDelay = checkDuration(&c, "WithRetryBackoff", c.engine.BaseDelay, sink.DefaultBaseDelay)
	if c.messageLimit == 0 {
		c.messageLimit = DefaultMessageLimit
	}
	if c.correlator.MessageLimit == 0 {
		c.correlator.MessageLimit = c.messageLimit // combined messages too
	}
	switch {
	case c.sleepDuration > 0:
		c.engine.MaxDelay = c.sleepDuration
	case c.sleepSet:
		c.engine.MaxDelay = -1 // the engine's "no wait between tries"
	}
	c.engine.Clock = c.clock
	if c.correlator.Clock == nil {
		c.correlator.Clock = c.clock
	}
	return c
}

// check returns v if it is in [1, limit], def if it is 0, and def after
// noting an invalid option otherwise.
func (c *config) check(option string, v, def, limit int) int {
	switch {
	case v == 0:
		return def
	case v < 0 || v > limit:
		c.invalid = append(c.invalid, invalidOption{option, v, def})
		return def
	}
	return v
}

// checkDuration is check for a duration, which has no upper limit.
func checkDuration(c *config, option string, d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		c.invalid = append(c.invalid, invalidOption{option, d, def})
		return def
	}
	return d
}

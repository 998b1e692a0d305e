package record

import (
	"context"
	"math"
	"reflect"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/heraldk8s/herald/internal/hook"
	"github.com/heraldk8s/herald/internal/optval"
	"github.com/heraldk8s/herald/sink"
)

// The defaults and limits of the broadcaster's own options.
const (
	// defaultQueueLength is the capacity of the broadcaster's incoming
	// queue and of each watcher's channel. client-go uses 1000; herald
	// uses 10000 so that one reconcile burst of 10,000 events fits even
	// while the pipeline behind the queue shares the CPU with the caller.
	// The queues hold pointers (tens of bytes a slot); an event's memory
	// is held only while it is queued.
	defaultQueueLength = 10000
	// maxQueueLength is the largest WithQueueLength: 2^20 slots, about
	// 32 MiB for the incoming queue and 24 MiB for each watcher's channel,
	// allocated up front.
	maxQueueLength = 1 << 20
	// defaultShutdownGracePeriod bounds Shutdown's flush.
	defaultShutdownGracePeriod = 10 * time.Second
	// defaultMessageLimit is the longest message, in bytes, the recorder
	// keeps (the events.k8s.io note limit); longer ones are cut on a UTF-8
	// boundary.
	defaultMessageLimit = 1024
)

// BroadcasterOption configures a broadcaster made by NewBroadcaster. Like
// client-go's, it is a function type.
//
// Each setting has one option: the delivery engine's (workers, write rate,
// retries, timeouts, the clock) are one [sink.Options] given by
// WithSinkOptions; the broadcaster's own are WithQueueLength,
// WithShutdownGracePeriod, WithMessageLimit and WithLogger; client-go's
// WithContext, WithCorrelatorOptions and WithSleepDuration keep their names.
// A zero value means the default; a value out of range (negative, or above
// the option's limit) means the default too, and one error naming it is
// logged (by NewBroadcaster, or by each sink's engine for a field of
// sink.Options). A limit is turned off by a named value (sink.Unlimited,
// sink.NoWait), never a negative number. Two exceptions keep client-go's
// meanings: WithSleepDuration(0) (or negative) means no wait, and the
// fields of CorrelatorOptions are client-go's (see there). No option value
// makes NewBroadcaster panic or a sink be refused.
type BroadcasterOption func(*config)

type config struct {
	ctx          context.Context
	logger       *klog.Logger
	correlator   CorrelatorOptions
	engine       sink.Options
	clock        clock.WithTicker // engine.Clock, or the real clock
	queueLength  int
	gracePeriod  time.Duration
	messageLimit int
	keyInterval  time.Duration // of each sink's engine; set by the events package

	// newCorrelator, set through the hook by the events package, makes the
	// correlator of each sink instead of record's own.
	newCorrelator hook.NewCorrelator
	// beforeShutdown, set through the hook by the events package, runs
	// when the shutdown starts, before new events are refused.
	beforeShutdown func()

	// invalid lists the options that had an invalid value and were reset
	// to their default; NewBroadcaster logs each once.
	invalid optval.List
}

// WithCorrelatorOptions sets the options of the correlator of each sink
// (client-go's option). A zero field means its default.
func WithCorrelatorOptions(options CorrelatorOptions) BroadcasterOption {
	return func(c *config) { c.correlator = options }
}

// WithContext ties the broadcaster to ctx (client-go's option): its logger is
// taken from ctx (unless WithLogger is given), and when ctx is cancelled the
// broadcaster shuts down as by Shutdown (flushing for the grace period).
func WithContext(ctx context.Context) BroadcasterOption {
	return func(c *config) { c.ctx = ctx }
}

// WithSleepDuration is client-go's option, kept so that code written for
// client-go compiles; in herald it sets the delivery engine's MaxDelay (see
// [sink.Options]): the longest wait between two probes while the API server
// is seen down, between two tries of an event whose own writes fail, and
// the longest Retry-After honoured. Zero (or a negative duration) means no
// wait, as in client-go: sink.NoWait.
//
// Deprecated: use WithSinkOptions(sink.Options{MaxDelay: d}).
func WithSleepDuration(d time.Duration) BroadcasterOption {
	if d <= 0 {
		d = sink.NoWait
	}
	return func(c *config) { c.engine.MaxDelay = d }
}

// WithSinkOptions sets the options of each sink's delivery engine: workers,
// write rate, retries, backoff, request timeout and the clock (see
// [sink.Options]; a zero field means its default). Its Clock is the
// broadcaster's clock too: the recorders' timestamps and the correlators'
// (unless CorrelatorOptions.Clock is set). Given more than once (or with
// WithSleepDuration), each sets the fields it gives (the non-zero ones),
// the later winning, so that options made in different places add up.
func WithSinkOptions(options sink.Options) BroadcasterOption {
	return func(c *config) { setNonZero(&c.engine, options) }
}

// setNonZero sets the exported fields of *dst that are not zero in src.
func setNonZero(dst *sink.Options, src sink.Options) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src)
	for i := range s.NumField() {
		if f := s.Field(i); d.Type().Field(i).IsExported() && !f.IsZero() {
			d.Field(i).Set(f)
		}
	}
}

// WithLogger sets the logger of the broadcaster, its recorders and its
// sinks. Default: the logger of the WithContext context, else
// klog.Background().
func WithLogger(logger klog.Logger) BroadcasterOption {
	return func(c *config) { c.logger = &logger }
}

// WithQueueLength sets the capacity of the incoming queue and of each
// watcher's channel. Default 10000 (client-go: 1000); at most 2^20.
func WithQueueLength(n int) BroadcasterOption {
	return func(c *config) { c.queueLength = n }
}

// WithShutdownGracePeriod bounds how long Shutdown flushes. Default 10 s.
func WithShutdownGracePeriod(d time.Duration) BroadcasterOption {
	return func(c *config) { c.gracePeriod = d }
}

// WithMessageLimit sets the longest message in bytes, of recorded events
// and of "(combined from similar events)" ones; longer messages are cut on
// a UTF-8 boundary. Default 1024. math.MaxInt keeps messages whole.
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
	c.clock = c.engine.Clock
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	optval.Set(&c.invalid, "WithQueueLength", &c.queueLength, defaultQueueLength, maxQueueLength)
	optval.Set(&c.invalid, "WithMessageLimit", &c.messageLimit, defaultMessageLimit, math.MaxInt)
	optval.Set(&c.invalid, "WithShutdownGracePeriod", &c.gracePeriod, defaultShutdownGracePeriod, math.MaxInt64)
	if c.correlator.Clock == nil {
		c.correlator.Clock = c.clock
	}
	return c
}

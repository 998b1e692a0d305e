package events

import (
	"math"
	"time"

	"github.com/heraldk8s/herald/internal/optval"
	"github.com/heraldk8s/herald/record"
)

// Option configures a broadcaster of this package (NewBroadcaster,
// NewEventBroadcasterAdapterWithContext). It is a type of its own: an
// option of package record is given through WithBroadcasterOptions, so that
// what applies to which API is explicit.
type Option func(*options)

type options struct {
	record         []record.BroadcasterOption
	seriesInterval time.Duration
	invalid        optval.List
}

// NoSeriesInterval is the series interval that is none: given to
// WithSeriesInterval, each new count of a series is written as soon as the
// previous write of the event has finished.
const NoSeriesInterval time.Duration = math.MinInt64

// WithSeriesInterval sets the shortest time between two writes of one
// event: the occurrences of a series within it are folded into the count
// of one patch, so the stored count lags behind by at most about d (plus
// the write itself), and a series repeated a thousand times a second costs
// one write per d. Flush and Shutdown write every pending count at once.
// Zero means the default, 2 s (client-go refreshes a series every 30
// minutes); NoSeriesInterval means none; a negative d means the default
// and is logged.
func WithSeriesInterval(d time.Duration) Option {
	return func(o *options) { o.seriesInterval = d }
}

// WithBroadcasterOptions gives the broadcaster options of package record:
// the delivery engine's (record.WithSinkOptions), the queue length, the
// shutdown grace period, the message limit (the note is cut to it, at most
// 1024 bytes), the logger and the context. record.WithCorrelatorOptions
// has no effect here: events.k8s.io/v1 events form series instead of being
// aggregated and spam-filtered. Given more than once, the options add up.
func WithBroadcasterOptions(opts ...record.BroadcasterOption) Option {
	return func(o *options) { o.record = append(o.record, opts...) }
}

func newOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.seriesInterval == NoSeriesInterval {
		o.seriesInterval = 0
	} else {
		optval.Set(&o.invalid, "WithSeriesInterval", &o.seriesInterval, defaultSeriesInterval, math.MaxInt64)
	}
	return o
}

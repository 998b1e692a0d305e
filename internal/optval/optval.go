// Package optval holds the one rule every numeric option of herald follows:
// zero means the default, and a value out of range (negative, or above the
// option's limit) means the default too, noted so that it is logged once.
// The sink, record and events packages apply it; a named value that turns
// a limit off (sink.Unlimited, sink.NoWait, events.NoSeriesInterval) is
// handled by its package before the rule.
package optval

import (
	"math"
	"strconv"

	"k8s.io/klog/v2"
)

// Invalid is an option whose value was out of range and was replaced by
// its default.
type Invalid struct {
	Option         string
	Value, Default any
}

// List collects the invalid options of one configuration.
type List []Invalid

// Set applies the rule to *v: zero becomes def; a value below zero or above
// limit becomes def and is added to l under option's name.
func Set[T ~int | ~int64](l *List, option string, v *T, def, limit T) {
	switch {
	case *v == 0:
		*v = def
	case *v < 0 || *v > limit:
		*l = append(*l, Invalid{option, *v, def})
		*v = def
	}
}

// Log logs one error line msg for each invalid option.
func (l List) Log(logger klog.Logger, msg string) {
	for _, b := range l {
		logger.Error(nil, msg, "option", b.Option, "value", loggable(b.Value), "default", b.Default)
	}
}

// loggable returns v as a logger prints it: a NaN or an infinite float as
// its name (a JSON logger has no number for it and would print an error in
// its place).
func loggable(v any) any {
	if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return v
}

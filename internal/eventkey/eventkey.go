// Package eventkey builds the cache keys of the correlator: the event key
// (deduplication), the aggregate key and the spam key.
//
// client-go concatenates the fields of a key with an empty separator, so
// different splits of the same bytes collide: Source.Component "ab" with
// Source.Host "c" gives the same key as "a" with "bc". Here every field is
// length-prefixed ("<decimal length>:<bytes>"), which makes the encoding
// injective for a fixed number of fields: two keys are equal exactly when
// every field is equal. [Split] is the inverse, used by tests.
//
// The package is internal so the key format never becomes API: the strings
// are opaque and may change between releases.
package eventkey

import (
	"strings"
	"unsafe"

	v1 "k8s.io/api/core/v1"
)

// Prefixes of correlation keys, the keys of the correlator's observation
// cache. An event key and an aggregate key live in that one cache; the
// prefix keeps them apart even if a custom aggregate key function returns a
// string that looks like an event key.
const (
	// EventPrefix starts every key returned by [Event].
	EventPrefix = "e"
	// AggregatePrefix starts every key returned by [Correlation].
	AggregatePrefix = "a"
)

// shared returns the leading fields every key shares, in this order, so
// that a spam key is a prefix of the aggregate key: Source.Component,
// Source.Host, InvolvedObject.Kind, .Namespace, .Name, .UID, .APIVersion and
// Type (the 8 fields of client-go's spam key), then Reason. The remaining
// elements are left for the caller's own fields.
func shared(ev *v1.Event) [11]string {
	o := &ev.InvolvedObject
	return [11]string{ev.Source.Component, ev.Source.Host, o.Kind, o.Namespace, o.Name, string(o.UID), o.APIVersion, ev.Type, ev.Reason}
}

// Event returns the deduplication key of ev, prefixed with [EventPrefix]:
// the fields of client-go's getEventKey (source, involved object with
// FieldPath, type, reason, message), in the shared order followed by
// FieldPath and Message.
func Event(ev *v1.Event) string {
	f := shared(ev)
	f[9], f[10] = ev.InvolvedObject.FieldPath, ev.Message
	return join(EventPrefix, f[:]...)
}

// Aggregate returns the aggregate key of ev: the fields of client-go's
// EventAggregatorByReasonFunc (source, involved object without FieldPath,
// type, reason, reporting controller and instance).
func Aggregate(ev *v1.Event) string {
	f := shared(ev)
	f[9], f[10] = ev.ReportingController, ev.ReportingInstance
	return join("", f[:]...)
}

// Spam returns the spam key of ev: source, involved object without
// FieldPath, type, and, if withReason, the reason. Without the reason the
// fields are those of client-go's getSpamKey.
func Spam(ev *v1.Event, withReason bool) string {
	f := shared(ev)
	return join("", f[:spamFields(withReason)]...)
}

func spamFields(withReason bool) int {
	if withReason {
		return 9
	}
	return 8
}

// SpamOfAggregate returns Spam(ev, withReason) given Aggregate(ev), without
// allocating: it is a prefix of it. The result shares aggregateKey's bytes;
// clone it before keeping it longer than aggregateKey would be kept.
func SpamOfAggregate(aggregateKey string, withReason bool) string {
	i := 0
	for range spamFields(withReason) {
		n := 0
		for aggregateKey[i] != ':' {
			n = n*10 + int(aggregateKey[i]-'0')
			i++
		}
		i += 1 + n
	}
	return aggregateKey[:i]
}

// Correlation returns the correlation key of an aggregate key: aggregateKey
// prefixed with [AggregatePrefix], so it never equals a key from [Event].
func Correlation(aggregateKey string) string {
	return AggregatePrefix + aggregateKey
}

// Join returns the length-prefixed encoding of fields after prefix.
func Join(prefix string, fields ...string) string {
	return join(prefix, fields...)
}

func join(prefix string, fields ...string) string {
	n := len(prefix)
	for _, f := range fields {
		n += decimalLen(len(f)) + 1 + len(f)
	}
	if n == 0 {
		return ""
	}
	b := make([]byte, n)
	i := copy(b, prefix)
	for _, f := range fields {
		i += putDecimal(b[i:], len(f))
		b[i] = ':'
		i++
		i += copy(b[i:], f)
	}
	// b is never written again: share its bytes, as strings.Builder does.
	return unsafe.String(&b[0], n)
}

// Split decodes a key made by [Join] with an empty prefix. ok is false if s
// is not such a key.
func Split(s string) (fields []string, ok bool) {
	for len(s) > 0 {
		i := strings.IndexByte(s, ':')
		if i <= 0 {
			return nil, false
		}
		n := 0
		for _, c := range s[:i] {
			if c < '0' || c > '9' || n > len(s) {
				return nil, false
			}
			n = n*10 + int(c-'0')
		}
		s = s[i+1:]
		if n > len(s) {
			return nil, false
		}
		fields = append(fields, s[:n])
		s = s[n:]
	}
	return fields, true
}

func decimalLen(n int) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}

// putDecimal writes n in decimal at the start of b, which has room for it,
// and returns the number of bytes written.
func putDecimal(b []byte, n int) int {
	if n < 10 {
		b[0] = byte('0' + n)
		return 1
	}
	d := decimalLen(n)
	for i := d - 1; i >= 0; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return d
}

package correlator

import (
	"strconv"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// appendPatch appends the strategic-merge patch that client-go computes for
// a repeated event, without computing it: client-go marshals the event
// twice (once with Count 0, LastTimestamp at the Unix epoch and an empty
// Message, once as it is) and diffs the two documents, which can only
// differ in those three fields. The diff is therefore a JSON object with,
// in encoding/json's sorted key order:
//
//   - "count": the count, absent if it is 0 (omitempty on both sides);
//   - "lastTimestamp": the time as metav1.Time marshals it (RFC 3339 in UTC,
//     whole seconds), null for the zero time, absent if it marshals like
//     the epoch;
//   - "message": the message, absent if empty, as encoding/json writes a
//     string that went through one marshal/unmarshal round trip (invalid
//     UTF-8 bytes become U+FFFD; <, >, &, U+2028, U+2029 and control
//     characters are escaped).
//
// The fuzz and differential tests check the bytes against client-go's.
func appendPatch(dst []byte, count int32, last metav1.Time, message string) []byte {
	dst = append(dst, '{')
	sep := false
	if count != 0 {
		dst = append(dst, `"count":`...)
		dst = strconv.AppendInt(dst, int64(count), 10)
		sep = true
	}
	switch {
	case last.IsZero():
		if sep {
			dst = append(dst, ',')
		}
		dst = append(dst, `"lastTimestamp":null`...)
		sep = true
	case last.Unix() != 0: // the epoch second marshals like the old document
		if sep {
			dst = append(dst, ',')
		}
		dst = append(dst, `"lastTimestamp":"`...)
		dst = last.UTC().AppendFormat(dst, time.RFC3339)
		dst = append(dst, '"')
		sep = true
	}
	if message != "" {
		if sep {
			dst = append(dst, ',')
		}
		dst = append(dst, `"message":`...)
		dst = appendJSONString(dst, message)
	}
	return append(dst, '}')
}

// patchSize is a capacity hint for appendPatch.
func patchSize(message string) int {
	return len(`{"count":-2147483648,"lastTimestamp":"2006-01-02T15:04:05Z","message":""}`) + len(message) + 8
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as encoding/json.Marshal writes it after s has
// been through a marshal/unmarshal round trip: like encoding/json with
// HTML escaping, except that each invalid UTF-8 byte becomes a literal
// U+FFFD (the first marshal writes \ufffd, the unmarshal decodes it, the
// second marshal writes it as is).
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

package record

import (
	"strconv"
	"sync/atomic"
	"unicode/utf8"
)

// maxNameLength is the longest valid event name (a DNS-1123 subdomain).
const maxNameLength = 253

// nameClock hands out strictly increasing nanosecond stamps for event names,
// so two events get two names even within one nanosecond or with a clock
// that stands still. It is lock-free.
type nameClock struct{ last atomic.Int64 }

func (c *nameClock) next(now int64) int64 {
	for {
		last := c.last.Load()
		n := now
		if n <= last {
			n = last + 1
		}
		if c.last.CompareAndSwap(last, n) {
			return n
		}
	}
}

// eventName returns "<objectName>.<hex stamp>" like client-go, when that is a
// valid DNS-1123 subdomain. Otherwise the object name is made valid
// (lowercased, invalid characters replaced by '-', cut to fit) instead of
// being replaced by a random UUID as client-go does, so the name still says
// which object the event is about.
func eventName(objectName string, stamp int64) string {
	var suffix [17]byte // '.' + up to 16 hex digits
	suffix[0] = '.'
	sfx := strconv.AppendUint(suffix[:1], uint64(stamp), 16)
	if len(objectName)+len(sfx) <= maxNameLength && validSubdomainPrefix(objectName) {
		return objectName + string(sfx)
	}
	return sanitizeName(objectName, maxNameLength-len(sfx)) + string(sfx)
}

func isAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// validSubdomainPrefix reports whether s followed by ".<hex>" is a valid
// DNS-1123 subdomain: labels of [a-z0-9-] separated by single dots, each
// label starting and ending with [a-z0-9]. An empty s is not valid.
func validSubdomainPrefix(s string) bool {
	if s == "" {
		return false
	}
	start := true // at the start of a label
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isAlnum(c):
			start = false
		case c == '-':
			if start {
				return false
			}
		case c == '.':
			if start || s[i-1] == '-' {
				return false
			}
			start = true
		default:
			return false
		}
	}
	return isAlnum(s[len(s)-1])
}

// sanitizeName turns s into a valid subdomain prefix of at most max bytes.
func sanitizeName(s string, max int) string {
	b := make([]byte, 0, min(len(s), max))
	for i := 0; i < len(s) && len(b) < max; i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case isAlnum(c), c == '.', c == '-':
		default:
			c = '-'
		}
		// Each label must start with an alphanumeric character.
		if !isAlnum(c) && (len(b) == 0 || b[len(b)-1] == '.') {
			continue
		}
		// A dot must not follow a dash.
		if c == '.' && b[len(b)-1] == '-' {
			b[len(b)-1] = '.'
			continue
		}
		b = append(b, c)
	}
	for len(b) > 0 && !isAlnum(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return "event"
	}
	return string(b)
}

// truncateMessage cuts msg to at most limit bytes without splitting a UTF-8
// sequence. A limit <= 0 means no limit.
func truncateMessage(msg string, limit int) string {
	if limit <= 0 || len(msg) <= limit {
		return msg
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut]
}

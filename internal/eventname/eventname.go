// Package eventname builds the names of the events herald writes, and cuts
// strings to a byte limit on a UTF-8 boundary ([Valid] makes them valid
// UTF-8 first, as the API server counts them). The recorder (package
// record) and the correlator's combined events (package correlator) both
// use it, so every event name herald builds follows one rule:
//
//   - it is "<object name>.<hex stamp>", like client-go's, when that is a
//     valid DNS-1123 subdomain of at most 253 bytes; otherwise the object
//     name is cleaned up (lowercased, invalid characters replaced by '-',
//     cut to fit) rather than replaced by a random UUID, so the name still
//     says which object the event is about;
//   - the stamp comes from one process-wide source, [Stamp], that never
//     hands out the same value twice: it is the time in nanoseconds, or one
//     more than the last stamp if the clock did not move (a frozen fake
//     clock, two events in one nanosecond, a clock that went back). So no
//     two events built in one process share a name, whichever broadcaster,
//     recorder or correlator built them, and a new event can never be
//     mistaken by the API server for an existing one (AlreadyExists on
//     create, or patches landing on another event).
//
// The package is internal: the name format is client-go's and not API.
package eventname

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// MaxLength is the longest valid event name (a DNS-1123 subdomain).
const MaxLength = 253

// Clock hands out strictly increasing nanosecond stamps. It is lock-free;
// the zero value is ready to use.
type Clock struct{ last atomic.Int64 }

// Next returns now, or one more than the last stamp handed out if that is
// not less than now.
func (c *Clock) Next(now int64) int64 {
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

// process is the one stamp source of the process.
var process Clock

// Stamp returns the next stamp of the process-wide source for an event
// built at now: now in nanoseconds since the Unix epoch, or more if a stamp
// at or after now was already handed out.
func Stamp(now time.Time) int64 { return process.Next(now.UnixNano()) }

// New returns the name of an event about the object named objectName, with
// a stamp from [Stamp] for now.
func New(objectName string, now time.Time) string { return Name(objectName, Stamp(now)) }

// Name returns "<objectName>.<hex stamp>" like client-go, when that is a
// valid DNS-1123 subdomain of at most [MaxLength] bytes. Otherwise the
// object name is made valid (lowercased, invalid characters replaced by
// '-', cut to fit) instead of being replaced by a random UUID as client-go
// does. The result is always a valid DNS-1123 subdomain.
func Name(objectName string, stamp int64) string {
	var suffix [17]byte // '.' + up to 16 hex digits
	suffix[0] = '.'
	sfx := strconv.AppendUint(suffix[:1], uint64(stamp), 16)
	if len(objectName)+len(sfx) <= MaxLength && validSubdomainPrefix(objectName) {
		return objectName + string(sfx)
	}
	return sanitize(objectName, MaxLength-len(sfx)) + string(sfx)
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

// sanitize turns s into a valid subdomain prefix of at most max bytes.
func sanitize(s string, max int) string {
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
		// A label must end with an alphanumeric character: drop the dashes
		// before a dot, and the dot if the label is then empty.
		if c == '.' {
			for len(b) > 0 && b[len(b)-1] == '-' {
				b = b[:len(b)-1]
			}
			if len(b) == 0 || b[len(b)-1] == '.' {
				continue
			}
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

// Truncate cuts s to at most limit bytes without splitting a UTF-8
// sequence: if the cut falls inside a valid multi-byte character, that
// character goes. Invalid bytes are cut like single bytes, so an invalid
// string is never cut by more than the limit asks. A limit <= 0 means no
// limit. It does not allocate.
func Truncate(s string, limit int) string {
	if limit <= 0 || len(s) <= limit {
		return s
	}
	// Look back for the first byte of the character s[limit] belongs to.
	for start := limit; start >= 0 && start > limit-utf8.UTFMax; start-- {
		if !utf8.RuneStart(s[start]) {
			continue
		}
		if start < limit {
			r, size := utf8.DecodeRuneInString(s[start:])
			if (r != utf8.RuneError || size > 1) && start+size > limit {
				return s[:start]
			}
		}
		break
	}
	return s[:limit]
}

// replacement is what [Valid] puts in place of each run of invalid bytes:
// U+FFFD, as strings.ToValidUTF8 with "\uFFFD" (encoding/json writes one
// per invalid byte).
const replacement = "\uFFFD"

// Valid returns s as the API server receives and counts it, cut to at most
// limit bytes: valid UTF-8 first (each run of invalid bytes replaced by
// U+FFFD, as strings.ToValidUTF8 does), then cut on a rune boundary to at
// most limit bytes of that valid string. encoding/json leaves a valid string
// as it is (escapes decode to the same bytes), so what the server decodes
// and checks against its limit is exactly the result. Cutting an invalid
// string by bytes first would not do: JSON turns each invalid byte into
// U+FFFD, three bytes, so a note cut to 1,024 bytes could arrive with up to
// 3,072 and be refused.
//
// A limit <= 0 means no limit. It allocates only when the part it keeps
// holds invalid bytes; for valid strings it costs what [Truncate] costs plus
// a scan of at most limit bytes.
func Valid(s string, limit int) string {
	t := Truncate(s, limit)
	if utf8.ValidString(t) {
		// t ends on a rune boundary of s and is valid, so it is the
		// start of s made valid, and the next rune (or U+FFFD) of that
		// would not fit: Truncate cut there.
		return t
	}
	if limit <= 0 {
		return strings.ToValidUTF8(s, replacement)
	}
	var b strings.Builder
	b.Grow(min(len(s), limit))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || size > 1 {
			if b.Len()+size > limit {
				break
			}
			b.WriteString(s[i : i+size])
			i += size
			continue
		}
		// A run of invalid bytes: one U+FFFD.
		if b.Len()+len(replacement) > limit {
			break
		}
		b.WriteString(replacement)
		for i++; i < len(s); i++ {
			if r, size := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || size > 1 {
				break
			}
		}
	}
	return b.String()
}

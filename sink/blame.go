package sink

import "time"

// whose is the verdict on a failed write: who waits for it.
type whose int

const (
	// byKey: the key's own failure (a webhook refusing it, a limit of its
	// object or namespace): it backs off alone, charged a try.
	byKey whose = iota
	// byShedding: the server sheds load (429 with Retry-After) while it
	// accepts other writes: the rate is cut and the key is held for the
	// Retry-After, not charged.
	byShedding
	// byServer: the server fails for everyone: every key waits behind
	// one probe, none is charged.
	byServer
)

// maxAlone bounds the namespaces remembered as failing alone.
const maxAlone = 256

// blame keeps the evidence that decides whose a 5xx or a 429 without
// Retry-After is (the rule is in the package documentation). It is part of
// sched and guarded likewise.
type blame struct {
	// lastOK is when the server last answered a write (stored it or
	// refused it for a reason of the event's own).
	lastOK time.Time
	// suspects are the distinct keys that failed since lastOK with no
	// evidence either way. Two of them, from two namespaces (or from one
	// when no other namespace has writes ready), make the failure the
	// server's.
	suspects []*entry
	// alone holds the namespaces whose keys failed while the server
	// answered a key of another namespace: a failure there is the key's
	// until a key of that namespace is answered again.
	alone map[string]struct{}
}

func (b *blame) init() { b.alone = map[string]struct{}{} }

// suspect reports whether writes of namespace ns have failed since the last
// answer, or fail alone.
func (b *blame) suspect(ns string) bool {
	if _, ok := b.alone[ns]; ok {
		return true
	}
	for _, en := range b.suspects {
		if en.ns == ns {
			return true
		}
	}
	return false
}

// success records that the server answered a write of namespace ns. When
// the server was seen up (up), the suspects of other namespaces failed
// while it answered: their namespaces fail alone. An answer to a probe
// after an outage says only that the server is back.
func (b *blame) success(ns string, up bool, now time.Time) {
	b.lastOK = now
	delete(b.alone, ns)
	if up {
		for _, en := range b.suspects {
			if en.ns == ns {
				continue
			}
			if len(b.alone) >= maxAlone {
				clear(b.alone)
			}
			b.alone[en.ns] = struct{}{}
		}
	}
	for _, en := range b.suspects {
		en.suspectTries = 0 // the server answered meanwhile: the charges stand
	}
	clear(b.suspects)
	b.suspects = b.suspects[:0]
}

// suspected reports whether en is among the suspects.
func (b *blame) suspected(en *entry) bool {
	for _, s := range b.suspects {
		if s == en {
			return true
		}
	}
	return false
}

// note records that en failed for a reason already judged the server's, so
// that the probe is chosen elsewhere.
func (b *blame) note(en *entry) {
	for _, s := range b.suspects {
		if s == en {
			return
		}
	}
	b.suspects = append(b.suspects, en)
}

// failure judges a failed write of en sent at sentAt, while the server is
// seen up: a 5xx or a 429 without Retry-After, or, with transport, no
// answer at all. others reports whether keys of another namespace than
// en's have writes ready. On byServer it returns the keys charged before
// for what turns out to be the server's failure, whose tries are to be
// refunded.
func (b *blame) failure(en *entry, sentAt time.Time, transport bool, others func(ns string) bool) (whose, []*entry) {
	if _, ok := b.alone[en.ns]; ok {
		return byKey, nil // its namespace fails alone
	}
	if b.lastOK.After(sentAt) || (!en.failedAt.IsZero() && b.lastOK.After(en.failedAt)) {
		// Others were answered while it was under way, or since its own
		// last failure: the server works, this key does not.
		return byKey, nil
	}
	spread, seen := false, false
	for _, s := range b.suspects {
		if s == en {
			seen = true
		} else {
			spread = spread || s.ns != en.ns
		}
	}
	if !seen {
		b.suspects = append(b.suspects, en)
	}
	charged := b.suspects
	if !seen {
		charged = charged[:len(charged)-1]
	}
	switch {
	case transport:
		// No answer, and none to anyone since it was sent.
		return byServer, charged
	case len(b.suspects) < 2, !spread && others(en.ns):
		// One key, or keys of one namespace while others wait to be
		// tried: its own until they tell otherwise.
		return byKey, nil
	}
	return byServer, charged
}

// Package sink writes Events to the Kubernetes API server.
//
// It holds two things:
//
//   - [EventSink], the interface client-go's tools/record writes through. Its
//     method set is client-go's, so client-go's own *typedcorev1.EventSinkImpl
//     satisfies it. [ContextEventSink] adds context-taking variants that let a
//     deadline or a shutdown cancel a request in flight; herald's [EventSinkImpl]
//     implements both, and [NewForConfig] builds one with an events client of
//     its own.
//   - [Engine], the delivery engine, with its [Options] and [Stats]. It sorts
//     the errors a sink returns into retried (transport errors, timeouts,
//     408, 5xx, 429), Create on Patch NotFound, and permanent drops
//     (AlreadyExists, namespace terminating, Forbidden, other 4xx, etcd's
//     500 for an event over its size limit, a request that cannot be built,
//     a sink that panics or returns nonsense), counted by reason in [Drops].
//     A 401 is tried once more at once before its drop: client-go's
//     transport refreshes its credentials on one.
//
// Most users never touch this package directly: record.EventBroadcaster's
// StartRecordingToSink builds an Engine around the sink it is given. What
// they choose is the sink: [NewForConfig] (recommended: herald's writes get
// a client and a budget of their own) or an [EventSinkImpl] over the
// controller's clientset.
//
// # The engine
//
// The engine keeps, per correlation key, the writes waiting (the newest
// state of each event: repeats of an event that is still waiting are
// coalesced into one write carrying the latest count; a new event of the
// same key waits behind as a write of its own, so no count is lost). A
// dispatcher hands keys to several workers, oldest first, never one key to
// two workers at once, so the count stored in the API server only grows.
//
// # Whose failure is it
//
// A failed write may be the server's failure or its event's: the same 500
// comes from an API server whose etcd is gone and from a validating webhook
// that refuses every event of one namespace. The engine decides by
// evidence, not by the status code alone, and one rule, here, says how:
//
//	signal                                            whose      what happens
//	------------------------------------------------  ---------  ------------------------------------------
//	transport error, client timeout, 503, 504, an     server     every key waits behind one probe
//	  error the engine cannot read, with nothing
//	  answered since it was sent nor within
//	  BaseDelay before
//	the probe fails                                   server     the probe's backoff grows
//	any failure but a 429 with Retry-After, while     the key    the key backs off alone (BaseDelay·2^n up
//	  another write was answered since it was sent    (and its     to MaxDelay, or the Retry-After), charged
//	  or since the key last failed, or in a           namespace)   a try, dropped after MaxTries as
//	  namespace seen failing while others are                      retries_exhausted; nobody else waits and
//	  answered                                                     the rate is not cut
//	5xx, 429 without Retry-After, or no answer, of a  server     every key waits behind one probe; the
//	  second distinct key with no answer in between                tries charged to the first are refunded
//	  (of a second namespace, or of the only
//	  namespace with writes ready)
//	the first 5xx or 429 without Retry-After, or no   the key    as for the key, until a second key says
//	  answer within BaseDelay of another answer,                   otherwise
//	  with no evidence yet
//	429 with Retry-After while another write was      shedding   the rate is cut (once per Retry-After),
//	  answered within two Retry-Afters (at least 2 s)              the key is held for the Retry-After and
//	                                                               yields its place in the age order by
//	                                                               as long (it goes earlier if it is the
//	                                                               oldest waiting even so), never charged
//	429 with Retry-After, nothing answered lately     server     an outage answered 429: one probe after
//	                                                               the Retry-After, never charged
//	404 on a patch                                    the event  created instead
//	AlreadyExists, Forbidden, other 4xx, namespace    the event  dropped, counted by reason (an
//	  terminating, etcd's 500 "request is too                      AlreadyExists answering the retry of a
//	  large", a sink that panics or answers                        create whose answer was lost is the
//	  nonsense                                                     event written, and counted so; a 401
//	                                                               is tried once more at once first)
//
// "Answered" means the server stored a write or refused it for a reason of
// the event's own. The probe that goes while the server is seen down is an
// event that has not just failed, of a namespace that has not failed since
// the last answer, where one waits: a key refused for reasons of its own
// never keeps the server looking down for the others. The first answer to
// a probe releases every key at once, through the write budget. While the
// server is down, events wait however long it lasts (MaxPending bounds
// them). A 429 without Retry-After is what the EventRateLimit admission
// plugin answers for one object, user or namespace over its limit; a 429
// with Retry-After is what priority and fairness and max-in-flight answer
// when the server sheds load.
//
// Writes go through a token bucket (Options.QPS and Burst, 50/s and 100 by
// default; every request takes a token, the probe too, and one that fails
// other than with a 429 gives it back: the limit is of writes answered,
// and one event's failures cost the others nothing) whose rate adapts to
// what the server says, as TCP's congestion window does to losses and
// delay. A server that shows no load (flat round trips, no 429) gets the
// configured rate and burst from the first instant, after an outage too.
// The signals the engine reads and what it does with each (w, the weight,
// is how much waiting the engine carries, from 0.25 to 3: the summed ages
// of its pending events over 100 event-seconds; a round is a second, the
// Retry-After a 429 carries by default):
//
//	the server says                            the engine
//	429, while it stores other writes          cuts the rate to 0.6 x min(rate, share), once a round;
//	                                             for a key refused again only once the server has
//	                                             shed over 0.4 of the engine's requests in about a
//	                                             minute (one cut no longer brings a fleet back)
//	429 to everything                          waits the Retry-After, resumes at 2w writes/s, slow-starts
//	round trips of the last 1-2 s all past     trims the rate, never below 0.6 x share, once a
//	  T x usual (T: Workers, at least 2)         round: to share x (1-g)/(1+g) if the queue grew
//	                                             g s/s past usual/s in the last round (none if
//	                                             it stands or grows more slowly);
//	                                             within a minute of a 429, to share x T x usual /
//	                                             round trip
//	then the queue stops growing (or is gone,    the rate returns to where it was before the trims
//	  after a 429)                               over a round or two
//	the round trips of the writes under way    keeps no more under way than carry the rate at
//	                                             T x usual (n writes at a round trip u carry n/u
//	                                             a second), at least one; a write overtaken by a
//	                                             later one, or out for a round, no longer counts
//	failures other than 429 to everything      is down: one probe per backoff step, sooner
//	                                             with many events waiting (below); back,
//	                                             goes on at its rate and burst
//	a failure of one key, others stored        that key backs off alone, its token given back
//	nothing, writes held back by the rate      the rate grows by 0.5 w^1.5 + 10% of it per second
//	nothing, after idling within a minute      restarts from 2w writes/s (idle >= 1 s) or from
//	  of a 429 or an outage                      the rate halved per idle second
//
// share is the engine's recent successful writes per second (or 0.8 of
// what it sent, if more); usual is the least round trip of about the last
// minute. The least round trip of a round, not the mean, tells of a queue:
// a queue at the server (priority and fairness, a slow etcd) delays every
// write, while a webhook slow in one namespace or the jitter of the network
// leaves some quick. T is the most the engine's own writes under way can
// stretch a round trip at a server serving one at a time. A queue that
// grows is fed faster than it is served (by 1+g for a growth of g s/s), a
// queue that stands is the server busy: until the server refuses a write
// only the growth trims, after a 429 the level does as well. For two seconds
// after an outage, the window of writes under way grows by one per 25 ms
// and a first 429 cuts to 2w writes/s, so that a fleet coming back together
// meets about one 429 per engine. Engines whose events have waited longest
// grow faster, resume higher and come back first after a Retry-After, so
// that a fleet drains a shared backlog about oldest first. In-flight
// writes are bounded by a window that starts at one and falls back to one
// after a server-wide failure. Many engines writing to one server then
// converge to its capacity instead of offering a multiple of it, where
// each one's share is a few writes a second or more (with less, or with
// large backlogs, the growth outruns the cuts, and the fleet offers two to
// five times the capacity: docs/measurements.md), and
// send about one probe each per backoff step while it is down. An engine
// that holds many events probes sooner than its backoff: after an outage of
// length t, probes d apart cost about t/d requests over as much again and
// make its n waiting events wait d/2 more each, and at 60 event-seconds a
// request their sum is least at d = √(2·60·t/n), never below BaseDelay
// (the square-root law of checkpoint intervals). Engines holding a few
// dozen events keep the backoff; a lone one holding 1,500 finds the end of
// a 3 s outage within about half a second. [Stats] shows
// the server state (healthy, shedding, probing), the current rate, its
// cuts, the events held back and the age of the oldest pending event.
//
// The engine limits its rate first and its concurrency second. A rate is
// what the user configures (QPS, as client-go's), what the API server's
// limits are made of (priority and fairness's seats per second, a token
// bucket) and what a fleet must share: with writes of a few milliseconds a
// concurrency limit of one is already hundreds of writes a second, too
// coarse to divide a server among a hundred controllers. The writes under
// way follow the rate: no more than carry it at T times the usual round
// trip (one, at 50 writes/s and round trips under 10 ms), so that a server
// that queues slows them at once, and a fleet whose demand steps up
// together fills its queue with about one write each, not one per worker.
// The window of writes under way (at most Workers) bounds the requests one
// engine has out when the server stops answering.
//
// A key interval (the events package's series interval; none for core/v1
// events) spaces the writes of each key: a hot
// series (one event repeated many times a second) is then written at most
// once per interval, counted from when the key's previous write was sent,
// its newest state carrying the repeats in between. Other keys are not
// delayed, a retry after a server-wide failure is timed by the backoff
// alone, and a Flush writes what it waits for at once.
//
// # Contract
//
// Add never blocks: when MaxPending writes are already waiting, a new one is
// dropped and counted (a repeat of a waiting event still coalesces). Every
// event given to Add ends counted in exactly one of Stats' buckets. Stop
// returns by its context's deadline (plus 100 ms) whatever the sink does;
// a write still stuck then is counted as abandoned, and only its goroutine
// stays until the sink call returns.
package sink

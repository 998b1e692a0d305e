// The workers: one write (Create, or Patch falling back to Create), its
// outcome handed to the scheduler, and the drops counted and logged.

package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/internal/hook"
)

func (e *Engine) worker() {
	defer e.wg.Done()
	for t := range e.work {
		e.run(t)
	}
}

// run writes one task and records its outcome.
func (e *Engine) run(t *task) {
	ctx := e.ctx
	var out *v1.Event
	err := ctx.Err()
	if err == nil {
		err = checkRequest(t.it)
	}
	refreshed, sent := false, false
	if err == nil {
		sent = true
		out, err = e.write(ctx, t.it)
		if apierrors.IsUnauthorized(err) && ctx.Err() == nil {
			// client-go's transport refreshes its credentials on a 401
			// (exec plugins, token files): the request said nothing of the
			// event. One more try at once, with the new credentials,
			// before the drop.
			e.logger.V(4).Info("Event write unauthorized, will retry once with refreshed credentials",
				"event", klog.KObj(t.it.ev), "err", err)
			refreshed = true
			out, err = e.write(ctx, t.it)
		}
		var bad *errBadRequest
		switch {
		case errors.As(err, &bad):
			sent = false // refused by the sink before any request (checkNamespace)
		case errors.Is(err, hook.ErrNotSent):
			// The sink stands for a state stored already: written, but
			// no request went.
			out, err, sent = t.it.ev, nil, false
		}
	}
	var (
		r      result
		reason dropReason
	)
	switch {
	case err == nil:
		r.out = outWritten
	case isCancel(ctx, err):
		r.out = outAbandoned
	default:
		cl := classify(err, !t.it.create)
		if cl.errClass == classDrop {
			r.out, reason = outDropped, cl.Reason
		} else { // Retry (CreateInstead was handled by write)
			r = result{out: outFailed, fault: faultOf(err, cl), retryAfter: cl.RetryAfter}
		}
	}
	r.unsent = !sent
	res := r.out

	if res == outWritten && e.opts.OnWritten != nil {
		// Before the waiters are released: a Flush that returns has fed
		// the correlator. And before the key's next write can go (finish
		// below), so that the correlator sees the key's writes in order.
		// A Stop that gives up meanwhile counts the write as what it is.
		e.mu.Lock()
		t.stored = !t.abandoned
		e.mu.Unlock()
		e.callOnWritten(t.en.key, t.it.ev, out)
	}

	e.mu.Lock()
	if t.abandoned {
		// Stop counted it already: written if stored was set in time,
		// abandoned otherwise.
		e.mu.Unlock()
		if res != outAbandoned && !t.stored {
			e.logger.V(2).Info("Event write returned after the engine stopped; it was counted as abandoned",
				"event", klog.KObj(t.it.ev), "err", err)
		}
		return
	}
	now := e.opts.Clock.Now()
	e.c.inFlight -= t.it.n
	if refreshed {
		e.c.retried++
	}
	v := e.s.finish(t, r, now)
	requeued, exhausted := v == vRetry, v == vExhausted
	var total int64
	switch {
	case requeued:
		e.c.retried++
	case exhausted:
		reason = dropRetriesExhausted
		total = e.c.drop(reason, t.it.n)
	case res == outWritten:
		e.c.written(t.it)
	case res == outDropped:
		total = e.c.drop(reason, t.it.n)
	case res == outAbandoned:
		e.c.abandoned += t.it.n
	}
	if !requeued {
		// Counted before the waiters are released, so that a Flush that
		// returns sees the outcome in Stats.
		releaseAll(t.it)
	}
	e.idle++
	e.mu.Unlock()
	e.poke()

	switch {
	case requeued:
		e.logger.V(4).Info("Event write failed, will retry", "event", klog.KObj(t.it.ev), "object", objectRef(t.it.ev),
			"reason", t.it.ev.Reason, "probe", t.probe, "err", err)
	case exhausted, res == outDropped:
		e.logDrop(reason, t.it.ev, t.it.n, total, err)
	}
}

// callOnWritten runs the user's callback; a panic in it is logged, not
// fatal (the write itself succeeded and is counted).
func (e *Engine) callOnWritten(key string, sent, out *v1.Event) {
	defer func() {
		if r := recover(); r != nil {
			e.logger.Error(fmt.Errorf("panic: %v", r), "OnWritten callback panicked", "event", klog.KObj(out))
		}
	}()
	e.opts.OnWritten(key, sent, out)
}

// errSinkPanicked wraps the value of a panic in a sink call.
var errSinkPanicked = errors.New("sink: EventSink panicked")

// write sends it to the sink: Create, or Patch falling back to Create when
// the event is gone. On a fallback it.create becomes true. A panic in the
// sink becomes an error.
func (e *Engine) write(ctx context.Context, it *item) (out *v1.Event, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("%w: %v", errSinkPanicked, r)
		}
	}()
	rctx, cancel := context.WithTimeout(ctx, e.opts.RequestTimeout)
	defer cancel()
	if !it.create {
		out, err = patch(rctx, e.sink, it.ev, it.patch)
		if !gone(err) {
			return checkResponse(out, err)
		}
		it.create = true
	}
	ev := *it.ev // the sink may keep what it is given; never hand it our copy's RV
	ev.ResourceVersion = ""
	out, err = create(rctx, e.sink, &ev)
	switch {
	case !apierrors.IsAlreadyExists(err):
	case len(it.patch) > 0:
		// A create that carries later states (its answer was lost, then
		// repeats were merged into the retry): the event is there, so the
		// patch brings it to the newest state.
		it.create = false
		out, err = patch(rctx, e.sink, it.ev, it.patch)
		if gone(err) {
			// Gone between the two requests (its time to live ran
			// out): created anew, once. A patch's 404 must not leave
			// here, where it would read as a 5xx of the server's.
			it.create = true
			out, err = create(rctx, e.sink, &ev)
		}
	case it.sent:
		// An earlier try stored it and its answer was lost: the event the
		// server has is this one (event names are unique), so it is
		// written.
		out, err = &ev, nil
	}
	return checkResponse(out, err)
}

// gone reports whether a patch's error says the event is not on the server
// (it is then created instead).
func gone(err error) bool {
	return err != nil && classify(err, true).errClass == classCreateInstead
}

// checkResponse turns a success without a stored event (nil, or without a
// name) into errBadResponse.
func checkResponse(out *v1.Event, err error) (*v1.Event, error) {
	if err == nil && (out == nil || out.Name == "") {
		return nil, errBadResponse
	}
	return out, err
}

// errBadRequest marks a request the client could not even build: it would
// fail the same way every time.
type errBadRequest struct{ msg string }

func (e *errBadRequest) Error() string { return "sink: cannot build the request: " + e.msg }

// checkRequest refuses, before any request, what client-go could not put
// in a request path (a namespace or a name that is not a valid path
// segment, no name for a patch), so that such events are dropped at once as
// rejected instead of retried. What is merely invalid for the API server is
// left to it (a 4xx, dropped too).
func checkRequest(it *item) error {
	ev := it.ev
	if ev.Namespace != "" {
		if errs := validation.IsDNS1123Label(ev.Namespace); len(errs) > 0 {
			return &errBadRequest{fmt.Sprintf("invalid namespace %q: %v", ev.Namespace, errs)}
		}
	}
	if ev.Name == "" {
		if !it.create {
			return &errBadRequest{"a patch needs the event's name"}
		}
		return nil
	}
	if errs := pathSegmentProblems(ev.Name); len(errs) > 0 {
		return &errBadRequest{fmt.Sprintf("invalid event name %q: %v", ev.Name, errs)}
	}
	return nil
}

// pathSegmentProblems returns why name cannot be a segment of a request
// path (the rule of apimachinery's path segment names, which client-go
// applies when it builds a request), or nothing.
func pathSegmentProblems(name string) []string {
	if name == "." || name == ".." {
		return []string{fmt.Sprintf("may not be '%s'", name)}
	}
	var errs []string
	for _, c := range []string{"/", "%"} {
		if strings.Contains(name, c) {
			errs = append(errs, fmt.Sprintf("may not contain '%s'", c))
		}
	}
	return errs
}

// countDrop counts n events dropped for reason outside a write, and logs.
func (e *Engine) countDrop(reason dropReason, ev *v1.Event, n int64, err error) {
	e.mu.Lock()
	total := e.c.drop(reason, n)
	e.mu.Unlock()
	e.logDrop(reason, ev, n, total, err)
}

// logDrop logs n events dropped for reason (total so far). AlreadyExists
// and namespace-terminating drops are expected in normal operation and go
// to V(5), as in client-go; the others are logged at error level once per
// reason and ratelog.Interval, and the first of each reason in each
// namespace too (a noisy refusal in one namespace must not hide a new one
// in another), else at V(4).
func (e *Engine) logDrop(reason dropReason, ev *v1.Event, n, total int64, err error) {
	e.mu.Lock()
	logger := e.logger
	first := false
	quiet := reason == dropAlreadyExists || reason == dropNamespaceTerminating
	if ev != nil && !quiet && len(e.loudFirst) < maxLoudFirst {
		k := loudKey{reason, ev.Namespace}
		if _, seen := e.loudFirst[k]; !seen {
			if e.loudFirst == nil {
				e.loudFirst = map[loudKey]struct{}{}
			}
			e.loudFirst[k], first = struct{}{}, true
		}
	}
	e.mu.Unlock()
	kv := []any{"dropReason", string(reason), "events", n, "droppedForReason", total}
	if ev != nil {
		kv = append(kv, "event", klog.KObj(ev), "object", objectRef(ev), "eventReason", ev.Reason)
	}
	switch {
	case quiet:
		logger.V(5).Info("Server rejected event (will not retry!)", append(kv, "err", err)...)
	case e.drops.Allow(reasonIndex(reason), e.opts.Clock.Now()) || first:
		logger.Error(err, "Dropped event, will not retry", kv...)
	default:
		logger.V(4).Info("Dropped event, will not retry", append(kv, "err", err)...)
	}
}

// loudKey is a drop reason in a namespace.
type loudKey struct {
	reason    dropReason
	namespace string
}

// maxLoudFirst bounds the reason and namespace pairs logDrop remembers: past
// it, a namespace's first drop of a reason is logged as every other drop.
const maxLoudFirst = 1024

func objectRef(ev *v1.Event) klog.ObjectRef {
	return klog.KRef(ev.InvolvedObject.Namespace, ev.InvolvedObject.Name)
}

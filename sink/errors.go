package sink

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
)

// dropReason says why an event was given up. The values are stable: they
// are the "reason" label of herald's metrics.
type dropReason string

// The reasons an event is dropped for, by their metric labels (the fields
// of [Drops] say what each means). The first five are counted by a
// broadcaster, the others by the engine.
const (
	dropInvalid            dropReason = "invalid"
	dropQueueFull          dropReason = "queue_full"
	dropWatcherFull        dropReason = "watcher_full"
	dropAfterShutdown      dropReason = "after_shutdown"
	dropCorrelatorPanicked dropReason = "correlator_panicked"

	// dropAlreadyExists: Create answered AlreadyExists.
	dropAlreadyExists dropReason = "already_exists"
	// dropNamespaceTerminating: the event's namespace is being deleted.
	dropNamespaceTerminating dropReason = "namespace_terminating"
	// dropForbidden: the API server refused the write (RBAC).
	dropForbidden dropReason = "forbidden"
	// dropRejected: any other 4xx (invalid event, too large, bad request),
	// etcd's 500 for a value over its limit, or a request that could not
	// be built.
	dropRejected dropReason = "rejected"
	// dropBadResponse: the sink returned no event and no error.
	dropBadResponse dropReason = "bad_response"
	// dropRetriesExhausted: the key's own writes failed MaxTries times in a
	// row.
	dropRetriesExhausted dropReason = "retries_exhausted"
	// dropPendingFull: MaxPending writes were already waiting.
	dropPendingFull dropReason = "pending_full"
	// dropNilEvent: Add was called with a nil event.
	dropNilEvent dropReason = "nil_event"
	// dropSinkPanicked: the EventSink panicked during the write.
	dropSinkPanicked dropReason = "sink_panicked"
)

// errBadResponse is the error the engine reports for a sink that returned a
// nil event and a nil error.
var errBadResponse = errors.New("sink: sink returned no event and no error")

// errClass is what the engine does with an error.
type errClass int

const (
	// Retry the write later, with backoff (transport errors, 408, 5xx,
	// 429, timeouts, unknown errors).
	classRetry errClass = iota
	// A Patch found no event to patch: Create it instead.
	classCreateInstead
	// Drop the event for good; the reason says why.
	classDrop
)

// classification is the verdict of classify on one error.
type classification struct {
	errClass errClass
	// Reason is set when errClass is classDrop.
	Reason dropReason
	// RetryAfter is the delay the server asked for (429, 503 with
	// Retry-After), or zero.
	RetryAfter time.Duration
	// Overload reports a 429: the server is shedding load, and the
	// engine's adaptive write rate is cut.
	Overload bool
}

// classify sorts an error returned by an EventSink write. patching tells
// whether the failed call was a Patch (only a Patch's NotFound means
// "create it instead"; a Create's NotFound means the namespace is missing).
//
// Transport errors, timeouts, 408, 5xx and 429 are retried; 429 and 5xx carry the
// server's Retry-After. AlreadyExists, Forbidden (including namespace
// terminating), every other 4xx, etcd's 500 for an event larger than it
// stores (the same answer at every try), a StatusError without an HTTP code, a
// request the client cannot build, a sink that panicked and a success
// without an event are permanent. Errors of unknown types are retried, like
// client-go does.
func classify(err error, patching bool) classification {
	if errors.Is(err, errBadResponse) {
		return classification{errClass: classDrop, Reason: dropBadResponse}
	}
	if errors.Is(err, errSinkPanicked) {
		return classification{errClass: classDrop, Reason: dropSinkPanicked}
	}
	var rce *rest.RequestConstructionError
	var bad *errBadRequest
	if errors.As(err, &rce) || errors.As(err, &bad) {
		return classification{errClass: classDrop, Reason: dropRejected}
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		// Transport errors, context deadlines, UnexpectedObjectError and
		// anything else we cannot read: the write may work next time.
		return classification{errClass: classRetry}
	}
	code := int(status.Status().Code)
	switch {
	case apierrors.IsNotFound(err) && patching:
		return classification{errClass: classCreateInstead}
	case apierrors.IsAlreadyExists(err):
		return classification{errClass: classDrop, Reason: dropAlreadyExists}
	case apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause):
		return classification{errClass: classDrop, Reason: dropNamespaceTerminating}
	case apierrors.IsForbidden(err):
		return classification{errClass: classDrop, Reason: dropForbidden}
	case code >= 500 && tooLarge(status.Status().Message):
		// etcd refused the event as larger than it stores (1.5 MiB by
		// default): every retry gets the same 500.
		return classification{errClass: classDrop, Reason: dropRejected}
	case code == http.StatusTooManyRequests, code >= 500, code == http.StatusRequestTimeout:
		after, _ := apierrors.SuggestsClientDelay(err)
		return classification{errClass: classRetry, RetryAfter: time.Duration(after) * time.Second, Overload: code == http.StatusTooManyRequests}
	default:
		return classification{errClass: classDrop, Reason: dropRejected}
	}
}

// tooLarge reports whether a 5xx's message is etcd's refusal of an object
// over its size limit, as the API server passes it on: etcd's own
// ErrRequestTooLarge, or its gRPC client's refusal to send so large a
// request.
func tooLarge(msg string) bool {
	return strings.Contains(msg, "etcdserver: request is too large") ||
		strings.Contains(msg, "trying to send message larger than max")
}

// faultOf tells what kind of failure a retried error is, for blame: a
// 429 with or without Retry-After, another answer of the server (500 and
// the other 5xx, 408: a webhook, an admission plugin, the server), or as
// good as no answer (a transport error, a timeout, an error of a type the
// engine cannot read, 503 and 504).
func faultOf(err error, cl classification) fault {
	var status apierrors.APIStatus
	switch {
	case cl.Overload && cl.RetryAfter > 0:
		return faultShed
	case cl.Overload:
		return faultLimited
	case !errors.As(err, &status):
		return faultTransport
	}
	switch status.Status().Code {
	case http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		// The server itself (or what stands in front of it) says it is
		// unavailable: as good as no answer.
		return faultTransport
	}
	return faultStatus
}

// isCancel reports whether err comes from the engine's own context ending,
// in which case the event is abandoned rather than retried.
func isCancel(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ctx.Err()))
}

// String describes the verdict for logs and test failures.
func (c classification) String() string {
	switch c.errClass {
	case classRetry:
		if c.RetryAfter > 0 {
			return fmt.Sprintf("retry after %s", c.RetryAfter)
		}
		return "retry"
	case classCreateInstead:
		return "create instead"
	default:
		return "drop: " + string(c.Reason)
	}
}

func errorf(format string, args ...any) error {
	return fmt.Errorf("sink: "+format, args...)
}

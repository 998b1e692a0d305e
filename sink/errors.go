package sink

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
)

// DropReason says why the engine gave up on an event. The values are stable:
// they are the "reason" label of herald's metrics.
type DropReason string

// The reasons for which the engine drops an event.
const (
	// DropAlreadyExists: Create answered AlreadyExists.
	DropAlreadyExists DropReason = "already_exists"
	// DropNamespaceTerminating: the event's namespace is being deleted.
	DropNamespaceTerminating DropReason = "namespace_terminating"
	// DropForbidden: the API server refused the write (RBAC).
	DropForbidden DropReason = "forbidden"
	// DropRejected: any other 4xx (invalid event, too large, bad request), or
	// a request that could not be built.
	DropRejected DropReason = "rejected"
	// DropBadResponse: the sink returned no event and no error.
	DropBadResponse DropReason = "bad_response"
	// DropRetriesExhausted: the write failed MaxTries times in a row.
	DropRetriesExhausted DropReason = "retries_exhausted"
	// DropPendingFull: MaxPending writes were already waiting.
	DropPendingFull DropReason = "pending_full"
	// DropNilEvent: Add was called with a nil event.
	DropNilEvent DropReason = "nil_event"
	// DropSinkPanicked: the EventSink panicked during the write.
	DropSinkPanicked DropReason = "sink_panicked"
)

// ErrBadResponse is the error the engine reports for a sink that returned a
// nil event and a nil error.
var ErrBadResponse = errors.New("sink: sink returned no event and no error")

// Class is what the engine does with an error.
type Class int

const (
	// Retry the write later, with backoff (transport errors, 5xx, 429,
	// timeouts, unknown errors).
	Retry Class = iota
	// CreateInstead: a Patch found no event to patch; Create it.
	CreateInstead
	// Drop the event for good; the DropReason says why.
	Drop
)

// Classification is the verdict of [Classify] on one error.
type Classification struct {
	Class Class
	// Reason is set when Class is Drop.
	Reason DropReason
	// RetryAfter is the delay the server asked for (429, 503 with
	// Retry-After), or zero.
	RetryAfter time.Duration
	// Overload reports a 429: the server is shedding load, and the
	// engine's adaptive write rate is cut.
	Overload bool
}

// Classify sorts an error returned by an EventSink write. patching tells
// whether the failed call was a Patch (only a Patch's NotFound means
// "create it instead"; a Create's NotFound means the namespace is missing).
//
// Transport errors, timeouts, 5xx and 429 are retried; 429 and 5xx carry the
// server's Retry-After. AlreadyExists, Forbidden (including namespace
// terminating), every other 4xx, a StatusError without an HTTP code, a
// request the client cannot build, a sink that panicked and a success
// without an event are permanent. Errors of unknown types are retried, like
// client-go does.
func Classify(err error, patching bool) Classification {
	if errors.Is(err, ErrBadResponse) {
		return Classification{Class: Drop, Reason: DropBadResponse}
	}
	if errors.Is(err, errSinkPanicked) {
		return Classification{Class: Drop, Reason: DropSinkPanicked}
	}
	var rce *rest.RequestConstructionError
	var bad *errBadRequest
	if errors.As(err, &rce) || errors.As(err, &bad) {
		return Classification{Class: Drop, Reason: DropRejected}
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		// Transport errors, context deadlines, UnexpectedObjectError and
		// anything else we cannot read: the write may work next time.
		return Classification{Class: Retry}
	}
	code := int(status.Status().Code)
	switch {
	case apierrors.IsNotFound(err) && patching:
		return Classification{Class: CreateInstead}
	case apierrors.IsAlreadyExists(err):
		return Classification{Class: Drop, Reason: DropAlreadyExists}
	case apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause):
		return Classification{Class: Drop, Reason: DropNamespaceTerminating}
	case apierrors.IsForbidden(err):
		return Classification{Class: Drop, Reason: DropForbidden}
	case code == http.StatusTooManyRequests, code >= 500, code == http.StatusRequestTimeout:
		after, _ := apierrors.SuggestsClientDelay(err)
		return Classification{Class: Retry, RetryAfter: time.Duration(after) * time.Second, Overload: code == http.StatusTooManyRequests}
	default:
		return Classification{Class: Drop, Reason: DropRejected}
	}
}

// faultOf tells what kind of failure a retried error is, for blame: a
// 429 with or without Retry-After, another answer of the server (500 and
// the other 5xx, 408: a webhook, an admission plugin, the server), or as
// good as no answer (a transport error, a timeout, an error of a type the
// engine cannot read, 503 and 504).
func faultOf(err error, cl Classification) fault {
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
func (c Classification) String() string {
	switch c.Class {
	case Retry:
		if c.RetryAfter > 0 {
			return fmt.Sprintf("retry after %s", c.RetryAfter)
		}
		return "retry"
	case CreateInstead:
		return "create instead"
	default:
		return "drop: " + string(c.Reason)
	}
}

func errorf(format string, args ...any) error {
	return fmt.Errorf("sink: "+format, args...)
}

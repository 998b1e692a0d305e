package sink

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestClassify checks the engine's reading of a sink's error: retry (and
// how soon), create instead of patch, or drop for good with its reason.
func TestClassify(t *testing.T) {
	gr := schema.GroupResource{Resource: "events"}
	cases := []struct {
		name     string
		err      error
		patching bool
		class    errClass
		reason   dropReason
		after    time.Duration
	}{
		{"transport", errors.New("dial tcp: connection refused"), false, classRetry, "", 0},
		{"deadline", context.DeadlineExceeded, false, classRetry, "", 0},
		{"500", apierrors.NewInternalError(errors.New("x")), false, classRetry, "", 0},
		// etcd's refusal of a value over its limit (1.5 MiB), as the real
		// kube-apiserver passes it on: the same 500 at every try.
		{"500 too large for etcd", apierrors.NewInternalError(errors.New("etcdserver: request is too large")), false, classDrop, dropRejected, 0},
		{"500 too large for etcd's client", apierrors.NewInternalError(errors.New("rpc error: code = ResourceExhausted desc = trying to send message larger than max (2097390 vs. 2097152)")), true, classDrop, dropRejected, 0},
		{"503", apierrors.NewServiceUnavailable("x"), false, classRetry, "", 0},
		{"429 retry-after", apierrors.NewTooManyRequests("x", 7), false, classRetry, "", 7 * time.Second},
		{"wrapped 429", fmt.Errorf("wrapped: %w", apierrors.NewTooManyRequests("x", 2)), false, classRetry, "", 2 * time.Second},
		// EventRateLimit's refusal: a 429 without Retry-After.
		{"429 without retry-after", apierrors.NewTooManyRequestsError("limit reached on type Namespace for key ns"), false, classRetry, "", 0},
		{"patch 404", apierrors.NewNotFound(gr, "e"), true, classCreateInstead, "", 0},
		{"create 404", apierrors.NewNotFound(gr, "e"), false, classDrop, dropRejected, 0},
		{"409 exists", apierrors.NewAlreadyExists(gr, "e"), false, classDrop, dropAlreadyExists, 0},
		{"403", apierrors.NewForbidden(gr, "e", errors.New("x")), false, classDrop, dropForbidden, 0},
		{"422", apierrors.NewInvalid(schema.GroupKind{Kind: "Event"}, "e", nil), false, classDrop, dropRejected, 0},
		{"413", apierrors.NewRequestEntityTooLargeError("x"), false, classDrop, dropRejected, 0},
		{"bad response", errBadResponse, false, classDrop, dropBadResponse, 0},
		{"generic 504", apierrors.NewGenericServerResponse(http.StatusGatewayTimeout, "post", gr, "e", "", 3, true), false, classRetry, "", 3 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := classify(c.err, c.patching)
			if got.errClass != c.class || got.Reason != c.reason || got.RetryAfter != c.after {
				t.Fatalf("classify(%v) = %+v (%s)", c.err, got, got)
			}
		})
	}
}

package soak

import (
	"context"
	"encoding/json"
	"strings"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/sink"
)

// A tap sits between a broadcaster's engine and its real sink and tells the
// incarnation about every request: which event (by name) it wrote, with
// which count, and whether its outcome is uncertain (the server may have
// stored it though the client saw an error: a lost answer). It changes
// nothing of what passes.

// coreTap taps a core/v1 sink that takes contexts.
type coreTap struct {
	inner sink.ContextEventSink
	inc   *incarnation
}

var _ sink.ContextEventSink = coreTap{}

func (c coreTap) Create(ev *v1.Event) (*v1.Event, error) {
	return c.CreateContext(context.Background(), ev)
}

func (c coreTap) Update(ev *v1.Event) (*v1.Event, error) {
	out, err := c.inner.Update(ev)
	c.inc.sent(ev.Namespace, ev.Name, coreCount(ev), err)
	return out, err
}

func (c coreTap) Patch(ev *v1.Event, data []byte) (*v1.Event, error) {
	return c.PatchContext(context.Background(), ev, data)
}

func (c coreTap) CreateContext(ctx context.Context, ev *v1.Event) (*v1.Event, error) {
	out, err := c.inner.CreateContext(ctx, ev)
	c.inc.sent(ev.Namespace, ev.Name, coreCount(ev), err)
	return out, err
}

func (c coreTap) PatchContext(ctx context.Context, ev *v1.Event, data []byte) (*v1.Event, error) {
	out, err := c.inner.PatchContext(ctx, ev, data)
	c.inc.sent(ev.Namespace, ev.Name, patchCount(data), err)
	return out, err
}

// eventsTap taps an events.k8s.io/v1 sink.
type eventsTap struct {
	inner events.EventSink
	inc   *incarnation
}

var _ events.EventSink = eventsTap{}

func (e eventsTap) Create(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	out, err := e.inner.Create(ctx, ev)
	e.inc.sent(ev.Namespace, ev.Name, seriesCount(ev.Series), err)
	return out, err
}

func (e eventsTap) Update(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	out, err := e.inner.Update(ctx, ev)
	e.inc.sent(ev.Namespace, ev.Name, seriesCount(ev.Series), err)
	return out, err
}

func (e eventsTap) Patch(ctx context.Context, old *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	out, err := e.inner.Patch(ctx, old, data)
	e.inc.sent(old.Namespace, old.Name, patchCount(data), err)
	return out, err
}

// coreCount is the count a core/v1 event stands for (0 counts as 1, as the
// server shows it).
func coreCount(ev *v1.Event) int32 { return max(ev.Count, 1) }

// seriesCount is the count of an events.k8s.io/v1 event: its series'
// count, 1 without a series.
func seriesCount(s *eventsv1.EventSeries) int32 {
	if s == nil {
		return 1
	}
	return max(s.Count, 1)
}

// patchCount reads the count a patch sets: "count" (core/v1) or
// "series.count" (events.k8s.io/v1); 0 if it sets none.
func patchCount(data []byte) int32 {
	var p struct {
		Count  int32 `json:"count"`
		Series *struct {
			Count int32 `json:"count"`
		} `json:"series"`
	}
	if json.Unmarshal(data, &p) != nil {
		return 0
	}
	if p.Series != nil {
		return p.Series.Count
	}
	return p.Count
}

// uncertain reports whether a request that returned err may have been
// stored by the server: every error but an answer of the server (or of the
// fault proxy) that refused it before storing anything.
func uncertain(err error) bool {
	if err == nil {
		return false
	}
	st, ok := err.(apierrors.APIStatus)
	if !ok {
		return true // transport error, timeout, cancellation: who knows
	}
	code := st.Status().Code
	msg := st.Status().Message
	switch {
	case code == 409 && st.Status().Reason == "AlreadyExists":
		// The answer to the retry of a create whose first answer was lost:
		// the server holds the event of that first try.
		return false
	case code >= 400 && code < 500:
		return false
	case strings.Contains(msg, "faultproxy: injected"), strings.Contains(msg, "failed calling webhook"):
		return false
	}
	return true // a 5xx of the server itself (a 504 may come after the store)
}

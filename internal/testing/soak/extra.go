package soak

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// Extra is a recorder slot a caller adds to the soak (Config.Extra), for
// recorders the soak cannot build itself: a controller-runtime manager,
// whose module herald's root module does not require
// (controllerruntime/cmd/soak adds one). Its recorders go through the same
// faults as the soak's own (the fault proxy, the kills, the webhook, ...),
// are restarted and flushed by the same schedule, and enter the same
// ledger.
type Extra struct {
	// Name names the slot in the run's header.
	Name string
	// EventsAPI: its recorders write events.k8s.io/v1 events; otherwise
	// core/v1 events. (The ledger reads a stored event's count by its API.)
	EventsAPI bool
	// Start starts one incarnation of the slot: a recorder that lives until
	// its Shutdown.
	Start func(ExtraStart) (ExtraRecorder, error)
}

// ExtraStart is what an incarnation of an [Extra] slot is built with.
type ExtraStart struct {
	// ID is the incarnation's, "s6.1": slot and generation.
	ID string
	// Component is the source component (core/v1) or reporting controller
	// (events.k8s.io/v1) its events must carry: the ledger finds the
	// recorder of a stored event by it.
	Component string
	// Config is the client configuration to write with: the recorders'
	// user, through the fault proxy, with a tap on its transport that tells
	// the soak of every event write and its outcome.
	Config *rest.Config
	// Options are to be given to the incarnation's broadcasters: its logger
	// and the sink option (OnWritten) the ledger's bookkeeping needs.
	Options []record.BroadcasterOption
	// Logger is the incarnation's logger (Config.Logger, with its ID).
	Logger klog.Logger
	// ShutdownWithin is the deadline its Shutdown will be given (the
	// schedule's, for a recorder the schedule restarts): a recorder that
	// sets its deadline when it is built (a controller-runtime manager's
	// GracefulShutdownTimeout) sets it to this.
	ShutdownWithin time.Duration
}

// ExtraRecorder is an incarnation of an [Extra] slot.
type ExtraRecorder interface {
	// Record records one event about obj, of type Normal.
	Record(obj *v1.ObjectReference, reason, msg string)
	// Stats are its broadcaster's Stats.
	Stats() record.Stats
	// Flush waits until every event recorded so far is written (or
	// dropped, counted), or ctx ends.
	Flush(ctx context.Context) error
	// Shutdown writes what is pending and stops the recorder, by ctx's
	// deadline (ExtraStart.ShutdownWithin from now).
	Shutdown(ctx context.Context) error
}

// newExtraIncarnation starts an incarnation of the extra slot of kind.
func newExtraIncarnation(id string, kind slotKind, cfg *rest.Config, logger klog.Logger, within time.Duration) (*incarnation, error) {
	inc := &incarnation{id: id, kind: kind, events: map[string]*written{}, refusals: map[string]string{}, shutdownWithin: within}
	inc.component = "soak-" + id
	if kind.api == eventsAPI {
		inc.component = "soak.herald.example/" + id
	}
	logger = logger.WithValues("recorder", id)
	rec, err := kind.extra.Start(ExtraStart{
		ID:        id,
		Component: inc.component,
		Config:    tapConfig(cfg, inc),
		Options: []record.BroadcasterOption{
			record.WithLogger(logger),
			record.WithSinkOptions(sink.Options{OnWritten: inc.onWritten}),
		},
		Logger:         logger,
		ShutdownWithin: within,
	})
	if err != nil {
		return nil, fmt.Errorf("soak: starting %s (%s): %w", id, kind.extra.Name, err)
	}
	inc.stats, inc.flush, inc.shutdown, inc.eventf = rec.Stats, rec.Flush, rec.Shutdown, rec.Record
	return inc, nil
}

// tapConfig returns a copy of cfg whose transport tells inc of every event
// write and its outcome, as coreTap and eventsTap do for the recorders
// whose sink the soak builds: the tap of a recorder that builds its sinks
// itself from a configuration.
func tapConfig(cfg *rest.Config, inc *incarnation) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return httpTap{inner: rt, inc: inc} })
	return c
}

// httpTap is an http.RoundTripper that taps the event writes (POST, PUT
// and PATCH of core/v1 and events.k8s.io/v1 events) passing through it.
type httpTap struct {
	inner http.RoundTripper
	inc   *incarnation
}

func (t httpTap) RoundTrip(req *http.Request) (*http.Response, error) {
	ns, name, ok := eventPath(req.URL.Path)
	if !ok || (req.Method != http.MethodPost && req.Method != http.MethodPut && req.Method != http.MethodPatch) {
		return t.inner.RoundTrip(req)
	}
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		// A RoundTripper does not modify its request: the body goes on in a
		// copy.
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	count := int32(0)
	if req.Method == http.MethodPatch {
		count = patchCount(body)
	} else {
		name, count = writtenEvent(body, name)
	}
	resp, err := t.inner.RoundTrip(req)
	if err != nil {
		t.inc.sent(ns, name, count, err)
		return nil, err
	}
	// The whole answer is read here, so that an answer cut short is seen as
	// the client sees it: an error after the server may have stored it.
	answer, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	switch {
	case rerr != nil:
		t.inc.sent(ns, name, count, rerr)
		return nil, rerr
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		t.inc.sent(ns, name, count, statusError(resp.StatusCode, req.Method, name, answer))
	default:
		t.inc.sent(ns, name, count, nil)
	}
	return resp, nil
}

// eventPath parses the path of a namespaced core/v1 or events.k8s.io/v1
// event (.../namespaces/ns/events[/name]).
func eventPath(p string) (ns, name string, ok bool) {
	var rest string
	switch {
	case strings.HasPrefix(p, "/api/v1/namespaces/"):
		rest = strings.TrimPrefix(p, "/api/v1/namespaces/")
	case strings.HasPrefix(p, "/apis/events.k8s.io/v1/namespaces/"):
		rest = strings.TrimPrefix(p, "/apis/events.k8s.io/v1/namespaces/")
	default:
		return "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[1] != "events" {
		return "", "", false
	}
	if len(parts) == 3 {
		name = parts[2]
	}
	return parts[0], name, true
}

// writtenEvent reads the name and the count of the event a create or
// update sends (name: the path's, if the body has none).
func writtenEvent(body []byte, name string) (string, int32) {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		return name, 0
	}
	switch ev := obj.(type) {
	case *v1.Event:
		if ev.Name != "" {
			name = ev.Name
		}
		return name, coreCount(ev)
	case *eventsv1.Event:
		if ev.Name != "" {
			name = ev.Name
		}
		return name, seriesCount(ev.Series)
	}
	return name, 0
}

// statusError is the error a client makes of an answer of code with body
// answer: the Status it carries, or a generic error of that code.
func statusError(code int, method, name string, answer []byte) error {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(answer, nil, &metav1.Status{})
	if st, ok := obj.(*metav1.Status); err == nil && ok && st.Status == metav1.StatusFailure {
		if st.Code == 0 {
			st.Code = int32(code)
		}
		return &apierrors.StatusError{ErrStatus: *st}
	}
	return apierrors.NewGenericServerResponse(code, method, schema.GroupResource{Resource: "events"}, name, string(answer), 0, true)
}

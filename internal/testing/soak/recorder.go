package soak

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// api is the event API of a recorder.
type api int

const (
	coreAPI api = iota
	eventsAPI
)

func (a api) String() string {
	if a == eventsAPI {
		return "events.k8s.io/v1"
	}
	return "core/v1"
}

// slotKind is how a slot's recorders get their sink.
type slotKind struct {
	api api
	// ownClient: the sink's client is its own (sink.NewForConfig or
	// events.NewForConfig); otherwise it writes over the controller's
	// clientset.
	ownClient bool
	// extra: a slot the caller added (Config.Extra), which builds its
	// recorders itself.
	extra *Extra
}

func (k slotKind) String() string {
	if k.extra != nil {
		return k.extra.Name
	}
	how := "clientset"
	if k.ownClient {
		how = "NewForConfig"
	}
	return k.api.String() + " " + how
}

// slotKinds are the soak's recorder slots: both APIs, both ways to a
// client.
var slotKinds = []slotKind{
	{api: coreAPI, ownClient: true}, {api: coreAPI}, {api: eventsAPI, ownClient: true}, {api: eventsAPI}, {api: coreAPI, ownClient: true}, {api: eventsAPI},
}

// written is what an incarnation knows of one server event: the count of
// its last acknowledged write, and the counts of writes whose outcome is
// uncertain.
type written struct {
	namespace string
	acked     int32
	uncertain map[int32]bool
	seen      bool // on the server, at the ledger
}

// incarnation is one broadcaster of a slot, from its start to its
// Shutdown, with the soak's bookkeeping of it.
type incarnation struct {
	id   string // slot and generation, "s2.1"
	slot int    // its index
	kind slotKind
	// component is its recorder's source component (core/v1) or reporting
	// controller (events.k8s.io/v1).
	component string

	stats    func() record.Stats
	flush    func(context.Context) error
	shutdown func(context.Context) error
	eventf   func(obj *v1.ObjectReference, reason, msg string)

	recorded atomic.Int64
	// byObject counts what the soak recorded by namespace, object and
	// reason (occurrenceKey): no server event of that object and reason
	// can count more occurrences than that, all of them together.
	byObject map[string]int64

	mu     sync.Mutex
	events map[string]*written // by namespace/name
	done   bool                // shut down
	// restarted: the schedule shut it down (a sink restart, with a short
	// deadline), which explains events abandoned.
	restarted bool
	final     record.Stats // Stats after Shutdown
	// shutdownWithin: the deadline of its Shutdown, set when it was built
	// (an extra slot's); 0: the one stop is given.
	shutdownWithin time.Duration
	// refusals: the first message of each reason of the server's (or
	// the proxy's) refusals, for the report.
	refusals map[string]string
	// failRun: by namespace/name, the requests of that event that failed
	// since its last success; tryRuns counts how many times one of them
	// reached a multiple of soakMaxTries, the most keys the engine may have
	// given up (an event is dropped as retries_exhausted only after that
	// many failures in a row of its key).
	failRun map[string]int
	tryRuns int64
	// anomalies are what the bookkeeping saw that must never happen.
	anomalies []string
	// lastErr is the class of the last error a request met (see
	// errClass), for the progress line.
	lastErr string
}

// soakMaxTries is sink.Options.MaxTries's default, which the soak's
// engines run with.
const soakMaxTries = 12

// errClass names the kind of err for the progress line: the status code
// (with "injected" when the fault proxy answered, "webhook" when the
// webhook refused), or what happened to the connection.
func errClass(err error) string {
	if st, ok := err.(apierrors.APIStatus); ok {
		s := st.Status()
		switch {
		case strings.Contains(s.Message, "faultproxy: injected"):
			return fmt.Sprintf("%d injected", s.Code)
		case strings.Contains(s.Message, "failed calling webhook"):
			return fmt.Sprintf("%d webhook", s.Code)
		}
		return fmt.Sprintf("%d %s", s.Code, s.Reason)
	}
	msg := err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded), strings.Contains(msg, "Client.Timeout"), strings.Contains(msg, "i/o timeout"):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case strings.Contains(msg, "connection refused"):
		return "refused"
	case strings.Contains(msg, "connection reset"):
		return "reset"
	case strings.Contains(msg, "EOF"):
		return "EOF"
	}
	return "transport"
}

func (inc *incarnation) entry(ns, name string) *written {
	k := ns + "/" + name
	w := inc.events[k]
	if w == nil {
		w = &written{namespace: ns}
		inc.events[k] = w
	}
	return w
}

// sent is told of every request the engine made.
func (inc *incarnation) sent(ns, name string, count int32, err error) {
	if name != "" {
		inc.mu.Lock()
		if inc.failRun == nil {
			inc.failRun = map[string]int{}
		}
		k := ns + "/" + name
		if err == nil {
			delete(inc.failRun, k)
		} else if inc.failRun[k]++; inc.failRun[k]%soakMaxTries == 0 {
			inc.tryRuns++
		}
		inc.mu.Unlock()
	}
	if err != nil {
		class := errClass(err)
		inc.mu.Lock()
		inc.lastErr = class
		inc.mu.Unlock()
	}
	if st, ok := err.(apierrors.APIStatus); ok {
		inc.mu.Lock()
		reason := string(st.Status().Reason)
		if _, seen := inc.refusals[reason]; !seen {
			inc.refusals[reason] = fmt.Sprintf("%s (%s/%s at %s)", st.Status().Message, ns, name, time.Now().Format("15:04:05.000"))
		}
		inc.mu.Unlock()
	}
	if name == "" || !uncertain(err) {
		return
	}
	inc.mu.Lock()
	defer inc.mu.Unlock()
	w := inc.entry(ns, name)
	if w.uncertain == nil {
		w.uncertain = map[int32]bool{}
	}
	w.uncertain[count] = true
}

// onWritten is the engine's OnWritten: stored is what the server answered
// (or, for a create whose answer was lost, the event sent).
func (inc *incarnation) onWritten(_ string, sent, stored *v1.Event) {
	n := max(stored.Count, 1)
	if inc.kind.api == eventsAPI {
		n = 1
		if stored.Series != nil {
			n = max(stored.Series.Count, 1)
		}
	}
	inc.mu.Lock()
	defer inc.mu.Unlock()
	w := inc.entry(stored.Namespace, stored.Name)
	if n < w.acked {
		// Writes of one key are never concurrent and counts only grow.
		inc.anomalies = append(inc.anomalies, fmt.Sprintf("%s: event %s/%s acknowledged with count %d after %d", inc.id, stored.Namespace, stored.Name, n, w.acked))
		return
	}
	w.acked = n
}

// newIncarnation starts a broadcaster of kind with its own sink over cfg
// (the fault proxy's config) and a recorder.
func newIncarnation(id string, kind slotKind, cfg *rest.Config, logger klog.Logger) (*incarnation, error) {
	inc := &incarnation{id: id, kind: kind, events: map[string]*written{}, refusals: map[string]string{}}
	opts := sink.Options{OnWritten: inc.onWritten}
	bopts := []record.BroadcasterOption{record.WithLogger(logger.WithValues("recorder", id)), record.WithSinkOptions(opts)}
	var cs kubernetes.Interface
	if !kind.ownClient {
		var err error
		if cs, err = kubernetes.NewForConfig(cfg); err != nil {
			return nil, err
		}
	}
	switch kind.api {
	case coreAPI:
		inc.component = "soak-" + id
		var s sink.ContextEventSink
		if kind.ownClient {
			own, err := sink.NewForConfig(cfg)
			if err != nil {
				return nil, err
			}
			s = own
		} else {
			s = &sink.EventSinkImpl{Interface: cs.CoreV1().Events("")}
		}
		eb := record.NewBroadcaster(bopts...)
		eb.StartRecordingToSink(coreTap{inner: s, inc: inc})
		rec := eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: inc.component, Host: "soak"})
		inc.stats, inc.flush, inc.shutdown = eb.Stats, eb.Flush, eb.ShutdownWithContext
		inc.eventf = func(obj *v1.ObjectReference, reason, msg string) {
			rec.Eventf(obj, v1.EventTypeNormal, reason, "%s", msg)
		}
	case eventsAPI:
		inc.component = "soak.herald.example/" + id
		var s events.EventSink
		if kind.ownClient {
			own, err := events.NewForConfig(cfg)
			if err != nil {
				return nil, err
			}
			s = own
		} else {
			s = &events.EventSinkImpl{Interface: cs.EventsV1()}
		}
		eb := events.NewBroadcaster(eventsTap{inner: s, inc: inc}, events.WithBroadcasterOptions(bopts...))
		if err := eb.StartRecordingToSinkWithContext(context.Background()); err != nil {
			return nil, err
		}
		rec := eb.NewRecorder(scheme.Scheme, inc.component)
		inc.stats, inc.flush, inc.shutdown = eb.Stats, eb.Flush, eb.ShutdownWithContext
		inc.eventf = func(obj *v1.ObjectReference, reason, msg string) {
			rec.Eventf(obj, nil, v1.EventTypeNormal, reason, "Soak", "%s", msg)
		}
	}
	return inc, nil
}

// record records one event and counts it.
func (inc *incarnation) record(obj *v1.ObjectReference, reason, msg string) {
	inc.recorded.Add(1)
	inc.mu.Lock()
	if inc.byObject == nil {
		inc.byObject = map[string]int64{}
	}
	inc.byObject[occurrenceKey(obj.Namespace, obj.Name, reason)]++
	inc.mu.Unlock()
	inc.eventf(obj, reason, msg)
}

// timedOp is a Flush or Shutdown with a deadline, and how long it took.
type timedOp struct {
	what     string
	deadline time.Duration
	took     time.Duration
	err      error
}

// stop shuts the incarnation down within d (or the deadline it was built
// with) and keeps its final Stats.
func (inc *incarnation) stop(d time.Duration) timedOp {
	if inc.shutdownWithin > 0 {
		d = inc.shutdownWithin
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	begin := time.Now()
	err := inc.shutdown(ctx)
	op := timedOp{what: "Shutdown " + inc.id, deadline: d, took: time.Since(begin), err: err}
	inc.mu.Lock()
	inc.done, inc.final = true, inc.stats()
	inc.mu.Unlock()
	return op
}

// flushWithin flushes the incarnation within d.
func (inc *incarnation) flushWithin(d time.Duration) timedOp {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	begin := time.Now()
	err := inc.flush(ctx)
	return timedOp{what: "Flush " + inc.id, deadline: d, took: time.Since(begin), err: err}
}

// occurrenceKey is the namespace, object and reason of an event: the
// correlator never counts occurrences of one key in an event of another.
func occurrenceKey(ns, obj, reason string) string { return ns + "/" + obj + "/" + reason }

package events_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"encoding/json"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	cgevents "k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/events"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Compile-time proof that herald's types are client-go's and the other way
// round.
var (
	_ func(cgevents.EventSink, ...events.Option) cgevents.EventBroadcaster = func(s cgevents.EventSink, o ...events.Option) cgevents.EventBroadcaster {
		return events.NewBroadcaster(s, o...)
	}
	_ cgevents.EventBroadcaster     = events.EventBroadcaster(nil)
	_ cgevents.EventRecorderLogger  = events.EventRecorderLogger(nil)
	_ cgevents.EventRecorderLogger  = (*events.FakeRecorder)(nil)
	_ events.AnnotatedEventRecorder = (*events.FakeRecorder)(nil)
	_ events.EventRecorderLogger    = (*cgevents.FakeRecorder)(nil)
	_ events.EventSink              = (*cgevents.EventSinkImpl)(nil)
	_ cgevents.EventSink            = (*events.EventSinkImpl)(nil)
	// AnnotatedEventRecorder against client-go's (v0.37 and later):
	// TestAnnotatedEventRecorderMatchesClientGo.
)

// herald keeps client-go's adapter API, deprecated there.
//
//lint:ignore SA1019 a drop-in for client-go's tools/events keeps its deprecated API
var _ func(kubernetes.Interface) cgevents.EventBroadcasterAdapter = events.NewEventBroadcasterAdapter

// The recorders a broadcaster returns are client-go's recorder types,
// annotated ones included.
func TestRecorderSatisfiesClientGoInterfaces(t *testing.T) {
	b := events.NewBroadcaster(nil)
	defer b.Shutdown()
	r := b.NewRecorder(nil, "example.com/ctl") // a cgevents.EventRecorderLogger
	if _, ok := r.(events.AnnotatedEventRecorder); !ok {
		t.Fatalf("%T is not an AnnotatedEventRecorder", r)
	}
	if _, ok := r.WithLogger(klog.Background()).(events.AnnotatedEventRecorder); !ok {
		t.Fatalf("WithLogger's recorder is not an AnnotatedEventRecorder")
	}
}

func pod(ns, name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}}
}

func flush(t testing.TB, b events.EventBroadcaster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v; stats %+v", err, b.Stats())
	}
}

func listEvents(t testing.TB, cs *fake.Clientset) []eventsv1.Event {
	t.Helper()
	l, err := cs.EventsV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// memSink is an events.k8s.io/v1 sink in memory, with hooks.
type memSink struct {
	mu      sync.Mutex
	events  map[string]*eventsv1.Event // ns/name
	creates int
	patches int
	data    []string // the patches' bodies
	// beforePatch, if set, runs before each patch, under no lock.
	beforePatch func(s *memSink, ev *eventsv1.Event)
	// block, if set, makes every call wait for ctx.
	block bool
}

func newMemSink() *memSink { return &memSink{events: map[string]*eventsv1.Event{}} }

func (s *memSink) Create(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	if s.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.creates++
	k := ev.Namespace + "/" + ev.Name
	if _, ok := s.events[k]; ok {
		return nil, alreadyExists(ev.Name)
	}
	c := ev.DeepCopy()
	c.ResourceVersion = "1"
	s.events[k] = c
	return c.DeepCopy(), nil
}

func (s *memSink) Update(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	panic("Update must not be called")
}

func (s *memSink) Patch(ctx context.Context, ev *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	if s.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if s.beforePatch != nil {
		s.beforePatch(s, ev)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.patches++
	s.data = append(s.data, string(data))
	k := ev.Namespace + "/" + ev.Name
	cur, ok := s.events[k]
	if !ok {
		return nil, notFound(ev.Name)
	}
	if err := applySeriesPatch(cur, data); err != nil {
		return nil, err
	}
	return cur.DeepCopy(), nil
}

func (s *memSink) all() []*eventsv1.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*eventsv1.Event, 0, len(s.events))
	for _, e := range s.events {
		out = append(out, e.DeepCopy())
	}
	return out
}

func (s *memSink) delete(ns, name string) {
	s.mu.Lock()
	delete(s.events, ns+"/"+name)
	s.mu.Unlock()
}

var eventsGR = schema.GroupResource{Group: "events.k8s.io", Resource: "events"}

func alreadyExists(name string) error { return apierrors.NewAlreadyExists(eventsGR, name) }
func notFound(name string) error      { return apierrors.NewNotFound(eventsGR, name) }

// applySeriesPatch applies a {"series":{...}} patch, the only patch the
// broadcaster sends; anything else is an error.
func applySeriesPatch(ev *eventsv1.Event, data []byte) error {
	var p struct {
		Series *eventsv1.EventSeries `json:"series"`
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if len(raw) != 1 || raw["series"] == nil {
		return apierrors.NewBadRequest("unexpected patch " + string(data))
	}
	if err := json.Unmarshal(data, &p); err != nil || p.Series == nil {
		return apierrors.NewBadRequest("bad series patch " + string(data))
	}
	ev.Series = p.Series
	return nil
}

func klogDiscard() klog.Logger { return klog.Logger{} } // a zero logr.Logger discards

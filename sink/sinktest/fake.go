package sinktest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/heraldk8s/herald/sink"
)

// Op names a sink call, as passed to a Fault.
type Op string

// The operations of a sink.
const (
	OpCreate Op = "create"
	OpPatch  Op = "patch"
	OpUpdate Op = "update"
)

// Fault decides the fate of one call before it reaches the store: a non-nil
// error is returned instead of performing the call. It is called without
// the sink's lock held and may block (to simulate latency), honouring ctx.
type Fault func(ctx context.Context, op Op, ev *v1.Event) error

// Sink is an in-memory EventSink and ContextEventSink that stores events by
// namespace and name like an API server: Create of an existing name is
// AlreadyExists, Patch of a missing one NotFound, patches are applied as
// strategic-merge patches. The zero value is ready to use. It is safe for
// concurrent use.
type Sink struct {
	mu      sync.Mutex
	fault   Fault
	events  map[string]*v1.Event
	calls   map[Op]int
	rv      int
	history []Call
}

// Call is one call the sink received.
type Call struct {
	Op    Op
	Event v1.Event // copy as received
	Patch []byte
	Err   error
}

var (
	_ sink.EventSink        = (*Sink)(nil)
	_ sink.ContextEventSink = (*Sink)(nil)
)

// New returns an empty sink.
func New() *Sink { return &Sink{} }

// SetFault replaces the fault hook (nil: none) while the sink is in use.
func (s *Sink) SetFault(f Fault) {
	s.mu.Lock()
	s.fault = f
	s.mu.Unlock()
}

func (s *Sink) faultFor() Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fault
}

// Create implements sink.EventSink.
func (s *Sink) Create(ev *v1.Event) (*v1.Event, error) {
	return s.CreateContext(context.Background(), ev)
}

// Update implements sink.EventSink; it replaces a stored event.
func (s *Sink) Update(ev *v1.Event) (*v1.Event, error) {
	if err := s.runFault(context.Background(), OpUpdate, ev); err != nil {
		return nil, s.record(OpUpdate, ev, nil, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(ev.Namespace, ev.Name)
	if _, ok := s.events[k]; !ok {
		return nil, s.recordLocked(OpUpdate, ev, nil, notFound(ev.Name))
	}
	stored := s.storeLocked(ev)
	s.recordLocked(OpUpdate, ev, nil, nil)
	return stored, nil
}

// Patch implements sink.EventSink.
func (s *Sink) Patch(ev *v1.Event, data []byte) (*v1.Event, error) {
	return s.PatchContext(context.Background(), ev, data)
}

// CreateContext implements sink.ContextEventSink.
func (s *Sink) CreateContext(ctx context.Context, ev *v1.Event) (*v1.Event, error) {
	if err := s.runFault(ctx, OpCreate, ev); err != nil {
		return nil, s.record(OpCreate, ev, nil, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.events[key(ev.Namespace, ev.Name)]; ok {
		err := apierrors.NewAlreadyExists(schema.GroupResource{Resource: "events"}, ev.Name)
		return nil, s.recordLocked(OpCreate, ev, nil, err)
	}
	stored := s.storeLocked(ev)
	s.recordLocked(OpCreate, ev, nil, nil)
	return stored, nil
}

// PatchContext implements sink.ContextEventSink.
func (s *Sink) PatchContext(ctx context.Context, ev *v1.Event, data []byte) (*v1.Event, error) {
	if err := s.runFault(ctx, OpPatch, ev); err != nil {
		return nil, s.record(OpPatch, ev, data, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.events[key(ev.Namespace, ev.Name)]
	if !ok {
		return nil, s.recordLocked(OpPatch, ev, data, notFound(ev.Name))
	}
	oldJSON, err := json.Marshal(old)
	if err != nil {
		return nil, s.recordLocked(OpPatch, ev, data, err)
	}
	newJSON, err := strategicpatch.StrategicMergePatch(oldJSON, data, &v1.Event{})
	if err != nil {
		return nil, s.recordLocked(OpPatch, ev, data, apierrors.NewBadRequest(err.Error()))
	}
	var patched v1.Event
	if err := json.Unmarshal(newJSON, &patched); err != nil {
		return nil, s.recordLocked(OpPatch, ev, data, apierrors.NewBadRequest(err.Error()))
	}
	stored := s.storeLocked(&patched)
	s.recordLocked(OpPatch, ev, data, nil)
	return stored, nil
}

func (s *Sink) runFault(ctx context.Context, op Op, ev *v1.Event) error {
	if f := s.faultFor(); f != nil {
		return f(ctx, op, ev)
	}
	return nil
}

func (s *Sink) storeLocked(ev *v1.Event) *v1.Event {
	if s.events == nil {
		s.events = map[string]*v1.Event{}
	}
	s.rv++
	c := ev.DeepCopy()
	c.ResourceVersion = fmt.Sprint(s.rv)
	s.events[key(c.Namespace, c.Name)] = c
	return c.DeepCopy()
}

func (s *Sink) record(op Op, ev *v1.Event, data []byte, err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recordLocked(op, ev, data, err)
}

func (s *Sink) recordLocked(op Op, ev *v1.Event, data []byte, err error) error {
	if s.calls == nil {
		s.calls = map[Op]int{}
	}
	s.calls[op]++
	s.history = append(s.history, Call{Op: op, Event: *ev.DeepCopy(), Patch: append([]byte(nil), data...), Err: err})
	return err
}

// Events returns copies of the stored events, sorted by namespace and name.
func (s *Sink) Events() []v1.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]v1.Event, 0, len(s.events))
	for _, ev := range s.events {
		out = append(out, *ev.DeepCopy())
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Get returns a copy of the stored event, if any.
func (s *Sink) Get(namespace, name string) (*v1.Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev, ok := s.events[key(namespace, name)]
	if !ok {
		return nil, false
	}
	return ev.DeepCopy(), true
}

// Delete removes a stored event, as if deleted on the server.
func (s *Sink) Delete(namespace, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.events[key(namespace, name)]
	delete(s.events, key(namespace, name))
	return ok
}

// Calls returns how many calls of op the sink received, failed ones included.
func (s *Sink) Calls(op Op) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

// History returns every call received so far, in order.
func (s *Sink) History() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.history...)
}

// TotalCount is the sum of the Count of all stored events.
func (s *Sink) TotalCount() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, ev := range s.events {
		n += int64(ev.Count)
	}
	return n
}

func key(ns, name string) string { return ns + "/" + name }

func notFound(name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: "events"}, name)
}

// Latency returns a Fault that delays every call by d (on the real clock),
// returning early with ctx's error if ctx ends.
func Latency(d time.Duration) Fault {
	return func(ctx context.Context, _ Op, _ *v1.Event) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

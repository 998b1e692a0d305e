package events

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// countSink stores the series count of each patched event and notes
// whether two writes of one name were ever under way at once.
type countSink struct {
	mu       sync.Mutex
	stored   map[string]int32
	inFlight map[string]int
	overlap  bool
	gate     map[string]chan struct{} // a patch of the name waits for it
	entered  chan string
}

func newCountSink() *countSink {
	return &countSink{stored: map[string]int32{}, inFlight: map[string]int{}, gate: map[string]chan struct{}{}, entered: make(chan string, 16)}
}

func (s *countSink) Create(ev *v1.Event) (*v1.Event, error) { return s.Patch(ev, nil) }
func (s *countSink) Update(ev *v1.Event) (*v1.Event, error) { return s.Patch(ev, nil) }
func (s *countSink) Patch(ev *v1.Event, _ []byte) (*v1.Event, error) {
	s.mu.Lock()
	s.inFlight[ev.Name]++
	if s.inFlight[ev.Name] > 1 {
		s.overlap = true
	}
	g := s.gate[ev.Name]
	delete(s.gate, ev.Name)
	s.mu.Unlock()
	if g != nil {
		s.entered <- ev.Name
		<-g
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight[ev.Name]--
	if ev.Series != nil {
		s.stored[ev.Name] = ev.Series.Count
	}
	return ev.DeepCopy(), nil
}

func seriesEv(name string, n int32) *v1.Event {
	return &v1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Series: &v1.EventSeries{Count: n, LastObservedTime: metav1.NowMicro()}}
}

// The retiring session's write of count 3 is under way (a slow answer)
// while the new session writes count 4 of the same event; meanwhile the
// new session wrote defaultCacheSize other series. seriesOrder promises
// the writes of one event are serialised and the old count never lands
// after the higher one.
func TestSeriesOrderKeepsALockedEntry(t *testing.T) {
	s := newCountSink()
	o := newSeriesOrder(s)
	ctx := context.Background()
	gate := make(chan struct{})
	s.gate["x"] = gate
	oldDone := make(chan error, 1)
	go func() { _, err := o.PatchContext(ctx, seriesEv("x", 3), nil); oldDone <- err }()
	<-s.entered // count 3 holds x's lock, in the sink
	for i := range defaultCacheSize {
		if _, err := o.PatchContext(ctx, seriesEv(fmt.Sprint("y", i), 2), nil); err != nil {
			t.Fatal(err)
		}
	}
	newDone := make(chan error, 1)
	go func() { _, err := o.PatchContext(ctx, seriesEv("x", 4), nil); newDone <- err }()
	early := false
	select {
	case <-newDone:
		early = true // not serialised: count 4 was written while count 3 was under way
	case <-time.After(300 * time.Millisecond):
	}
	close(gate)
	<-oldDone
	if !early {
		select {
		case <-newDone:
		case <-time.After(5 * time.Second):
			t.Fatal("count 4 never written")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.overlap || s.stored["x"] != 4 {
		t.Fatalf("two writes of x at once: %v; stored count %d, want 4", s.overlap, s.stored["x"])
	}
}

// errAfterStore stores each patch, then fails the ones whose count is in
// lose (an answer lost after the server stored it).
type errAfterStore struct {
	*countSink
	lose map[int32]bool
}

func (s *errAfterStore) Patch(ev *v1.Event, data []byte) (*v1.Event, error) {
	out, _ := s.countSink.Patch(ev, data)
	if s.lose[ev.Series.Count] {
		return nil, fmt.Errorf("http2: client connection lost")
	}
	return out, nil
}

// The new session's count 4 is stored but its answer lost; the retiring
// session's count 3 then goes back over it.
func TestSeriesOrderLostAnswerKeepsLowerCountOut(t *testing.T) {
	s := &errAfterStore{countSink: newCountSink(), lose: map[int32]bool{4: true}}
	o := newSeriesOrder(s)
	ctx := context.Background()
	if _, err := o.PatchContext(ctx, seriesEv("x", 2), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := o.PatchContext(ctx, seriesEv("x", 4), nil); err == nil {
		t.Fatal("want the lost answer")
	}
	if _, err := o.PatchContext(ctx, seriesEv("x", 3), nil); err != nil && err.Error() != "herald: state stored already, no request sent" {
		t.Fatal(err)
	}
	if got := s.stored["x"]; got != 4 {
		t.Fatalf("stored count %d after the old session's 3, want 4 (the server had 4)", got)
	}
}

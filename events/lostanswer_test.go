package events_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// losingSink stores what it is given like the API server, but loses the
// answer of some writes after storing them (a 500 or a reset connection
// after the commit), and refuses some others before storing.
type losingSink struct {
	*memSink
	mu   sync.Mutex
	rnd  *rand.Rand
	lose float64 // fraction of stored writes whose answer is lost
	fail float64 // fraction of writes refused before they are stored
}

func (s *losingSink) roll() (lose, fail bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rnd.Float64()
	return r < s.lose, r >= s.lose && r < s.lose+s.fail
}

var errReset = errors.New("connection reset by peer")

// startRetrying starts a broadcaster on s that retries at once (no write
// limit, 1 ms backoff) and writes every occurrence (no series interval).
func startRetrying(t *testing.T, s events.EventSink) events.EventBroadcaster {
	t.Helper()
	b := events.NewBroadcaster(s, events.WithSeriesInterval(events.NoSeriesInterval), events.WithBroadcasterOptions(
		record.WithSinkOptions(sink.Options{QPS: sink.Unlimited, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}),
		record.WithLogger(klogDiscard())))
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	return b
}

func (s *losingSink) Create(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	lose, fail := s.roll()
	if fail {
		return nil, apierrors.NewInternalError(errors.New("etcd timeout"))
	}
	out, err := s.memSink.Create(ctx, ev)
	if err == nil && lose {
		return nil, errReset
	}
	return out, err
}

func (s *losingSink) Patch(ctx context.Context, ev *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	lose, fail := s.roll()
	if fail {
		return nil, apierrors.NewInternalError(errors.New("etcd timeout"))
	}
	out, err := s.memSink.Patch(ctx, ev, data)
	if err == nil && lose {
		return nil, errReset
	}
	return out, err
}

// A Create whose answer was lost, retried and answered AlreadyExists, was
// written: it is counted created, not dropped.
func TestLostCreateAnswerIsWritten(t *testing.T) {
	s := &lostAnswerSink{memSink: newMemSink(), entered: make(chan struct{}), release: make(chan struct{})}
	close(s.release)
	b := startRetrying(t, s)
	defer b.Shutdown()
	r := b.NewRecorder(scheme.Scheme, "example.com/ctl")
	r.Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "n")
	flush(t, b)
	st := b.Stats()
	if n := len(s.all()); n != 1 || st.Created != 1 || st.Dropped.Total() != 0 {
		t.Fatalf("stored %d, stats %+v: want one event created and nothing dropped", n, st)
	}
}

// With answers lost and writes refused at random, what the server stores
// is what Stats says was written: the stored counts (series count, or 1)
// add up to Created + Patched + Coalesced, and nothing is dropped.
func TestStatsMatchTheServerWhenAnswersAreLost(t *testing.T) {
	for seed := range uint64(3) {
		s := &losingSink{memSink: newMemSink(), rnd: rand.New(rand.NewPCG(seed, 7)), lose: 0.15, fail: 0.1}
		b := startRetrying(t, s)
		r := b.NewRecorder(scheme.Scheme, "example.com/ctl")
		rnd := rand.New(rand.NewPCG(seed, 9))
		for i := range 400 {
			obj := pod("ns", fmt.Sprint("p", rnd.IntN(20)))
			r.Eventf(obj, nil, v1.EventTypeNormal, fmt.Sprint("R", rnd.IntN(3)), "Act", "note %d", rnd.IntN(2))
			if i%50 == 0 {
				flush(t, b)
			}
		}
		flush(t, b)
		st := b.Stats()
		b.Shutdown()
		var stored int64
		for _, ev := range s.all() {
			if ev.Series != nil {
				stored += int64(ev.Series.Count)
			} else {
				stored++
			}
		}
		if st.Dropped.Total() != 0 || stored != st.Created+st.Patched+st.Coalesced {
			t.Fatalf("seed %d: the server stores a count of %d; stats created %d patched %d coalesced %d dropped %+v",
				seed, stored, st.Created, st.Patched, st.Coalesced, st.Dropped)
		}
	}
}

// lostAnswerSink stores the first Create but answers it 500 once release is
// closed: its answer was lost after the server stored it.
type lostAnswerSink struct {
	*memSink
	first   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (s *lostAnswerSink) Create(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	out, err := s.memSink.Create(ctx, ev)
	if err == nil && s.first.CompareAndSwap(false, true) {
		close(s.entered)
		<-s.release
		return nil, apierrors.NewInternalError(errors.New("lost answer"))
	}
	return out, err
}

// A Create whose answer was lost is retried with the repeats recorded
// meanwhile; the server answers AlreadyExists, and the series is patched:
// the stored count is every occurrence, nothing is counted dropped.
func TestLostCreateAnswerKeepsTheSeries(t *testing.T) {
	s := &lostAnswerSink{memSink: newMemSink(), entered: make(chan struct{}), release: make(chan struct{})}
	b := startRetrying(t, s)
	defer b.Shutdown()
	r := b.NewRecorder(scheme.Scheme, "example.com/ctl")
	r.Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "n")
	<-s.entered
	for range 5 {
		r.Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "n")
	}
	check.Eventually(t, "the repeats to wait behind the create", func() error {
		st := b.Stats()
		return check.Errorf(st.Pending >= 5, "pending %d, want 5; stats %+v", st.Pending, st)
	})
	close(s.release)
	flush(t, b)
	st := b.Stats()
	stored := s.all()
	if len(stored) != 1 || stored[0].Series == nil || stored[0].Series.Count != 6 {
		t.Fatalf("stored %+v, want one event with a series of 6", stored)
	}
	if st.Dropped.Total() != 0 || st.Abandoned != 0 {
		t.Errorf("dropped %d, abandoned %d, want 0; stats %+v", st.Dropped.Total(), st.Abandoned, st)
	}
	check.Settled(t, st) // so every recorded event was written
}

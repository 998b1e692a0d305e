package events_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	cgevents "k8s.io/client-go/tools/events"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

func TestStartRecordingTwiceAndAgain(t *testing.T) {
	s := newMemSink()
	b := events.NewBroadcaster(s, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited})))
	defer b.Shutdown()
	ctx, cancel := context.WithCancel(context.Background())
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.StartRecordingToSinkWithContext(context.Background()); err == nil {
		t.Fatal("second StartRecordingToSinkWithContext while recording: no error")
	}
	r := b.NewRecorder(scheme.Scheme, "ctl")
	r.Eventf(pod("ns", "a"), nil, v1.EventTypeNormal, "R", "A", "one")
	flush(t, b)
	cancel()
	// Recording stops asynchronously after ctx ends; starting again
	// succeeds once it has.
	check.Eventually(t, "a new start after the context ended", func() error {
		return b.StartRecordingToSinkWithContext(context.Background())
	})
	r.Eventf(pod("ns", "b"), nil, v1.EventTypeNormal, "R", "A", "two")
	flush(t, b)
	if n := len(s.all()); n != 2 {
		t.Fatalf("stored %d events; stats %+v", n, b.Stats())
	}
	// One sink at a time: no event was written twice.
	if s.creates != 2 || s.patches != 0 {
		t.Errorf("creates %d patches %d", s.creates, s.patches)
	}
}

func TestStartRecordingCancelledContext(t *testing.T) {
	b := events.NewBroadcaster(newMemSink())
	defer b.Shutdown()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.StartRecordingToSinkWithContext(ctx); err == nil {
		t.Fatal("no error for a cancelled context")
	}
}

func TestStartRecordingAfterShutdown(t *testing.T) {
	b := events.NewBroadcaster(newMemSink())
	b.Shutdown()
	err := b.StartRecordingToSinkWithContext(context.Background())
	if err == nil || err.Error() != "broadcaster already stopped" {
		t.Fatalf("err = %v", err)
	}
	if _, err := b.StartEventWatcher(func(runtime.Object) {}); err == nil {
		t.Error("StartEventWatcher after Shutdown: no error")
	}
	if _, err := b.StartLogging(klogDiscard()); err == nil {
		t.Error("StartLogging after Shutdown: no error")
	}
	b.Shutdown() // idempotent
}

func TestNilSink(t *testing.T) {
	var nilImpl *events.EventSinkImpl
	for _, s := range []events.EventSink{nil, nilImpl, &events.EventSinkImpl{}} {
		b := events.NewBroadcaster(s)
		if err := b.StartRecordingToSinkWithContext(context.Background()); err == nil {
			t.Errorf("%T %v: no error", s, s)
		}
		b.Shutdown()
	}
}

func TestDeprecatedStartRecordingToSink(t *testing.T) {
	base := goleak.IgnoreCurrent()
	s := newMemSink()
	b := events.NewBroadcaster(s, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited})))
	stopCh := make(chan struct{})
	b.StartRecordingToSink(stopCh)
	r := b.NewRecorder(scheme.Scheme, "ctl")
	r.Eventf(pod("ns", "a"), nil, v1.EventTypeNormal, "R", "A", "one")
	flush(t, b)
	if len(s.all()) != 1 {
		t.Fatalf("stored %d", len(s.all()))
	}
	close(stopCh)
	check.Eventually(t, "recording to stop after stopCh closed", func() error {
		return b.StartRecordingToSinkWithContext(context.Background())
	})
	b.Shutdown()
	if err := goleak.Find(base); err != nil {
		t.Fatal(err)
	}

	// A never-closed stopCh: Shutdown still ends the goroutine.
	b = events.NewBroadcaster(newMemSink())
	b.StartRecordingToSink(nil)
	b.Shutdown()
	if err := goleak.Find(base); err != nil {
		t.Fatal(err)
	}
}

func TestStartEventWatcher(t *testing.T) {
	b := events.NewBroadcaster(nil)
	defer b.Shutdown()
	var mu sync.Mutex
	var got []*eventsv1.Event
	stop, err := b.StartEventWatcher(func(o runtime.Object) {
		e, ok := o.(*eventsv1.Event)
		if !ok {
			t.Errorf("handler got %T", o)
			return
		}
		mu.Lock()
		got = append(got, e)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.StartEventWatcher(nil); err == nil {
		t.Error("nil handler: no error")
	}
	rl := b.NewRecorder(scheme.Scheme, "example.com/ctl")
	r := rl.(events.AnnotatedEventRecorder)
	node := &v1.Node{}
	node.Name = "n"
	r.AnnotatedEventf(pod("ns", "a"), node, map[string]string{"k": "v"}, v1.EventTypeWarning, "Reason", "Action", "note %d", 1)
	flush(t, b)
	mu.Lock()
	if len(got) != 1 {
		t.Fatalf("handler got %d events", len(got))
	}
	e := got[0]
	mu.Unlock()
	if e.Regarding.Name != "a" || e.Regarding.Kind != "Pod" || e.Related == nil || e.Related.Name != "n" ||
		e.Type != v1.EventTypeWarning || e.Reason != "Reason" || e.Action != "Action" || e.Note != "note 1" ||
		e.ReportingController != "example.com/ctl" || e.Annotations["k"] != "v" || e.Namespace != "ns" || e.EventTime.IsZero() {
		t.Errorf("got %+v", e)
	}
	stop()
	rl.Eventf(pod("ns", "a"), nil, v1.EventTypeWarning, "Reason", "Action", "after stop")
	flush(t, b)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Errorf("handler called after stop: %d events", len(got))
	}
}

func TestStartLogging(t *testing.T) {
	logger, logs := bufferLogger(t)
	b := events.NewBroadcaster(nil, events.WithBroadcasterOptions(record.WithLogger(logger)))
	defer b.Shutdown()
	stop, err := b.StartLogging(logger)
	if err != nil {
		t.Fatal(err)
	}
	stop2 := b.StartStructuredLogging(0)
	r := b.NewRecorder(scheme.Scheme, "ctl")
	r.Eventf(pod("ns", "a"), nil, v1.EventTypeNormal, "Reason", "DoIt", "the note %s", "x")
	flush(t, b)
	out := logs()
	if !strings.Contains(out, "Event occurred") || !strings.Contains(out, `action="DoIt"`) || !strings.Contains(out, `note="the note x"`) ||
		!strings.Contains(out, `object="ns/a"`) || !strings.Contains(out, `reason="Reason"`) {
		t.Errorf("log: %s", out)
	}
	stop()
	stop2()
	before := logs()
	r.Eventf(pod("ns", "b"), nil, v1.EventTypeNormal, "Reason", "DoIt", "after")
	flush(t, b)
	if strings.Contains(strings.TrimPrefix(logs(), before), "Event occurred") {
		t.Errorf("logged after stop: %s", logs())
	}
}

// Shutdown writes every pending series count, exactly.
func TestShutdownFlushesSeriesCounts(t *testing.T) {
	s := newMemSink()
	b := events.NewBroadcaster(s, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited})))
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := b.NewRecorder(scheme.Scheme, "ctl")
	for i := 0; i < 1000; i++ {
		r.Eventf(pod("ns", fmt.Sprint("p", i%50)), nil, v1.EventTypeWarning, "R", "A", "n")
	}
	b.Shutdown()
	st := b.Stats()
	check.Settled(t, st)
	evs := s.all()
	if len(evs) != 50 {
		t.Fatalf("stored %d events; stats %+v", len(evs), st)
	}
	for _, e := range evs {
		if e.Series == nil || e.Series.Count != 20 {
			t.Errorf("%s: series %+v", e.Regarding.Name, e.Series)
		}
	}
	if st.Recorded != 1000 || st.Created != 50 || st.Created+st.Patched+st.Coalesced != 1000 {
		t.Errorf("stats %+v", st)
	}
}

func TestShutdownWithContextHangingSink(t *testing.T) {
	s := newMemSink()
	s.block = true
	b := events.NewBroadcaster(s, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited})))
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := b.NewRecorder(scheme.Scheme, "ctl")
	for i := 0; i < 5; i++ {
		r.Eventf(pod("ns", fmt.Sprint("p", i)), nil, v1.EventTypeWarning, "R", "A", "n")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := b.ShutdownWithContext(ctx)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("ShutdownWithContext took %v", took)
	}
	if err == nil || !strings.Contains(err.Error(), "5") {
		t.Errorf("err = %v", err)
	}
	st := b.Stats()
	if st.Abandoned != 5 {
		t.Errorf("stats %+v", st)
	}
	check.Settled(t, st)
	if err2 := b.ShutdownWithContext(context.Background()); fmt.Sprint(err2) != fmt.Sprint(err) {
		t.Errorf("second call: %v, first %v", err2, err)
	}
}

func TestEventfAfterShutdown(t *testing.T) {
	s := newMemSink()
	b := events.NewBroadcaster(s)
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := b.NewRecorder(scheme.Scheme, "ctl")
	b.Shutdown()
	r.Eventf(pod("ns", "a"), nil, v1.EventTypeNormal, "R", "A", "n")
	st := b.Stats()
	if st.Recorded != 1 || st.Dropped.AfterShutdown != 1 || len(s.all()) != 0 {
		t.Errorf("stats %+v", st)
	}
	check.Settled(t, st)
}

func TestConcurrentEventf(t *testing.T) {
	s := newMemSink()
	b := events.NewBroadcaster(s, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited})))
	defer b.Shutdown()
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := b.NewRecorder(scheme.Scheme, "ctl")
	var wg sync.WaitGroup
	const G, N = 32, 50
	for g := 0; g < G; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rr := r.WithLogger(klogDiscard())
			for i := 0; i < N; i++ {
				rr.Eventf(pod("ns", fmt.Sprint("p", i%10)), nil, v1.EventTypeWarning, "R", fmt.Sprint("A", g%4), "g %d i %d", g, i)
			}
		}()
	}
	wg.Wait()
	flush(t, b)
	st := b.Stats()
	check.Settled(t, st)
	var total int32
	for _, e := range s.all() {
		if e.Series == nil {
			total++
		} else {
			total += e.Series.Count
		}
	}
	if st.Recorded != G*N || int64(total)+st.Dropped.Total() != G*N {
		t.Errorf("stored occurrences %d; stats %+v", total, st)
	}
	if st.Dropped.QueueFull == 0 && total != G*N {
		t.Errorf("lost occurrences without a drop")
	}
}

// Shutdown while 32 goroutines record: every event is written or counted.
func TestShutdownDuringConcurrentEventf(t *testing.T) {
	s := newMemSink()
	b := events.NewBroadcaster(s, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited})))
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	stop, err := b.StartLogging(klogDiscard())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	r := b.NewRecorder(scheme.Scheme, "ctl")
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < 100; i++ {
				r.Eventf(pod("ns", fmt.Sprint("p", i%7)), nil, v1.EventTypeNormal, "R", fmt.Sprint("A", g%3), "n")
			}
		}()
	}
	close(start)
	b.Shutdown()
	wg.Wait()
	st := b.Stats()
	check.Settled(t, st)
	var stored int64
	for _, e := range s.all() {
		stored += int64(count(e))
	}
	if stored != st.Created+st.Patched+st.Coalesced || st.Recorded != 3200 {
		t.Errorf("stored occurrences %d; stats %+v", stored, st)
	}
}

// Events recorded before the recording context ends are still written.
func TestContextEndWritesWhatWasRecorded(t *testing.T) {
	s := newMemSink()
	b := events.NewBroadcaster(s, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited})))
	defer b.Shutdown()
	ctx, cancel := context.WithCancel(context.Background())
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	r := b.NewRecorder(scheme.Scheme, "ctl")
	for i := 0; i < 20; i++ {
		r.Eventf(pod("ns", fmt.Sprint("p", i%5)), nil, v1.EventTypeNormal, "R", "A", "n")
	}
	cancel()
	check.Eventually(t, "recording to stop", func() error {
		return b.StartRecordingToSinkWithContext(context.Background())
	})
	flush(t, b)
	var stored int32
	for _, e := range s.all() {
		stored += count(e)
	}
	if stored != 20 {
		t.Errorf("stored %d occurrences; stats %+v", stored, b.Stats())
	}
	check.Settled(t, b.Stats())
}

// client-go's EventSinkImpl without a client is refused like herald's.
func TestClientGoSinkWithoutClient(t *testing.T) {
	b := events.NewBroadcaster(&cgevents.EventSinkImpl{})
	defer b.Shutdown()
	if err := b.StartRecordingToSinkWithContext(context.Background()); err == nil {
		t.Fatal("no error for a client-go EventSinkImpl without a client")
	}
}

// A watcher's event is its own: mutating it changes neither the stored
// event nor what other watchers see.
func TestWatcherEventIsOwn(t *testing.T) {
	s := newMemSink()
	b := events.NewBroadcaster(s, events.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: sink.Unlimited})))
	defer b.Shutdown()
	if err := b.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	var seen []string
	var mu sync.Mutex
	for i := 0; i < 2; i++ {
		stop, err := b.StartEventWatcher(func(o runtime.Object) {
			e := o.(*eventsv1.Event)
			mu.Lock()
			seen = append(seen, e.Annotations["k"]+"/"+e.Related.Name)
			mu.Unlock()
			e.Annotations["k"] = "mutated"
			e.Related.Name = "mutated"
			e.Note = "mutated"
		})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
	}
	r := b.NewRecorder(scheme.Scheme, "ctl").(events.AnnotatedEventRecorder)
	r.AnnotatedEventf(pod("ns", "p"), pod("ns", "rel"), map[string]string{"k": "v"}, v1.EventTypeNormal, "R", "A", "n")
	flush(t, b)
	evs := s.all()
	if len(evs) != 1 || evs[0].Annotations["k"] != "v" || evs[0].Related.Name != "rel" || evs[0].Note != "n" {
		t.Errorf("stored %+v", evs)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, x := range seen {
		if x != "v/rel" {
			t.Errorf("a watcher saw %q", seen)
		}
	}
}

// A broadcaster shut down by its own context (record.WithContext) leaves no
// goroutine of the deprecated StartRecordingToSink(nil) behind.
func TestDeprecatedStartRecordingNilStopChEndsWithContext(t *testing.T) {
	base := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	b := events.NewBroadcaster(newMemSink(), events.WithBroadcasterOptions(record.WithContext(ctx)))
	b.StartRecordingToSink(nil)
	b.NewRecorder(scheme.Scheme, "ctl").Eventf(pod("ns", "p"), nil, v1.EventTypeNormal, "R", "A", "n")
	cancel()
	check.Eventually(t, "the broadcaster's goroutines to end", func() error { return goleak.Find(base) })
}

// TestDeprecatedStartEndsWithContext: with record.WithContext, the end of
// that context shuts the broadcaster down, and the goroutine of a
// deprecated StartRecordingToSink whose stop channel never closes ends too.
func TestDeprecatedStartEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: fake.NewClientset().EventsV1()}, events.WithBroadcasterOptions(record.WithContext(ctx)))
	b.StartRecordingToSink(make(chan struct{}))
	cancel()
	// Wait for the shutdown the context started (without calling
	// Shutdown, which would end the goroutine by itself).
	check.Eventually(t, "the broadcaster to shut down when its context ended", func() error {
		stop, err := b.StartEventWatcher(func(runtime.Object) {})
		if err == nil {
			stop()
			return errors.New("StartEventWatcher still starts a watcher")
		}
		return nil
	})
	goleak.VerifyNone(t)
}

// TestSeriesIntervalOutOfRange: a negative series interval means the
// default and is logged once, naming the option; NoSeriesInterval is not
// out of range.
func TestSeriesIntervalOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		logs int
	}{{-time.Second, 1}, {events.NoSeriesInterval, 0}, {0, 0}} {
		logger, logLines := check.Logger()
		b := events.NewBroadcaster(newMemSink(), events.WithSeriesInterval(tc.d), events.WithBroadcasterOptions(record.WithLogger(logger)))
		b.Shutdown()
		lines := logLines()
		n := 0
		for _, l := range lines {
			if strings.Contains(l, "Invalid broadcaster option") && strings.Contains(l, `"option"="WithSeriesInterval"`) {
				n++
			}
		}
		if n != tc.logs {
			t.Errorf("WithSeriesInterval(%v): %d log lines naming it, want %d:\n%s", tc.d, n, tc.logs, strings.Join(lines, "\n"))
		}
	}
}

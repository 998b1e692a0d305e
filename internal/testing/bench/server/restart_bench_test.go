package server_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	clientrecord "k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/internal/testing/testenv"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

const (
	restartEvents = 200
	restartDown   = 5 * time.Second
	restartMax    = 40 * time.Second // observation after the server answers again, at most
	// restartFloor is the least time herald's defaults (50 writes/s, a
	// burst of 100) take to write the events once the server answers:
	// the burst at once, the other 100 at 50/s.
	restartFloor = time.Duration(restartEvents-100) * time.Second / 50
)

// BenchmarkRestart stops a real kube-apiserver (internal/testing/testenv) for 5 s,
// records 200 events on distinct objects meanwhile, starts it again on the
// same data and measures how long after it answers again (its first answer
// to a List, polled every 10 ms; its /readyz says 200 about a second
// later) every event is stored. herald runs with its defaults and its own
// events client (sink.NewForConfig); client-go with its defaults.
func BenchmarkRestart(b *testing.B) {
	if _, err := testenv.BinaryPath(); err != nil {
		b.Fatalf("%v (run `make apiserver`)", err)
	}
	env, err := testenv.Start(context.Background(), testenv.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer env.Stop()
	for _, impl := range []string{"herald", "client-go"} {
		b.Run("impl="+impl, func(b *testing.B) {
			b.Logf("benchnote: Restart: a real kube-apiserver stopped for %v (connection refused) while %d events are recorded, then started again on the same data; settled-ms counts from its first answer (to a List, polled every 10 ms), ready-ms is when its /readyz said 200 after that. herald: defaults, sink.NewForConfig (floor-ms: its write limit alone, 50/s after a burst of 100, takes that long to write them); client-go: defaults.", restartDown, restartEvents)
			var stored, settled, ready, lost float64
			for i := range b.N {
				r := runRestart(b, env, impl, fmt.Sprintf("restart-%s-%d-%d", impl, i, time.Now().UnixNano()))
				stored, settled, ready, lost = stored+r.stored, settled+r.settledMS, ready+r.readyMS, lost+r.lost
			}
			n := float64(b.N)
			b.ReportMetric(restartEvents, "recorded")
			b.ReportMetric(stored/n, "stored")
			b.ReportMetric(lost/n, "lost")
			b.ReportMetric(settled/n, "settled-ms")
			b.ReportMetric(ready/n, "ready-ms")
			if impl == "herald" {
				b.ReportMetric(float64(restartFloor.Milliseconds()), "floor-ms")
			}
		})
	}
}

type restartResult struct{ stored, settledMS, readyMS, lost float64 }

func runRestart(b *testing.B, env *testenv.Env, impl, ns string) restartResult {
	ctx := context.Background()
	admin, err := kubernetes.NewForConfig(env.Admin)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	src := v1.EventSource{Component: "restart-bench"}
	var rec func(obj *v1.Pod, i int)
	var flush func(context.Context) error
	var shutdown func()
	var dropped func() int64
	logCtx := klog.NewContext(ctx, discard)
	if impl == "herald" {
		s, err := sink.NewForConfig(env.Admin)
		if err != nil {
			b.Fatal(err)
		}
		eb := record.NewBroadcaster(record.WithLogger(discard))
		eb.StartRecordingToSink(s)
		r := eb.NewRecorder(scheme.Scheme, src)
		rec = func(obj *v1.Pod, i int) { r.Eventf(obj, v1.EventTypeWarning, "Failed", "object %d failed", i) }
		flush = eb.Flush
		shutdown = eb.Shutdown
		dropped = func() int64 { st := eb.Stats(); return st.Dropped.Total() + st.Abandoned }
	} else {
		cs, err := kubernetes.NewForConfig(env.Admin)
		if err != nil {
			b.Fatal(err)
		}
		eb := clientrecord.NewBroadcaster(clientrecord.WithContext(logCtx))
		eb.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
		r := eb.NewRecorder(scheme.Scheme, src)
		rec = func(obj *v1.Pod, i int) { r.Eventf(obj, v1.EventTypeWarning, "Failed", "object %d failed", i) }
		shutdown = eb.Shutdown
		dropped = func() int64 { return 0 }
	}
	if err := env.Halt(); err != nil {
		b.Fatal(err)
	}
	haltedAt := time.Now()
	for i := range restartEvents {
		rec(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("pod-", i), UID: "u"}}, i)
	}
	time.Sleep(time.Until(haltedAt.Add(restartDown)))
	count := func() int {
		lctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		l, err := admin.CoreV1().Events(ns).List(lctx, metav1.ListOptions{})
		if err != nil {
			return -1
		}
		return len(l.Items)
	}
	// The server answers requests before its /readyz says 200, which is
	// when Restart returns: the clock starts at its first answer. The
	// poller also notes when the count of stored events last changed
	// (client-go cannot say when it is done, and may have stored them
	// all before /readyz).
	var (
		mu       sync.Mutex
		answered time.Time // the first answer
		seen     int       // events stored at the last answer
		changed  time.Time // when seen last changed
	)
	stopPoll, polled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(polled)
		for {
			select {
			case <-stopPoll:
				return
			case <-time.After(10 * time.Millisecond):
			}
			if c := count(); c >= 0 {
				now := time.Now()
				mu.Lock()
				if answered.IsZero() {
					answered, changed = now, now
				}
				if c != seen {
					seen, changed = c, now
				}
				mu.Unlock()
			}
		}
	}()
	poll := func() (answeredAt time.Time, n int, changedAt time.Time) {
		mu.Lock()
		defer mu.Unlock()
		return answered, seen, changed
	}
	if err := env.Restart(ctx); err != nil {
		b.Fatal(err)
	}
	readyAt := time.Now()
	for deadline := readyAt.Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if at, _, _ := poll(); !at.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the server said it was ready, but answered no List for 5 s after")
		}
	}
	ready, _, _ := poll()
	var last time.Time
	if flush != nil {
		fctx, cancel := context.WithTimeout(ctx, restartMax)
		_ = flush(fctx)
		cancel()
		last = time.Now()
	} else {
		// Until all are stored, or nothing new for 15 s, or restartMax.
		for {
			_, n, at := poll()
			if time.Since(ready) >= restartMax || n >= restartEvents || time.Since(at) >= 15*time.Second {
				last = at
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	close(stopPoll)
	<-polled
	n := count()
	shutdown()
	if os.Getenv("HERALD_BENCH_VERBOSE") != "" {
		b.Logf("%s: %d stored, settled %v after the first answer, ready %v after it", impl, n, last.Sub(ready), readyAt.Sub(ready))
	}
	return restartResult{
		stored:    float64(n),
		settledMS: float64(last.Sub(ready).Milliseconds()),
		readyMS:   float64(readyAt.Sub(ready).Milliseconds()),
		lost:      float64(restartEvents - n - int(dropped())),
	}
}

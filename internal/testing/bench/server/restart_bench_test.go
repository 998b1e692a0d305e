package server_test

import (
	"context"
	"fmt"
	"os"
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
)

// BenchmarkRestart stops a real kube-apiserver (internal/testing/testenv) for 5 s,
// records 200 events on distinct objects meanwhile, starts it again on the
// same data and measures how long after it answers again every event is
// stored. herald runs with its defaults and its own events client
// (sink.NewForConfig); client-go with its defaults.
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
			b.Logf("benchnote: Restart: a real kube-apiserver stopped for %v (connection refused) while %d events are recorded, then started again on the same data (ready ~3 s later); settled-ms counts from when it answers again. herald: defaults, sink.NewForConfig; client-go: defaults.", restartDown, restartEvents)
			var stored, settled, lost float64
			for i := range b.N {
				s, st, l := runRestart(b, env, impl, fmt.Sprintf("restart-%s-%d", impl, i))
				stored, settled, lost = stored+s, settled+st, lost+l
			}
			n := float64(b.N)
			b.ReportMetric(restartEvents, "recorded")
			b.ReportMetric(stored/n, "stored")
			b.ReportMetric(lost/n, "lost")
			b.ReportMetric(settled/n, "settled-ms")
		})
	}
}

func runRestart(b *testing.B, env *testenv.Env, impl, ns string) (stored, settledMS, lost float64) {
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
	if err := env.Restart(ctx); err != nil {
		b.Fatal(err)
	}
	ready := time.Now()
	count := func() int {
		l, err := admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return -1
		}
		return len(l.Items)
	}
	var last time.Time
	if flush != nil {
		fctx, cancel := context.WithTimeout(ctx, restartMax)
		_ = flush(fctx)
		cancel()
		last = time.Now()
	} else {
		// client-go cannot say when it is done: poll until all are stored,
		// or nothing new for 15 s, or restartMax.
		n, changed := 0, time.Now()
		for time.Since(ready) < restartMax && n < restartEvents && time.Since(changed) < 15*time.Second {
			if c := count(); c != n && c >= 0 {
				n, changed = c, time.Now()
			}
			time.Sleep(50 * time.Millisecond)
		}
		last = changed
	}
	n := count()
	shutdown()
	if os.Getenv("HERALD_BENCH_VERBOSE") != "" {
		b.Logf("%s: %d stored, settled %v after ready", impl, n, last.Sub(ready))
	}
	return float64(n), float64(last.Sub(ready).Milliseconds()), float64(restartEvents - n - int(dropped()))
}

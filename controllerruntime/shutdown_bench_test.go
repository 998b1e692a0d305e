package controllerruntime_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	heraldcr "github.com/heraldk8s/herald/controllerruntime"
)

// BenchmarkManagerShutdown: a controller-runtime manager whose runnable
// records 1,000 distinct events with mgr.GetEventRecorder when its context
// ends (a controller finishing its work at SIGTERM), then the manager stops.
// impl=herald is heraldcr.NewManager; impl=client-go is manager.New with
// controller-runtime's own recorder (client-go's tools/events underneath).
// Metrics: events stored when Start has returned, and 5 s later (what a
// process that exits at once, or a moment later, keeps), lost (recorded −
// stored 5 s later) and how long Start took to return after the cancel.
// It runs against the package's real kube-apiserver; each iteration uses a
// namespace of its own.
func BenchmarkManagerShutdown(b *testing.B) {
	const n = 1000
	for _, impl := range []string{"herald", "client-go"} {
		b.Run("impl="+impl, func(b *testing.B) {
			var storedAtReturn, storedLater, shutdownMS float64
			for i := 0; i < b.N; i++ {
				ns := env.CreateNamespace(b, "cr-bench")
				a, l, ms := runManagerShutdown(b, impl, ns, n)
				storedAtReturn += float64(a)
				storedLater += float64(l)
				shutdownMS += ms
			}
			N := float64(b.N)
			b.ReportMetric(n, "recorded")
			b.ReportMetric(storedAtReturn/N, "written")
			b.ReportMetric(storedLater/N, "written-after-5s")
			b.ReportMetric(n-storedLater/N, "lost")
			b.ReportMetric(shutdownMS/N, "shutdown-ms")
		})
	}
}

func runManagerShutdown(b *testing.B, impl, ns string, n int) (atReturn, later int, ms float64) {
	b.Helper()
	var (
		mgr   manager.Manager
		start func(context.Context) error
		rec   recorder.EventRecorder
	)
	switch impl {
	case "herald":
		m, err := heraldcr.NewManager(env.Admin, baseOptions())
		if err != nil {
			b.Fatal(err)
		}
		mgr, start, rec = m, m.Start, m.GetEventRecorder(controllerName)
	default:
		m, err := manager.New(env.Admin, baseOptions())
		if err != nil {
			b.Fatal(err)
		}
		mgr, start, rec = m, m.Start, m.GetEventRecorder(controllerName)
	}
	running := make(chan struct{})
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		close(running)
		<-ctx.Done()
		for i := range n {
			obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, Name: fmt.Sprintf("cm-%04d", i), UID: types.UID(fmt.Sprintf("uid-%04d", i)),
			}}
			rec.Eventf(obj, nil, corev1.EventTypeNormal, "Stopping", "Shutdown", "stopping while handling %s", obj.Name)
		}
		return nil
	})); err != nil {
		b.Fatal(err)
	}
	goroutines := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- start(ctx) }()
	<-running
	cancel()
	begin := time.Now()
	if err := <-done; err != nil {
		b.Logf("%s: Start: %v", impl, err)
	}
	ms = float64(time.Since(begin).Microseconds()) / 1000
	cs, err := kubernetes.NewForConfig(env.Admin)
	if err != nil {
		b.Fatal(err)
	}
	count := func() int {
		evs, err := listV1(context.Background(), cs, ns)
		if err != nil {
			b.Fatal(err)
		}
		return len(evs)
	}
	atReturn = count()
	// What keeps writing after Start returned (controller-runtime stops its
	// recorders in a goroutine it does not wait for) has 5 s more.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && runtime.NumGoroutine() > goroutines {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Until(deadline))
	later = count()
	return atReturn, later, ms
}

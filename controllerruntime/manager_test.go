package controllerruntime_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientrecord "k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	heraldcr "github.com/heraldk8s/herald/controllerruntime"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// controllerName is the reportingController of the tests' events.k8s.io/v1
// recorders (a qualified name, as controller-runtime asks).
const controllerName = "example.com/herald-cr-test"

// baseOptions are manager options that open no port (metrics and health
// probes off), so that tests can run managers side by side.
func baseOptions() manager.Options {
	return manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	}
}

func adminClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Admin)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	return cs
}

// newManager calls heraldcr.NewManager with env.Admin and shuts herald down
// when t ends (a no-op after Start has returned).
func newManager(t *testing.T, opts manager.Options, heraldOpts ...heraldcr.Option) *heraldcr.Manager {
	t.Helper()
	mgr, err := heraldcr.NewManager(env.Admin, opts, heraldOpts...)
	if err != nil {
		t.Fatalf("NewManager: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		defer cancel()
		if err := mgr.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return mgr
}

func flush(t *testing.T, mgr *heraldcr.Manager) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	if err := mgr.Flush(ctx); err != nil {
		core, ev := statsOf(mgr)
		t.Fatalf("Flush: %v\ncore stats %+v\nevents stats %+v", err, core, ev)
	}
}

// createConfigMap creates a ConfigMap in ns and returns it with an empty
// TypeMeta, as typed objects usually are, so that recorders must resolve
// its kind with the manager's scheme.
func createConfigMap(t *testing.T, cs kubernetes.Interface, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Data:       map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ConfigMap %s/%s: %v", ns, name, err)
	}
	cm.TypeMeta = metav1.TypeMeta{}
	return cm
}

func listV1(ctx context.Context, cs kubernetes.Interface, ns string) ([]eventsv1.Event, error) {
	l, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

func listCore(ctx context.Context, cs kubernetes.Interface, ns string) ([]corev1.Event, error) {
	l, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// checkNoDrops fails t if s counts a dropped or abandoned event.
func checkNoDrops(t *testing.T, what string, s record.Stats) {
	t.Helper()
	if s.Dropped.Total() != 0 || s.Abandoned != 0 {
		t.Errorf("%s: dropped %v, abandoned %d, want none: %+v", what, s.Dropped.ByReason(), s.Abandoned, s)
	}
	if u := s.Unaccounted(); u != 0 {
		t.Errorf("%s: %d events unaccounted: %+v", what, u, s)
	}
}

func TestGetEventRecorderWritesEventsV1(t *testing.T) {
	ns := env.CreateNamespace(t, "cr-events-v1")
	cs := adminClient(t)
	cm := createConfigMap(t, cs, ns, "watched")
	rel := createConfigMap(t, cs, ns, "related")

	mgr := newManager(t, baseOptions())
	rec := mgr.GetEventRecorder(controllerName)
	const n = 7
	for i := range n {
		rec.Eventf(cm, rel, corev1.EventTypeNormal, "Observed", "Reconcile", "observed %s (%d)", cm.Name, i)
	}
	rec.Eventf(cm, nil, corev1.EventTypeWarning, "Invalid", "Validate", "key %q is not allowed", "k")
	flush(t, mgr)

	evs, err := listV1(context.Background(), cs, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 {
		t.Fatalf("got %d events.k8s.io/v1 events, want 2: %+v", len(evs), evs)
	}
	byReason := map[string]eventsv1.Event{}
	for _, e := range evs {
		byReason[e.Reason] = e
	}
	obs, ok := byReason["Observed"]
	if !ok {
		t.Fatalf("no Observed event: %+v", evs)
	}
	wantRegarding := corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: ns, Name: cm.Name, UID: cm.UID, ResourceVersion: cm.ResourceVersion}
	if obs.Regarding != wantRegarding {
		t.Errorf("regarding = %+v, want %+v", obs.Regarding, wantRegarding)
	}
	if obs.Related == nil || obs.Related.Kind != "ConfigMap" || obs.Related.Name != rel.Name || obs.Related.UID != rel.UID {
		t.Errorf("related = %+v, want ConfigMap %s (uid %s)", obs.Related, rel.Name, rel.UID)
	}
	if obs.ReportingController != controllerName || !strings.HasPrefix(obs.ReportingInstance, controllerName+"-") {
		t.Errorf("reportingController %q, reportingInstance %q, want %q and %q-<host>", obs.ReportingController, obs.ReportingInstance, controllerName, controllerName)
	}
	if obs.Action != "Reconcile" || obs.Type != corev1.EventTypeNormal || obs.Note != "observed watched (0)" {
		t.Errorf("action %q, type %q, note %q", obs.Action, obs.Type, obs.Note)
	}
	if obs.Series == nil || obs.Series.Count != n {
		t.Errorf("series = %+v, want count %d", obs.Series, n)
	}
	inv, ok := byReason["Invalid"]
	if !ok {
		t.Fatalf("no Invalid event: %+v", evs)
	}
	if inv.Type != corev1.EventTypeWarning || inv.Action != "Validate" || inv.Note != `key "k" is not allowed` || inv.Related != nil || inv.Series != nil || inv.Regarding.Name != cm.Name {
		t.Errorf("Invalid event = %+v", inv)
	}

	_, s := statsOf(mgr)
	checkNoDrops(t, "events.k8s.io/v1", s)
	if s.Recorded != n+1 || s.Created != 2 {
		t.Errorf("events.k8s.io/v1 stats: recorded %d, created %d, want %d and 2: %+v", s.Recorded, s.Created, n+1, s)
	}
	if core, _ := statsOf(mgr); core.Recorded != 0 {
		t.Errorf("core/v1 broadcaster recorded %d events, want 0", core.Recorded)
	}
}

func TestGetEventRecorderForWritesCoreV1(t *testing.T) {
	ns := env.CreateNamespace(t, "cr-core-v1")
	cs := adminClient(t)
	cm := createConfigMap(t, cs, ns, "watched")

	mgr := newManager(t, baseOptions())
	rec := mgr.GetEventRecorderFor("herald-cr-test") //nolint:staticcheck // what is tested
	const n = 3
	for range n {
		rec.Eventf(cm, corev1.EventTypeNormal, "Synced", "synced %s", cm.Name)
	}
	flush(t, mgr)

	evs, err := listCore(context.Background(), cs, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		t.Fatalf("got %d core/v1 events, want 1: %+v", len(evs), evs)
	}
	e := evs[0]
	if e.Source.Component != "herald-cr-test" {
		t.Errorf("source = %+v, want component herald-cr-test", e.Source)
	}
	if e.InvolvedObject.Kind != "ConfigMap" || e.InvolvedObject.APIVersion != "v1" || e.InvolvedObject.Name != cm.Name || e.InvolvedObject.UID != cm.UID {
		t.Errorf("involvedObject = %+v", e.InvolvedObject)
	}
	if e.Reason != "Synced" || e.Message != "synced watched" || e.Type != corev1.EventTypeNormal || e.Count != n {
		t.Errorf("reason %q, message %q, type %q, count %d (want %d)", e.Reason, e.Message, e.Type, e.Count, n)
	}
	core, ev := statsOf(mgr)
	checkNoDrops(t, "core/v1", core)
	if core.Recorded != n || ev.Recorded != 0 {
		t.Errorf("recorded: core/v1 %d (want %d), events.k8s.io/v1 %d (want 0)", core.Recorded, n, ev.Recorded)
	}
}

// startManager runs mgr.Start in a goroutine; the returned function cancels
// its context and returns how long Start took to return after the cancel,
// and Start's error.
func startManager(t *testing.T, mgr *heraldcr.Manager) (stop func() (time.Duration, error)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var stopped bool
	stop = func() (time.Duration, error) {
		stopped = true
		cancel()
		begin := time.Now()
		select {
		case err := <-done:
			return time.Since(begin), err
		case <-time.After(2 * time.Minute):
			t.Fatalf("Start did not return within 2 minutes of its context's end")
			return 0, nil
		}
	}
	t.Cleanup(func() {
		if !stopped {
			_, _ = stop()
		}
	})
	return stop
}

// controllerRuntimeGoroutines are the goroutines of controller-runtime
// that goleak ignores after Start has returned: none. Its own recorder
// providers (cluster's and manager's) are created lazily, and Stop creates
// their client-go broadcasters if no event was recorded through them (as
// here, herald having all the recorders) and shuts them down in a goroutine
// of its own that Stop does not wait for (pkg/internal/recorder/recorder.go
// :74-99 in v0.25.2). That goroutine and those broadcasters' are gone by the
// time herald has flushed, or within goleak's retries: goroutine dumps taken
// right after Start returned (with and without leader election) held none of
// controller-runtime's or client-go's recorder goroutines. Should a version
// leave some, name them here, with the reason.
var controllerRuntimeGoroutines []goleak.Option

// TestStartFlushesEventsOfStoppingRunnables records 1,000 distinct events
// from a runnable once its context has ended, before it returns; all must be
// stored when Start returns.
func TestStartFlushesEventsOfStoppingRunnables(t *testing.T) {
	ns := env.CreateNamespace(t, "cr-stop")
	cs := adminClient(t)
	leakOpts := append([]goleak.Option{goleak.IgnoreCurrent()}, controllerRuntimeGoroutines...)

	// herald's engine writes at most 50/s by default (sink.Options.QPS):
	// the 1,000 events are pending for about 18 s after the runnable
	// returns, within the default GracefulShutdownTimeout (30 s).
	mgr, err := heraldcr.NewManager(env.Admin, baseOptions())
	if err != nil {
		t.Fatal(err)
	}
	rec := mgr.GetEventRecorder(controllerName)
	const n = 1000
	running := make(chan struct{})
	type snapshot struct {
		at      time.Time
		written int64
	}
	recorded := make(chan snapshot, 1)
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		close(running)
		<-ctx.Done()
		for i := range n {
			obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, Name: fmt.Sprintf("cm-%04d", i), UID: types.UID(fmt.Sprintf("uid-%04d", i)),
			}}
			rec.Eventf(obj, nil, corev1.EventTypeNormal, "Stopping", "Shutdown", "stopping while handling %s", obj.Name)
		}
		_, s := statsOf(mgr)
		recorded <- snapshot{time.Now(), s.Created}
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	stop := startManager(t, mgr)
	select {
	case <-running:
	case <-time.After(pollTimeout):
		t.Fatal("runnable never started")
	}
	took, err := stop()
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	_, s := statsOf(mgr)
	snap := <-recorded
	t.Logf("Start returned %v after cancel, %v after the runnable had recorded its %d events (%d written then); stats %+v",
		took, time.Since(snap.at), n, snap.written, s)
	if snap.written >= n {
		t.Errorf("all %d events were written before the runnable returned: the test does not test the flush", n)
	}
	checkNoDrops(t, "events.k8s.io/v1", s)
	if s.Recorded != n || s.Created != n || s.Pending != 0 || s.InFlight != 0 || s.Queued != 0 {
		t.Errorf("stats: recorded %d, created %d (want %d each), pending %d, in flight %d, queued %d", s.Recorded, s.Created, n, s.Pending, s.InFlight, s.Queued)
	}

	evs, err := listV1(context.Background(), cs, ns)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range evs {
		if e.Reason == "Stopping" {
			seen[e.Regarding.Name]++
		}
	}
	for i := range n {
		name := fmt.Sprintf("cm-%04d", i)
		if seen[name] != 1 {
			t.Errorf("event about %s stored %d times, want 1", name, seen[name])
		}
	}
	if len(evs) != n {
		t.Errorf("%d events stored, want %d", len(evs), n)
	}

	// Recording after Start returned is dropped and counted.
	rec.Eventf(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late"}}, nil, corev1.EventTypeNormal, "Late", "Shutdown", "too late")
	if _, s := statsOf(mgr); s.Dropped.AfterShutdown != 1 {
		t.Errorf("after Start returned: AfterShutdown %d, want 1", s.Dropped.AfterShutdown)
	}

	goleak.VerifyNone(t, leakOpts...)
}

// TestStartGivesUpAtGracefulShutdownTimeout: what the manager's
// GracefulShutdownTimeout leaves after ctx ended bounds the flush; the
// events not written by then are abandoned, counted and reported.
func TestStartGivesUpAtGracefulShutdownTimeout(t *testing.T) {
	ns := env.CreateNamespace(t, "cr-grace")
	grace := 1500 * time.Millisecond
	opts := baseOptions()
	opts.GracefulShutdownTimeout = &grace
	// 20 writes/s, burst 1: 200 events cannot be written in 1.5 s.
	mgr, err := heraldcr.NewManager(env.Admin, opts, heraldcr.WithBroadcasterOptions(record.WithSinkOptions(sink.Options{QPS: 20, Burst: 1})))
	if err != nil {
		t.Fatal(err)
	}
	rec := mgr.GetEventRecorder(controllerName)
	const n = 200
	running := make(chan struct{})
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		close(running)
		<-ctx.Done()
		for i := range n {
			rec.Eventf(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%d", i)}},
				nil, corev1.EventTypeNormal, "Stopping", "Shutdown", "stopping")
		}
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	stop := startManager(t, mgr)
	<-running
	took, err := stop()
	_, s := statsOf(mgr)
	t.Logf("Start returned after %v: %v; stats %+v", took, err, s)
	if err == nil {
		t.Errorf("Start returned nil, want the shutdown's error (events abandoned)")
	}
	if s.Abandoned == 0 || s.Created+s.Abandoned != n {
		t.Errorf("created %d + abandoned %d, want %d with some abandoned", s.Created, s.Abandoned, n)
	}
	if took > grace+2*time.Second {
		t.Errorf("Start returned %v after cancel, want about the grace period %v", took, grace)
	}
}

// TestLeaderElectionEventWrittenOnce: leader election's "became leader"
// event on the Lease goes through herald's core/v1 broadcaster and is
// stored exactly once.
func TestLeaderElectionEventWrittenOnce(t *testing.T) {
	ns := env.CreateNamespace(t, "cr-leader")
	cs := adminClient(t)
	lease, renew, retry := 4*time.Second, 3*time.Second, 500*time.Millisecond
	opts := baseOptions()
	opts.LeaderElection = true
	opts.LeaderElectionNamespace = ns
	opts.LeaderElectionID = "herald-cr-test.example.com"
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = &lease, &renew, &retry
	opts.LeaderElectionReleaseOnCancel = true
	leakOpts := append([]goleak.Option{goleak.IgnoreCurrent()}, controllerRuntimeGoroutines...)
	mgr := newManager(t, opts)
	stop := startManager(t, mgr)
	select {
	case <-mgr.Elected():
	case <-time.After(pollTimeout):
		t.Fatal("never elected")
	}
	became := func(evs []corev1.Event) []corev1.Event {
		var out []corev1.Event
		for _, e := range evs {
			if e.Reason == "LeaderElection" && strings.HasSuffix(e.Message, "became leader") {
				out = append(out, e)
			}
		}
		return out
	}
	eventually(t, "became-leader event stored", func(ctx context.Context) error {
		evs, err := listCore(ctx, cs, ns)
		if err != nil {
			return err
		}
		if b := became(evs); len(b) != 1 {
			return fmt.Errorf("%d became-leader events: %+v", len(b), b)
		}
		return nil
	})
	flush(t, mgr)
	core, ev := statsOf(mgr)
	if core.Created < 1 || core.Recorded < 1 {
		t.Errorf("core/v1 stats show no write of leader election's event: %+v", core)
	}
	if ev.Recorded != 0 {
		t.Errorf("events.k8s.io/v1 broadcaster recorded %d events, want 0", ev.Recorded)
	}
	if _, err := stop(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	goleak.VerifyNone(t, leakOpts...)

	evs, err := listCore(context.Background(), cs, ns)
	if err != nil {
		t.Fatal(err)
	}
	b := became(evs)
	if len(b) != 1 {
		t.Fatalf("%d became-leader events after stop, want 1: %+v", len(b), b)
	}
	e := b[0]
	if e.InvolvedObject.Kind != "Lease" || e.InvolvedObject.Name != opts.LeaderElectionID || e.Count != 1 || e.Type != corev1.EventTypeNormal {
		t.Errorf("became-leader event = %+v", e)
	}
	core, _ = statsOf(mgr)
	t.Logf("core/v1 stats after stop: %+v", core)
	if core.Dropped.AlreadyExists != 0 {
		t.Errorf("AlreadyExists %d, want 0 (an event written twice)", core.Dropped.AlreadyExists)
	}
	if core.Abandoned != 0 {
		t.Errorf("abandoned %d", core.Abandoned)
	}
	for _, e := range evs {
		if e.Count != 1 {
			t.Errorf("event %s (%s %q) has count %d, want 1", e.Name, e.Reason, e.Message, e.Count)
		}
	}
}

func TestNewManagerRefuses(t *testing.T) {
	defer goleak.VerifyNone(t, append([]goleak.Option{goleak.IgnoreCurrent()}, controllerRuntimeGoroutines...)...)

	if _, err := heraldcr.NewManager(nil, baseOptions()); err == nil {
		t.Error("NewManager(nil, ...) returned no error")
	}

	b := clientrecord.NewBroadcaster()
	defer b.Shutdown()
	opts := baseOptions()
	//lint:ignore SA1019 what is tested: NewManager refuses a broadcaster of the caller's
	opts.EventBroadcaster = b
	if _, err := heraldcr.NewManager(env.Admin, opts); err == nil || !strings.Contains(err.Error(), "EventBroadcaster") {
		t.Errorf("NewManager with Options.EventBroadcaster: err = %v, want a refusal naming EventBroadcaster", err)
	}

	// manager.New's own refusal (leader election without an ID): herald's
	// broadcasters are shut down again.
	opts = baseOptions()
	opts.LeaderElection = true
	opts.LeaderElectionNamespace = "default"
	if _, err := heraldcr.NewManager(env.Admin, opts); err == nil {
		t.Error("NewManager with LeaderElection and no LeaderElectionID returned no error")
	}
}

// TestSecondStartLeavesHeraldRunning: controller-runtime refuses a second
// Start ("manager already started"); that refusal must not shut herald down
// under the manager that is running.
func TestSecondStartLeavesHeraldRunning(t *testing.T) {
	ns := env.CreateNamespace(t, "cr-second-start")
	cs := adminClient(t)
	mgr := newManager(t, baseOptions())
	running := make(chan struct{})
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		close(running)
		<-ctx.Done()
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	stop := startManager(t, mgr)
	select {
	case <-running:
	case <-time.After(pollTimeout):
		t.Fatal("manager never ran its runnable")
	}
	if err := mgr.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "already started") {
		t.Fatalf("second Start: %v, want controller-runtime's refusal", err)
	}
	rec := mgr.GetEventRecorder(controllerName)
	rec.Eventf(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "after-second-start"}},
		nil, corev1.EventTypeNormal, "Observed", "Reconcile", "still recording")
	flush(t, mgr)
	_, s := statsOf(mgr)
	checkNoDrops(t, "events.k8s.io/v1", s)
	if s.Created != 1 {
		t.Errorf("created %d, want 1: %+v", s.Created, s)
	}
	if _, err := stop(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	evs, err := listV1(context.Background(), cs, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		t.Errorf("%d events stored, want 1", len(evs))
	}
}

// statsOf returns the counters of mgr's core/v1 and events.k8s.io/v1
// broadcasters.
func statsOf(mgr *heraldcr.Manager) (core, eventsV1 record.Stats) {
	c, e := mgr.Broadcasters()
	return c.Stats(), e.Stats()
}

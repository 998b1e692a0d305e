package integration

// Key-local faults on the real kube-apiserver (issue 18): the server is
// healthy and accepts most writes, but refuses every write of some keys for
// a reason of their own, a validating admission webhook failing for one
// namespace or the EventRateLimit admission plugin limiting one noisy
// object. The other events must be stored as promptly as when nothing is
// refused, and the refused ones accounted in Stats under their reason.
//
// Each scenario runs herald at its defaults, then client-go's recorder on
// the same server (while herald's broadcaster shuts down with a grace
// period long enough for the refused keys to exhaust their tries), and logs
// both figures side by side.

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	cgevents "k8s.io/client-go/tools/events"
	clientrecord "k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/heraldk8s/herald/events"
	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/internal/testing/testenv"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

const (
	// kfGood good events, one every kfSpacing (10 s in all), each about
	// an object of its own.
	kfGood    = 100
	kfSpacing = 100 * time.Millisecond
	// kfBadEvery: one refused write with every kfBadEvery-th good event,
	// so one every 0.5 s (20 in all), each a distinct event.
	kfBadEvery = 5
	kfBad      = kfGood / kfBadEvery
	// kfPrompt is how soon after the last good event was recorded at least
	// kfMinPrompt of the good events must be stored.
	kfPrompt    = 2 * time.Second
	kfMinPrompt = 98
	// kfGrace bounds herald's Shutdown after the prompt check. A refused
	// key is dropped after sink.Options.MaxTries' default of 12 tries; at
	// the engine's backoff (BaseDelay's default doubling to MaxDelay's
	// default, 2 s): 0.5 + 1 + 9·2 = 19.5 s at most between the
	// first and the twelfth try) the last refused event, first tried
	// 2.5 s before the check, is dropped 17 s after it at the latest.
	kfGrace = 25 * time.Second
	// kfMaxTries is sink.Options.MaxTries's default.
	kfMaxTries = 12
	// The controller's client, as in the issue (and the fleet bench).
	kfQPS   = 20
	kfBurst = 30
)

// kfEvent is one event of a scenario: an object, a reason, a message.
type kfEvent struct {
	obj    *v1.ObjectReference
	reason string
	msg    string
}

// kfPlan is what one recorder records: kfGood good events and kfBad
// refused ones, interleaved at the scenario's pace.
type kfPlan struct {
	// prefix starts the name of every object of the plan (a recorder's
	// objects are its own).
	prefix string
	// goodNS are the namespaces of the good events (round robin).
	goodNS []string
	// bad returns the i-th refused event.
	bad func(i int) kfEvent
}

func (p kfPlan) good(i int) kfEvent {
	ns := p.goodNS[i%len(p.goodNS)]
	return kfEvent{obj: podRef(ns, fmt.Sprintf("%s-good-%03d", p.prefix, i)), reason: "Good", msg: fmt.Sprintf("good event %d", i)}
}

// drive records p's events with rec at the scenario's pace and returns
// when the last good event was recorded.
func (p kfPlan) drive(rec func(kfEvent)) time.Time {
	start := time.Now()
	for i := range kfGood {
		time.Sleep(time.Until(start.Add(time.Duration(i) * kfSpacing)))
		if i%kfBadEvery == 0 {
			rec(p.bad(i / kfBadEvery))
		}
		rec(p.good(i))
	}
	return time.Now()
}

// kfRefusals counts the writes of events (POST, PUT, PATCH) the server
// answered 429 or 5xx, as they pass through a client's transport.
type kfRefusals struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c kfRefusals) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(r)
	if err == nil && r.Method != http.MethodGet && strings.Contains(r.URL.Path, "/events") &&
		(resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500) {
		c.n.Add(1)
	}
	return resp, err
}

// kfClient returns a clientset for base throttled as a controller's client
// (QPS 20, burst 30) whose refused event writes are counted in n.
func kfClient(t *testing.T, base *rest.Config, n *atomic.Int64) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = kfQPS, kfBurst
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return kfRefusals{rt, n} }
	return newClientset(t, cfg)
}

// kfCount counts the distinct events (object name, reason) about objects
// whose name starts with prefix, in namespaces.
func kfCount(ctx context.Context, cs kubernetes.Interface, namespaces []string, prefix string) (int, error) {
	seen := map[string]bool{}
	for _, ns := range namespaces {
		evs, err := listEvents(ctx, cs, ns, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		for _, e := range evs {
			if strings.HasPrefix(e.InvolvedObject.Name, prefix) {
				seen[e.InvolvedObject.Name+"/"+e.Reason] = true
			}
		}
	}
	return len(seen), nil
}

// kfPromptly polls the server until kfPrompt after last and returns how
// many good events of p were stored by then (what the last list begun
// before that instant saw), and how long after last a list that saw all of
// them returned (0 if none did by then).
func kfPromptly(t *testing.T, cs kubernetes.Interface, p kfPlan, last time.Time) (stored int, all time.Duration) {
	t.Helper()
	deadline := last.Add(kfPrompt)
	for {
		begun := time.Now()
		if begun.After(deadline) {
			return stored, 0
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(time.Second))
		n, err := kfCount(ctx, cs, p.goodNS, p.prefix+"-good-")
		cancel()
		if err != nil {
			t.Logf("listing events: %v", err)
		} else {
			stored = n
		}
		if stored == kfGood {
			return stored, time.Since(last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kfAllSeen prints kfPromptly's second result.
func kfAllSeen(d time.Duration) string {
	if d == 0 {
		return "not within " + kfPrompt.String()
	}
	return d.Round(time.Millisecond).String()
}

// kfRecorder is one recorder under test: herald's or client-go's, for
// core/v1 or events.k8s.io/v1.
type kfRecorder struct {
	record func(kfEvent)
	// stats is nil for client-go's recorders.
	stats func() record.Stats
	// shutdown stops the recorder, waiting at most until ctx ends.
	shutdown func(ctx context.Context) error
}

// kfLogger is the recorders' logger: errors only (every refusal is one),
// to t.Log.
func kfLogger(t *testing.T) klog.Logger {
	return ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(0)))
}

// heraldCore is herald's record package at its defaults, writing through cs.
func heraldCore(t *testing.T, cs kubernetes.Interface) kfRecorder {
	eb := record.NewBroadcaster(record.WithLogger(kfLogger(t)))
	t.Cleanup(eb.Shutdown)
	eb.StartRecordingToSink(&sink.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	rec := eb.NewRecorder(scheme.Scheme, source)
	return kfRecorder{
		record:   func(e kfEvent) { rec.Eventf(e.obj, v1.EventTypeWarning, e.reason, "%s", e.msg) },
		stats:    eb.Stats,
		shutdown: eb.ShutdownWithContext,
	}
}

// clientGoCore is client-go's tools/record at its defaults, writing
// through cs.
func clientGoCore(t *testing.T, cs kubernetes.Interface) kfRecorder {
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), kfLogger(t)))
	eb := clientrecord.NewBroadcaster(clientrecord.WithContext(ctx))
	var once sync.Once
	stop := func(context.Context) error { once.Do(func() { eb.Shutdown(); cancel() }); return nil }
	t.Cleanup(func() { _ = stop(context.Background()) })
	eb.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	rec := eb.NewRecorder(scheme.Scheme, source)
	return kfRecorder{
		record:   func(e kfEvent) { rec.Eventf(e.obj, v1.EventTypeWarning, e.reason, "%s", e.msg) },
		shutdown: stop,
	}
}

// heraldEventsV1 is herald's events package at its defaults, writing
// through cs.
func heraldEventsV1(t *testing.T, cs kubernetes.Interface) kfRecorder {
	eb := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()}, events.WithBroadcasterOptions(record.WithLogger(kfLogger(t))))
	t.Cleanup(eb.Shutdown)
	if err := eb.StartRecordingToSinkWithContext(context.Background()); err != nil {
		t.Fatalf("StartRecordingToSinkWithContext: %v", err)
	}
	rec := eb.NewRecorder(scheme.Scheme, evController)
	return kfRecorder{
		record: func(e kfEvent) {
			rec.Eventf(e.obj, nil, v1.EventTypeWarning, e.reason, defaultAction, "%s", e.msg)
		},
		stats:    eb.Stats,
		shutdown: eb.ShutdownWithContext,
	}
}

// clientGoEventsV1 is client-go's tools/events at its defaults, writing
// through cs.
func clientGoEventsV1(t *testing.T, cs kubernetes.Interface) kfRecorder {
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), kfLogger(t)))
	eb := cgevents.NewBroadcaster(&cgevents.EventSinkImpl{Interface: cs.EventsV1()})
	var once sync.Once
	stop := func(context.Context) error { once.Do(func() { eb.Shutdown(); cancel() }); return nil }
	t.Cleanup(func() { _ = stop(context.Background()) })
	if err := eb.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatalf("client-go StartRecordingToSinkWithContext: %v", err)
	}
	rec := eb.NewRecorder(scheme.Scheme, evController)
	return kfRecorder{
		record: func(e kfEvent) {
			rec.Eventf(e.obj, nil, v1.EventTypeWarning, e.reason, defaultAction, "%s", e.msg)
		},
		shutdown: stop,
	}
}

// kfScenario is one key-local fault on a server.
type kfScenario struct {
	name string
	// admin observes the server; base is the config the recorders' clients
	// are made from.
	admin kubernetes.Interface
	base  *rest.Config
	// plan returns the plan of the recorder whose objects start with prefix.
	plan func(prefix string) kfPlan
	// badNS are the namespaces of the refused events.
	badNS []string
	// badWritable: the server may store a refused event on a later try
	// (EventRateLimit refills its bucket); a failing webhook never does.
	badWritable bool
	// herald and clientGo start the recorders under test.
	herald, clientGo func(*testing.T, kubernetes.Interface) kfRecorder
}

// run records the scenario with herald, checks promptness, then shuts
// herald down (with kfGrace) while client-go records the same scenario,
// and checks herald's accounting against what the server stores.
func (sc kfScenario) run(t *testing.T) {
	ctx := context.Background()
	var hRefused, cgRefused atomic.Int64
	hp, cgp := sc.plan("h"), sc.plan("cg")

	h := sc.herald(t, kfClient(t, sc.base, &hRefused))
	hLast := hp.drive(h.record)
	hPrompt, hAll := kfPromptly(t, sc.admin, hp, hLast)
	atCheck := h.stats()
	refusedAtCheck := hRefused.Load()

	// Shut herald down while client-go records the same scenario.
	shutdownDone := make(chan error, 1)
	var shutdownTook time.Duration
	go func() {
		sctx, cancel := context.WithTimeout(ctx, kfGrace)
		defer cancel()
		begin := time.Now()
		err := h.shutdown(sctx)
		shutdownTook = time.Since(begin)
		shutdownDone <- err
	}()
	cg := sc.clientGo(t, kfClient(t, sc.base, &cgRefused))
	cgLast := cgp.drive(cg.record)
	cgPrompt, cgAll := kfPromptly(t, sc.admin, cgp, cgLast)
	_ = cg.shutdown(ctx)
	shutdownErr := <-shutdownDone
	final := h.stats()

	count := func(namespaces []string, prefix string) int {
		n, err := kfCount(ctx, sc.admin, namespaces, prefix)
		if err != nil {
			t.Fatalf("listing events: %v", err)
		}
		return n
	}
	hGoodFinal := count(hp.goodNS, "h-good-")
	hBadStored := count(sc.badNS, "h-bad")
	cgBadStored := count(sc.badNS, "cg-bad")

	t.Logf("%s: good events stored within %v of the last: herald %d of %d, client-go %d of %d (all seen stored: herald %s, client-go %s after the last)",
		sc.name, kfPrompt, hPrompt, kfGood, cgPrompt, kfGood, kfAllSeen(hAll), kfAllSeen(cgAll))
	t.Logf("%s: herald: %d good stored after Shutdown (it took %v, error %v); %d of %d refused events stored; the server refused %d writes (%d by the check); client-go: %d refused writes, %d of %d refused events stored",
		sc.name, hGoodFinal, shutdownTook.Round(time.Millisecond), shutdownErr, hBadStored, kfBad, hRefused.Load(), refusedAtCheck, cgRefused.Load(), cgBadStored, kfBad)
	t.Logf("%s: herald Stats at the check: %+v", sc.name, atCheck)
	t.Logf("%s: herald Stats after Shutdown: %+v", sc.name, final)

	// The scenario happened: the server refused herald's writes.
	if hRefused.Load() == 0 || cgRefused.Load() == 0 {
		t.Fatalf("the server refused no write (herald %d, client-go %d): the test proves nothing", hRefused.Load(), cgRefused.Load())
	}

	// The good events are stored as promptly as when nothing is refused.
	if hPrompt < kfMinPrompt {
		t.Errorf("herald stored %d of %d good events within %v of the last (client-go %d); want at least %d",
			hPrompt, kfGood, kfPrompt, cgPrompt, kfMinPrompt)
	}
	if hGoodFinal != kfGood {
		t.Errorf("herald: %d of %d good events stored after Shutdown", hGoodFinal, kfGood)
	}

	// At the check, a refused event is still being retried or dropped as
	// retries_exhausted, never counted under another reason.
	if d := atCheck.Dropped; d.Total() != d.RetriesExhausted {
		t.Errorf("at the check: drops %+v, want retries_exhausted only", d.ByReason())
	}

	// After Shutdown with enough grace: everything settled, nothing
	// abandoned, every refused event either stored (only where the server
	// may accept it later) or dropped as retries_exhausted, and what Stats
	// counts as written is exactly what the server stores.
	if !sc.badWritable && hBadStored != 0 {
		t.Errorf("the server stored %d refused events", hBadStored)
	}
	if u := final.Unaccounted(); u != 0 || final.Queued != 0 || final.Pending != 0 || final.InFlight != 0 {
		t.Errorf("after Shutdown: unaccounted %d, queued %d, pending %d, in flight %d; want all 0", u, final.Queued, final.Pending, final.InFlight)
	}
	if final.Recorded != kfGood+kfBad {
		t.Errorf("recorded %d, want %d", final.Recorded, kfGood+kfBad)
	}
	if final.Abandoned != 0 {
		t.Errorf("%d events abandoned at Shutdown (grace %v); want the refused ones dropped as retries_exhausted within it", final.Abandoned, kfGrace)
	}
	if got, want := final.Dropped.RetriesExhausted, int64(kfBad-hBadStored); got != want {
		t.Errorf("dropped as retries_exhausted: %d, want %d (the refused events the server does not hold)", got, want)
	}
	if d := final.Dropped; d.Total() != d.RetriesExhausted {
		t.Errorf("drops %+v, want retries_exhausted only", d.ByReason())
	}
	if got, want := written(final), int64(hGoodFinal+hBadStored); got != want {
		t.Errorf("Stats count %d written (created %d, patched %d, coalesced %d); the server holds %d of herald's events",
			got, final.Created, final.Patched, final.Coalesced, want)
	}
	// A refused key is given up only after its MaxTries (the default, 12)
	// refusals in a row: each event dropped as retries_exhausted was
	// refused that many times at least (more where the server's failure
	// refunded a try, or for refused events the server stored later).
	if got, want := hRefused.Load(), final.Dropped.RetriesExhausted*kfMaxTries; got < want {
		t.Errorf("the server refused %d writes of herald's; %d events dropped as retries_exhausted need at least %d (%d tries each)",
			got, final.Dropped.RetriesExhausted, want, kfMaxTries)
	}
	// Every refusal shows in Stats: the attempt was scheduled again
	// (Retried) or its event dropped under its reason. (An attempt under
	// way when Shutdown abandons its event may be counted in neither.)
	if final.Abandoned == 0 && final.Retried+final.Dropped.RetriesExhausted != hRefused.Load() {
		t.Errorf("the server refused %d writes; Stats count %d retried and %d dropped as retries_exhausted",
			hRefused.Load(), final.Retried, final.Dropped.RetriesExhausted)
	}
}

// kfWaitRefused writes raw events (no client-side retry) into refusedNS
// until the server refuses one with want, and checks that a write into
// acceptedNS is stored meanwhile: the fault is in effect, and only there.
func kfWaitRefused(t *testing.T, cs kubernetes.Interface, refusedNS, acceptedNS string, want func(*apierrors.StatusError) bool) {
	t.Helper()
	ctx := context.Background()
	post := func(ns string) error {
		ev := &v1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "probe-" + randSuffix(), Namespace: ns},
			InvolvedObject: v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: "probe"},
			Reason:         "Probe", Message: "probe", Type: v1.EventTypeNormal, Source: source,
		}
		return cs.CoreV1().RESTClient().Post().Namespace(ns).Resource("events").Body(ev).MaxRetries(0).Do(ctx).Error()
	}
	check.Eventually(t, "the fault to take effect in "+refusedNS, func() error {
		err := post(refusedNS)
		if se, ok := err.(*apierrors.StatusError); ok && want(se) {
			return nil
		}
		return fmt.Errorf("a write answered %v", err)
	})
	if err := post(acceptedNS); err != nil {
		t.Fatalf("a write into %s was refused too: %v", acceptedNS, err)
	}
}

// kfFailingWebhook serves a validating admission webhook that answers HTTP
// 500 to every call from a TLS httptest server, and registers it with
// failurePolicy Fail for core/v1 and events.k8s.io/v1 events (create and
// update) in the namespaces labelled label=value. Both go when t ends.
func kfFailingWebhook(t *testing.T, admin kubernetes.Interface, label, value string) *atomic.Int64 {
	t.Helper()
	var calls atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "policy backend unavailable", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	vwc := testenv.EventsWebhook(metav1.ObjectMeta{GenerateName: "herald-it-failing-"}, "events.policy.herald-it.example.com",
		srv.URL+"/validate", caBundle, map[string]string{label: value})
	ctx := context.Background()
	created, err := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the webhook configuration: %v", err)
	}
	// Registered after srv.Close, so it runs first: the configuration
	// goes before its backend.
	t.Cleanup(func() {
		err := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), created.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the webhook configuration: %v", err)
		}
	})
	return &calls
}

// kfLabelledNamespace creates a namespace labelled label=value (deleted
// when t ends).
func kfLabelledNamespace(t *testing.T, e *testenv.Env, admin kubernetes.Interface, prefix, label, value string) string {
	t.Helper()
	ns := e.CreateNamespace(t, prefix)
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, label, value)
	if _, err := admin.CoreV1().Namespaces().Patch(context.Background(), ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling namespace %s: %v", ns, err)
	}
	return ns
}

// webhookScenario sets up a failing webhook for one labelled namespace of
// the package's server and returns the scenario: the refused events are
// about distinct pods of that namespace, the good ones about pods of two
// other namespaces.
func webhookScenario(t *testing.T, name string, herald, clientGo func(*testing.T, kubernetes.Interface) kfRecorder) (kfScenario, *atomic.Int64) {
	admin := adminClient(t)
	const label = "policy.herald-it.example.com/refuse-events"
	value := randSuffix()
	calls := kfFailingWebhook(t, admin, label, value)
	badNS := kfLabelledNamespace(t, env, admin, "kf-webhook-refused", label, value)
	goodNS := []string{env.CreateNamespace(t, "kf-webhook-a"), env.CreateNamespace(t, "kf-webhook-b")}
	kfWaitRefused(t, admin, badNS, goodNS[0], func(se *apierrors.StatusError) bool {
		return se.ErrStatus.Code == http.StatusInternalServerError && strings.Contains(se.ErrStatus.Message, "failed calling webhook")
	})
	return kfScenario{
		name:  name,
		admin: admin,
		base:  env.Admin,
		plan: func(prefix string) kfPlan {
			return kfPlan{prefix: prefix, goodNS: goodNS, bad: func(i int) kfEvent {
				return kfEvent{obj: podRef(badNS, fmt.Sprintf("%s-bad-%02d", prefix, i)), reason: "Refused", msg: fmt.Sprintf("refused event %d", i)}
			}}
		},
		badNS:    []string{badNS},
		herald:   herald,
		clientGo: clientGo,
	}, calls
}

// TestKeyFaultWebhook: a validating admission webhook with failurePolicy
// Fail, scoped to one labelled namespace, whose backend answers 500: the
// API server answers 500 "failed calling webhook" to every event written
// there, and accepts the others. One refused write every 0.5 s while 100
// good events go to distinct pods of other namespaces over 10 s.
func TestKeyFaultWebhook(t *testing.T) {
	sc, calls := webhookScenario(t, "webhook core/v1", heraldCore, clientGoCore)
	sc.run(t)
	t.Logf("the webhook backend was called %d times", calls.Load())
}

// TestKeyFaultWebhookEventsV1 is TestKeyFaultWebhook through the
// events.k8s.io/v1 API: herald's events package beside client-go's
// tools/events.
func TestKeyFaultWebhookEventsV1(t *testing.T) {
	sc, calls := webhookScenario(t, "webhook events.k8s.io/v1", heraldEventsV1, clientGoEventsV1)
	sc.run(t)
	t.Logf("the webhook backend was called %d times", calls.Load())
}

// kfEventRateLimitConfig enables EventRateLimit with a limit per event
// source and involved object: 1 event/s, a burst of 3.
var kfEventRateLimitConfig = testenv.EventRateLimitConfig("SourceAndObject", 1, 3)

// TestKeyFaultEventRateLimit starts a server of its own with the
// EventRateLimit admission plugin (it limits every event of the server),
// SourceAndObject qps 1 / burst 3. One noisy pod records a new reason every
// 0.5 s, a distinct event each time, refused 429 without Retry-After once
// its bucket is empty, while 100 good events go to distinct pods of the same
// namespace over 10 s. The plugin only limits core/v1 Events, so there is no
// events.k8s.io/v1 variant.
func TestKeyFaultEventRateLimit(t *testing.T) {
	ctx := context.Background()
	begin := time.Now()
	e, err := testenv.Start(ctx, testenv.Options{Logf: t.Logf, AdmissionConfig: kfEventRateLimitConfig})
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, so it runs after the namespaces' cleanups.
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stopping the server: %v", err)
		}
	})
	t.Logf("server with EventRateLimit ready in %v", time.Since(begin).Round(time.Millisecond))
	admin := newClientset(t, e.Admin)
	ns := e.CreateNamespace(t, "kf-eventratelimit")

	// The plugin is in effect: a raw burst about one object meets a 429
	// that suggests no client delay (so client-go never retries it).
	kfWaitRefused(t, admin, ns, e.CreateNamespace(t, "kf-eventratelimit-probe"), func(se *apierrors.StatusError) bool {
		_, delay := apierrors.SuggestsClientDelay(se)
		return se.ErrStatus.Code == http.StatusTooManyRequests && !delay
	})

	sc := kfScenario{
		name:  "EventRateLimit",
		admin: admin,
		base:  e.Admin,
		plan: func(prefix string) kfPlan {
			return kfPlan{prefix: prefix, goodNS: []string{ns}, bad: func(i int) kfEvent {
				return kfEvent{obj: podRef(ns, prefix+"-bad-noisy"), reason: fmt.Sprintf("Noisy%02d", i), msg: fmt.Sprintf("noisy event %d", i)}
			}}
		},
		badNS:       []string{ns},
		badWritable: true,
		herald:      heraldCore,
		clientGo:    clientGoCore,
	}
	sc.run(t)
}

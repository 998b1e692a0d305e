// Package soak drives herald through many faults at once on a real
// kube-apiserver and checks, at the end, a ledger that balances to the
// event (issue 27).
//
// [Run] starts a kube-apiserver (internal/testing/testenv, with the
// EventRateLimit admission plugin and a validating webhook), puts the fault
// proxy in front of it, and runs recorders of both event APIs (core/v1
// record and events.k8s.io/v1 events; some with a client of their own, some
// over a controller's clientset) that record distinct events, repeats,
// similar events that aggregate, and bursts about one object, into several
// namespaces, at a steady rate. Meanwhile a schedule of faults drawn from a
// seed ([Schedule]) kills and restarts the server, cuts the network, adds
// latency and resets, loses answers after the server stored the write,
// fails namespaces in the webhook, saturates the recorders' priority level
// (API priority and fairness) from a load generator, deletes a namespace,
// restarts recorders and flushes them with short deadlines. Then it lets everything settle and
// checks the ledger (see [Result]). A caller adds recorders the soak
// cannot build itself through Config.Extra ([Extra]): controllerruntime/cmd/soak
// adds controller-runtime managers.
//
// `make soak` runs it with the managers (controllerruntime/cmd/soak;
// internal/cmd/soak runs it without); a short run of each is part of
// `go test` (soak_test.go here, TestSoakManager there).
package soak

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/internal/testing/faultproxy"
	"github.com/heraldk8s/herald/internal/testing/testenv"
	"github.com/heraldk8s/herald/sink"
)

// Config configures [Run].
type Config struct {
	Seed     int64
	Duration time.Duration // of the load; the settling comes on top
	// Rate is the events recorded per second over all recorders; default 60.
	Rate float64
	// Namespaces is how many namespaces the events go to; default 4.
	Namespaces int
	// Progress is the interval of the progress lines; default 5 s.
	Progress time.Duration
	// Out receives the schedule, the progress lines and the result.
	Out io.Writer
	// Logger receives herald's logs; default: discarded.
	Logger klog.Logger
	// HeapLimit bounds the heap in use at any progress line; default 512 MiB.
	HeapLimit uint64
	// Slack is how far past its deadline a Flush or Shutdown may return;
	// default 1 s (a busy machine, -race).
	Slack time.Duration
	// Extra are recorder slots added to the soak's own (see [Extra]).
	Extra []Extra
}

// eventRateLimit: EventRateLimit per event source and involved object, so
// that the bursts about one object meet 429s.
var eventRateLimit = testenv.EventRateLimitConfig("SourceAndObject", 2, 10)

// settleFlush bounds the final Flush of each recorder, settleShutdown its
// Shutdown, once every fault is over.
const (
	settleFlush    = 90 * time.Second
	settleShutdown = 30 * time.Second
)

// soak is one run.
type soak struct {
	cfg   Config
	out   io.Writer
	env   *testenv.Env
	proxy *faultproxy.Proxy
	hook  *webhook
	admin kubernetes.Interface
	// restricted is the recorders' user, straight to the server (the load
	// generator's client).
	restricted kubernetes.Interface
	client     *rest.Config // the recorders': the restricted user through the proxy
	ns         []string
	start      time.Time
	// kinds are the slots' kinds: the soak's own, then Config.Extra.
	kinds []slotKind
	sched []Fault

	mu        sync.Mutex
	slots     []*slot
	all       []*incarnation
	ops       []timedOp
	injected  map[Kind]int
	deletedNS map[string]bool
	problems  []string
	peakHeap  uint64
	serverUp  bool
	upSince   time.Time // when the server last became ready
	// darkHolders: the faults keeping the proxy dark (partitions, and
	// kills until the server is ready again); partitions: the partitions
	// under way.
	darkHolders, partitions int

	serverMu sync.Mutex // one kill at a time
}

// slot is a recorder slot: one incarnation at a time.
type slot struct {
	idx  int
	kind slotKind
	gen  int
	mu   sync.RWMutex
	cur  *incarnation
}

func (s *soak) logf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.out, format+"\n", args...)
}

func (s *soak) problem(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
}

// Run runs a soak and returns its result (whose OK says whether the ledger
// balanced); an error means the soak itself could not run.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Rate <= 0 {
		cfg.Rate = 60
	}
	if cfg.Namespaces <= 0 {
		cfg.Namespaces = 4
	}
	if cfg.Progress <= 0 {
		cfg.Progress = 5 * time.Second
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Logger.GetSink() == nil {
		cfg.Logger = logr.Discard()
	}
	if cfg.HeapLimit == 0 {
		cfg.HeapLimit = 512 << 20
	}
	if cfg.Slack <= 0 {
		cfg.Slack = time.Second
	}
	before := goleak.IgnoreCurrent()
	s := &soak{cfg: cfg, out: cfg.Out, injected: map[Kind]int{}, deletedNS: map[string]bool{}}
	res, err := s.run(ctx)
	if err != nil {
		return nil, err
	}
	if err := goleak.Find(before); err != nil {
		res.Problems = append(res.Problems, fmt.Sprintf("goroutines left after the run: %v", err))
	}
	return res, nil
}

func (s *soak) run(ctx context.Context) (*Result, error) {
	s.kinds = append([]slotKind(nil), slotKinds...)
	for i := range s.cfg.Extra {
		e := &s.cfg.Extra[i]
		k := slotKind{api: coreAPI, extra: e}
		if e.EventsAPI {
			k.api = eventsAPI
		}
		s.kinds = append(s.kinds, k)
	}
	sched := Schedule(s.cfg.Seed, s.cfg.Duration, len(s.kinds), s.cfg.Namespaces)
	s.sched = sched
	s.logf("soak: seed %d, load %v, %.0f events/s, %d recorders (%s), %d namespaces", s.cfg.Seed, s.cfg.Duration, s.cfg.Rate, len(s.kinds), s.kindsString(), s.cfg.Namespaces)
	s.logf("soak: schedule (%d faults; EventRateLimit SourceAndObject 2/s burst 10 and priority and fairness throughout):", len(sched))
	for _, f := range sched {
		s.logf("soak:   %v", f)
	}

	var err error
	begin := time.Now()
	s.env, err = testenv.Start(ctx, testenv.Options{AdmissionConfig: eventRateLimit, ExtraArgs: apfArgs})
	if err != nil {
		return nil, err
	}
	s.setServerUp(true)
	defer s.env.Stop()
	s.logf("soak: kube-apiserver ready in %v", time.Since(begin).Round(time.Millisecond))
	if s.proxy, err = faultproxy.New(s.env.URL); err != nil {
		return nil, err
	}
	defer s.proxy.Close()
	s.hook = newWebhook()
	defer s.hook.close()
	if s.admin, err = kubernetes.NewForConfig(s.env.Admin); err != nil {
		return nil, err
	}
	if err := s.hook.register(ctx, s.admin); err != nil {
		return nil, fmt.Errorf("soak: registering the webhook: %w", err)
	}
	for i := range s.cfg.Namespaces {
		ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("soak-%d", i), Labels: map[string]string{webhookLabel: "on"}}}
		if _, err := s.admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("soak: creating namespace: %w", err)
		}
		s.ns = append(s.ns, ns.Name)
		if err := s.env.AllowRestrictedEventsContext(ctx, ns.Name); err != nil {
			return nil, err
		}
	}
	if err := setupAPF(ctx, s.admin); err != nil {
		return nil, err
	}
	if s.restricted, err = kubernetes.NewForConfig(s.env.Restricted); err != nil {
		return nil, err
	}
	// The recorders write as the restricted user: the admin is exempt from
	// priority and fairness.
	s.client = s.proxy.Config(s.env.Restricted)
	for i, k := range s.kinds {
		sl := &slot{idx: i, kind: k}
		inc, err := s.newIncarnation(sl)
		if err != nil {
			return nil, err
		}
		sl.cur = inc
		s.slots = append(s.slots, sl)
		s.all = append(s.all, inc)
	}

	// The load, the faults and the progress lines.
	s.start = time.Now()
	loadCtx, stopLoad := context.WithTimeout(ctx, s.cfg.Duration)
	defer stopLoad()
	var load, faults sync.WaitGroup
	for _, sl := range s.slots {
		load.Add(1)
		go func() { defer load.Done(); s.drive(loadCtx, sl) }()
	}
	for _, f := range sched {
		faults.Add(1)
		go func() { defer faults.Done(); s.inject(ctx, f) }()
	}
	progressDone := make(chan struct{})
	stopProgress := make(chan struct{})
	go func() { defer close(progressDone); s.progressLoop(stopProgress) }()

	load.Wait()
	s.logf("soak: +%v load over; waiting for the faults to end", s.since())
	faults.Wait()
	// Everything healthy again.
	s.proxy.ClearFaults()
	s.proxy.SetLatency(0)
	s.proxy.Light()
	s.hook.setFailing(nil)
	if err := s.ensureServer(ctx); err != nil {
		close(stopProgress)
		<-progressDone
		return nil, err
	}
	s.logf("soak: +%v faults over; flushing and shutting the recorders down", s.since())
	var wg sync.WaitGroup
	for _, sl := range s.slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inc := sl.cur
			for _, op := range []timedOp{inc.flushWithin(settleFlush), inc.stop(settleShutdown)} {
				if op.err != nil {
					s.problem("%s with every fault over: %v", op.what, op.err)
				}
				s.addOp(op)
			}
		}()
	}
	wg.Wait()
	close(stopProgress)
	<-progressDone
	s.sampleHeap()

	res, err := s.ledger(ctx)
	if err != nil {
		return nil, err
	}
	for i, sr := range res.Slots {
		s.logf("soak: s%d %s: %d recorders, %d recorded, %d written", i, sr.Name, sr.Incarnations, sr.Recorded, sr.Written)
	}
	// Tear down before the goroutine check.
	s.hook.close()
	if err := s.proxy.Close(); err != nil {
		res.Problems = append(res.Problems, fmt.Sprintf("closing the proxy: %v", err))
	}
	if err := s.env.Stop(); err != nil {
		res.Problems = append(res.Problems, fmt.Sprintf("stopping the server: %v", err))
	}
	return res, nil
}

// countsString writes m as "a 2, b 1", most first.
func countsString(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func (s *soak) kindsString() string {
	var parts []string
	for i, k := range s.kinds {
		parts = append(parts, fmt.Sprintf("s%d %v", i, k))
	}
	return strings.Join(parts, ", ")
}

// newIncarnation starts the next incarnation of sl (generation sl.gen).
func (s *soak) newIncarnation(sl *slot) (*incarnation, error) {
	id := fmt.Sprintf("s%d.%d", sl.idx, sl.gen)
	var inc *incarnation
	var err error
	if sl.kind.extra != nil {
		inc, err = newExtraIncarnation(id, sl.kind, s.client, s.cfg.Logger, s.shutdownWithin(sl.idx, sl.gen))
	} else {
		inc, err = newIncarnation(id, sl.kind, s.client, s.cfg.Logger)
	}
	if err != nil {
		return nil, err
	}
	inc.slot = sl.idx
	return inc, nil
}

// shutdownWithin is the deadline of the Shutdown of generation gen of slot
// idx: that of the schedule's gen-th restart of the slot (counted from 0),
// or settleShutdown for its last generation.
func (s *soak) shutdownWithin(idx, gen int) time.Duration {
	n := 0
	for _, f := range s.sched {
		if f.Kind != SinkRestart || f.Slot != idx {
			continue
		}
		if n == gen {
			return f.For
		}
		n++
	}
	return settleShutdown
}

func (s *soak) since() time.Duration { return time.Since(s.start).Round(100 * time.Millisecond) }

func (s *soak) addOp(op timedOp) {
	s.mu.Lock()
	s.ops = append(s.ops, op)
	s.mu.Unlock()
}

// ident is one event identity of the load: an object, a reason and a
// message.
type ident struct {
	ns, obj, reason, msg string
}

// drive records the slot's share of the load until ctx ends: distinct
// events, repeats of earlier ones (counts, series), similar events about a
// few objects (aggregated by the core/v1 correlator), and bursts of
// distinct reasons about one object (EventRateLimit).
func (s *soak) drive(ctx context.Context, sl *slot) {
	r := rand.New(rand.NewPCG(uint64(s.cfg.Seed), uint64(sl.idx)+1))
	interval := time.Duration(float64(time.Second) * float64(len(s.slots)) / s.cfg.Rate)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var pool []ident
	distinct, similar, noisy := 0, 0, 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		ns := s.ns[r.IntN(len(s.ns))]
		var id ident
		switch x := r.IntN(100); {
		case x < 35 || x < 70 && len(pool) == 0:
			distinct++
			id = ident{ns, fmt.Sprintf("d%d-%d", sl.idx, distinct), "Distinct", fmt.Sprintf("distinct event %d", distinct)}
			if len(pool) < 200 {
				pool = append(pool, id)
			} else {
				pool[r.IntN(len(pool))] = id
			}
		case x < 70:
			id = pool[r.IntN(len(pool))]
		case x < 90:
			similar++
			id = ident{ns, fmt.Sprintf("sim%d-%d", sl.idx, r.IntN(4)), "Similar", fmt.Sprintf("similar event %d", similar)}
		default:
			noisy++
			id = ident{ns, fmt.Sprintf("noisy%d", sl.idx), fmt.Sprintf("Noisy%d", noisy%40), "noisy event"}
		}
		obj := &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: id.ns, Name: id.obj, UID: types.UID("uid-" + id.ns + "-" + id.obj)}
		sl.mu.RLock()
		sl.cur.record(obj, id.reason, id.msg)
		sl.mu.RUnlock()
	}
}

// inject applies fault f at its time and undoes it after.
func (s *soak) inject(ctx context.Context, f Fault) {
	if !sleepCtx(ctx, time.Until(s.start.Add(f.At))) {
		return
	}
	s.mu.Lock()
	s.injected[f.Kind]++
	s.mu.Unlock()
	events := faultproxy.Match{PathContains: "/events"}
	switch f.Kind {
	case Kill:
		// A kill while the server is still restarting, or within
		// minUp of its return, is skipped: on a slow machine (a restart
		// takes 10-40 s there) kills would follow each other and keep the
		// server down for good.
		if !s.serverMu.TryLock() {
			s.skip(f, "the server is restarting")
			return
		}
		defer s.serverMu.Unlock()
		s.mu.Lock()
		up := time.Since(s.upSince)
		s.mu.Unlock()
		if up < minUp {
			s.skip(f, fmt.Sprintf("the server is back for %v only", up.Round(100*time.Millisecond)))
			return
		}
		// The proxy is a load balancer too: it sends nothing to a server
		// that is not ready. (A starting kube-apiserver serves before its
		// RBAC authorizer has synced, and answers Forbidden meanwhile, which
		// herald, as client-go, takes for a permanent refusal.)
		s.darken()
		defer s.lighten()
		s.env.Kill()
		s.setServerUp(false)
		s.logf("soak: +%v killed the kube-apiserver (SIGKILL)", s.since())
		sleepCtx(ctx, f.For)
		begin := time.Now()
		if err := s.env.Restart(ctx); err != nil {
			s.problem("restarting the server: %v", err)
			return
		}
		s.setServerUp(true)
		s.logf("soak: +%v kube-apiserver restarted on its data (ready in %v)", s.since(), time.Since(begin).Round(time.Millisecond))
	case Partition:
		s.mu.Lock()
		s.partitions++
		s.mu.Unlock()
		s.darken()
		sleepCtx(ctx, f.For)
		s.lighten()
		s.mu.Lock()
		s.partitions--
		s.mu.Unlock()
	case Lost:
		s.counted(ctx, f, s.proxy.LoseAnswers(events, f.N))
	case Webhook:
		end := time.Now().Add(f.For)
		r := rand.New(rand.NewPCG(uint64(f.At), uint64(s.cfg.Seed)))
		on := true
		for time.Now().Before(end) {
			if on {
				var names []string
				for _, i := range f.NS {
					names = append(names, s.ns[i])
				}
				s.hook.setFailing(names)
			} else {
				s.hook.setFailing(nil)
			}
			on = !on
			if !sleepCtx(ctx, min(time.Until(end), time.Duration(500+r.IntN(2500))*time.Millisecond)) {
				break
			}
		}
		s.hook.setFailing(nil)
	case Latency:
		s.proxy.SetLatency(f.Delay)
		sleepCtx(ctx, f.For)
		s.proxy.SetLatency(0)
	case Resets:
		s.proxy.SetResetProbability(f.P)
		sleepCtx(ctx, f.For)
		s.proxy.SetResetProbability(0)
	case Errors:
		var ra time.Duration
		if f.RetryAfter {
			ra = time.Second
		}
		s.counted(ctx, f, s.proxy.FailMatching(events, f.Code, ra, f.N))
	case SinkRestart:
		sl := s.slots[f.Slot]
		sl.mu.Lock()
		sl.gen++
		next, err := s.newIncarnation(sl)
		if err != nil {
			sl.mu.Unlock()
			s.problem("starting recorder s%d.%d: %v", sl.idx, sl.gen, err)
			return
		}
		old := sl.cur
		old.restarted = true // read after its Shutdown only
		sl.cur = next
		sl.mu.Unlock()
		s.mu.Lock()
		s.all = append(s.all, next)
		s.mu.Unlock()
		s.addOp(old.stop(f.For))
	case Flush:
		sl := s.slots[f.Slot]
		sl.mu.RLock()
		inc := sl.cur
		sl.mu.RUnlock()
		s.addOp(inc.flushWithin(f.For))
	case Saturate:
		begin := time.Now()
		n, rejected := saturate(ctx, s.restricted, s.ns[0], f.For, f.N)
		s.logf("soak: +%v priority and fairness saturated for %v: %d requests, %d answered 429", s.since(), time.Since(begin).Round(100*time.Millisecond), n, rejected)
	case NamespaceDelete:
		ns := s.ns[f.NS[0]]
		// The server may be down (killed): try until it answers, 60 s at
		// most.
		var err error
		for range 120 {
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = s.admin.CoreV1().Namespaces().Delete(dctx, ns, metav1.DeleteOptions{})
			cancel()
			if err == nil || !sleepCtx(ctx, 500*time.Millisecond) {
				break
			}
		}
		if err != nil {
			s.mu.Lock()
			s.injected[f.Kind]--
			s.mu.Unlock()
			s.logf("soak: +%v deleting namespace %s: %v", s.since(), ns, err)
			return
		}
		// Marked after the deletion: an event refused as in a terminating
		// namespace was refused after it.
		s.mu.Lock()
		s.deletedNS[ns] = true
		s.mu.Unlock()
		s.logf("soak: +%v deleted namespace %s", s.since(), ns)
	}
}

// counted withdraws r, the rule of f (a fault counted in requests), when
// f's time is over, and says how many of its requests did not come.
func (s *soak) counted(ctx context.Context, f Fault, r *faultproxy.Rule) {
	sleepCtx(ctx, f.For)
	if left := r.Withdraw(); left > 0 {
		s.logf("soak: +%v %s of +%v: %d of %d requests did not come within %v", s.since(), f.Kind, f.At.Round(100*time.Millisecond), left, f.N, f.For)
	}
}

// darken and lighten count the faults that keep the proxy dark: it is dark
// while one does.
func (s *soak) darken() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.darkHolders++; s.darkHolders == 1 {
		s.proxy.Dark()
	}
}

func (s *soak) lighten() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.darkHolders--; s.darkHolders == 0 {
		s.proxy.Light()
	}
}

func (s *soak) setServerUp(up bool) {
	s.mu.Lock()
	s.serverUp = up
	if up {
		s.upSince = time.Now()
	}
	s.mu.Unlock()
}

// minUp is how long a server must have been back before it is killed
// again.
const minUp = 15 * time.Second

// skip logs a fault not injected and takes it off the count.
func (s *soak) skip(f Fault, why string) {
	s.mu.Lock()
	s.injected[f.Kind]--
	s.mu.Unlock()
	s.logf("soak: +%v %s skipped: %s", s.since(), f.Kind, why)
}

// ensureServer makes sure the server runs (a kill's restart may have failed).
func (s *soak) ensureServer(ctx context.Context) error {
	s.serverMu.Lock()
	defer s.serverMu.Unlock()
	s.mu.Lock()
	up := s.serverUp
	s.mu.Unlock()
	if up {
		return nil
	}
	if err := s.env.Restart(ctx); err != nil {
		return err
	}
	s.setServerUp(true)
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// sampleHeap notes the heap in use.
func (s *soak) sampleHeap() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.mu.Lock()
	s.peakHeap = max(s.peakHeap, ms.HeapInuse)
	s.mu.Unlock()
	return ms.HeapInuse
}

// progressLoop prints a progress line every cfg.Progress until stop.
func (s *soak) progressLoop(stop chan struct{}) {
	t := time.NewTicker(s.cfg.Progress)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		heap := s.sampleHeap()
		s.mu.Lock()
		incs := append([]*incarnation(nil), s.all...)
		up, partitions := s.serverUp, s.partitions
		s.mu.Unlock()
		var rec, wr, co, dr, ab, pend int64
		var rate float64
		states := map[string]int{}
		probeErrs := map[string]int{} // the last errors of the engines probing
		for _, inc := range incs {
			st := inc.stats()
			inc.mu.Lock()
			live, lastErr := !inc.done, inc.lastErr
			inc.mu.Unlock()
			if live {
				rate += st.WriteRate
				states[st.Server.String()]++
				if st.Server == sink.ServerProbing && lastErr != "" {
					probeErrs[lastErr]++
				}
			}
			rec += st.Recorded
			wr += st.Created + st.Patched
			co += st.Coalesced
			dr += st.Dropped.Total()
			ab += st.Abandoned
			pend += st.Queued + st.Pending + st.InFlight
		}
		var faults []string
		if !up {
			faults = append(faults, "server down")
		}
		if partitions > 0 {
			faults = append(faults, "partition")
		}
		if n := s.proxy.Queued(); n > 0 {
			faults = append(faults, fmt.Sprintf("%d event writes to fail or lose", n))
		}
		if f := s.hook.failing(); len(f) > 0 {
			sort.Strings(f)
			faults = append(faults, "webhook failing "+strings.Join(f, ","))
		}
		if len(faults) == 0 {
			faults = append(faults, "-")
		}
		var st []string
		for k, n := range states {
			e := fmt.Sprintf("%d %s", n, k)
			if k == sink.ServerProbing.String() && len(probeErrs) > 0 {
				e += " (last error " + countsString(probeErrs) + ")"
			}
			st = append(st, e)
		}
		sort.Strings(st)
		s.logf("soak: +%v recorded %d, written %d, coalesced %d, dropped %d, abandoned %d, waiting %d; write rate %.0f/s, engines %s | %s | heap %d MiB, %d goroutines",
			s.since(), rec, wr, co, dr, ab, pend, rate, strings.Join(st, ", "), strings.Join(faults, "; "), heap>>20, runtime.NumGoroutine())
	}
}

package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"

	"github.com/heraldk8s/herald/internal/testing/check"
	"github.com/heraldk8s/herald/internal/testing/testenv"
	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

// count429 counts the 429 answers that pass through a transport.
type count429 struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c count429) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		c.n.Add(1)
	}
	return resp, err
}

// TestOverloadedServerWithPriorityAndFairness starts a kube-apiserver of its
// own with API Priority and Fairness on and small in-flight limits, and puts
// the restricted user's requests in a priority level of one seat that
// rejects (429) what it cannot serve at once, as a server shedding load
// does. Many broadcasters then write a burst through it: the server answers
// 429s, herald backs off, and every event is stored, none lost.
func TestOverloadedServerWithPriorityAndFairness(t *testing.T) {
	ctx := context.Background()
	e, err := testenv.Start(ctx, testenv.Options{Logf: t.Logf, ExtraArgs: []string{
		"--enable-priority-and-fairness=true",
		"--max-requests-inflight=10",
		"--max-mutating-requests-inflight=5",
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	admin := newClientset(t, e.Admin)
	shares := int32(1)
	_, err = admin.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "herald-events-test"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: &shares,
				LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = admin.FlowcontrolV1().FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "herald-events-test"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "herald-events-test"},
			MatchingPrecedence:         100,
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: e.RestrictedUser}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"},
				}},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns := e.RestrictedNamespace

	// Wait until the server applies it: a burst of raw requests (no retry
	// inside client-go) sees a 429.
	restricted := newClientset(t, e.Restricted)
	deadline := time.Now().Add(60 * time.Second)
	for {
		var seen atomic.Bool
		var wg sync.WaitGroup
		for i := range 30 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ev := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("probe-%s-%d", randSuffix(), i), Namespace: ns},
					InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "probe"}, Reason: "Probe", Type: v1.EventTypeNormal}
				err := restricted.CoreV1().RESTClient().Post().Namespace(ns).Resource("events").Body(ev).MaxRetries(0).Do(ctx).Error()
				var se *apierrors.StatusError
				if errors.As(err, &se) && se.ErrStatus.Code == http.StatusTooManyRequests {
					seen.Store(true)
				}
			}()
		}
		wg.Wait()
		if seen.Load() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server never answered 429: APF configuration not applied")
		}
		time.Sleep(500 * time.Millisecond)
	}

	// Many controllers, one burst each, through the restricted user.
	const broadcasters, each = 16, 40
	var tooMany atomic.Int64
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(0)))
	var ebs []record.EventBroadcaster
	for b := range broadcasters {
		cfg := rest.CopyConfig(e.Restricted)
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return count429{rt, &tooMany} }
		s, err := sink.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		eb := record.NewBroadcaster(record.WithLogger(logger), record.WithSinkOptions(sink.Options{QPS: sink.Unlimited, Workers: 8}))
		defer eb.Shutdown()
		eb.StartRecordingToSink(s)
		rec := eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: fmt.Sprint("ctrl-", b)})
		for i := range each {
			rec.Eventf(podRef(ns, fmt.Sprintf("apf-%d-%d", b, i)), v1.EventTypeWarning, "Overload", "event %d of controller %d", i, b)
		}
		ebs = append(ebs, eb)
	}
	var retried, cuts int64
	for _, eb := range ebs {
		fctx, cancel := context.WithTimeout(ctx, 120*time.Second)
		err := eb.Flush(fctx)
		cancel()
		s := eb.Stats()
		if err != nil {
			t.Fatalf("Flush: %v; stats %+v", err, s)
		}
		check.Settled(t, s)
		if s.Created != each || s.Dropped.Total() != 0 || s.Abandoned != 0 {
			t.Fatalf("stats %+v", s)
		}
		retried += s.Retried
		cuts += s.RateCuts
	}
	if tooMany.Load() == 0 || retried == 0 {
		t.Fatalf("the burst met no 429 (%d) or herald retried nothing (%d): the test proves nothing", tooMany.Load(), retried)
	}
	if cuts == 0 {
		t.Fatalf("%d 429s cut no broadcaster's write rate", tooMany.Load())
	}
	evs, err := listEvents(ctx, admin, ns, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	for _, ev := range evs {
		if ev.Reason == "Overload" {
			stored++
			if ev.Count != 1 {
				t.Errorf("event %s stored with count %d", ev.Name, ev.Count)
			}
		}
	}
	if stored != broadcasters*each {
		t.Fatalf("stored %d of %d", stored, broadcasters*each)
	}
	t.Logf("%d events from %d broadcasters stored; the server answered %d requests 429, herald retried %d writes and cut its rates %d times", stored, broadcasters, tooMany.Load(), retried, cuts)
}

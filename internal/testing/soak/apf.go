package soak

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldk8s/herald/internal/testing/testenv"
)

// Priority and fairness: the server runs with APF on and small in-flight
// limits, and the recorders write as the restricted user (the admin is
// exempt), whose requests a flow schema puts in a priority level of its own
// with a few seats, no borrowing and short queues. A saturation fault runs
// a load generator as the same user: the level's queues fill and the server
// sheds the recorders' writes too (429 with Retry-After).

// apfArgs are the server flags of the soak (testenv turns APF off; the
// last flag wins).
var apfArgs = []string{
	"--enable-priority-and-fairness=true",
	"--max-requests-inflight=40",
	"--max-mutating-requests-inflight=20",
}

const apfLevel = "herald-soak"

// setupAPF creates the priority level and the flow schema of the
// restricted user.
func setupAPF(ctx context.Context, admin kubernetes.Interface) error {
	shares, zero := int32(20), int32(0)
	_, err := admin.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: apfLevel},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: &shares,
				LendablePercent:          &zero,
				BorrowingLimitPercent:    &zero,
				LimitResponse: flowcontrolv1.LimitResponse{
					Type:    flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 4, HandSize: 2, QueueLengthLimit: 4},
				},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("soak: creating the priority level: %w", err)
	}
	_, err = admin.FlowcontrolV1().FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: apfLevel},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: apfLevel},
			MatchingPrecedence:         100,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: testenv.RestrictedUser}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"},
				}},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("soak: creating the flow schema: %w", err)
	}
	return nil
}

// saturate runs the load generator for d: workers goroutines listing the
// events of namespace as the restricted user, straight to the server (not
// through the proxy), each request bounded in time, at most maxRequests in
// all. It returns how many requests it made and how many the server
// answered 429.
func saturate(ctx context.Context, cs kubernetes.Interface, namespace string, d time.Duration, workers int) (requests, rejected int64) {
	const maxRequests = 20000
	end := time.Now().Add(d)
	var n, r429 atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) && ctx.Err() == nil && n.Add(1) <= maxRequests {
				rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				err := cs.CoreV1().RESTClient().Get().Namespace(namespace).Resource("events").
					Param("limit", "500").MaxRetries(0).Do(rctx).Error()
				cancel()
				if apierrors.IsTooManyRequests(err) {
					r429.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return min(n.Load(), maxRequests), r429.Load()
}

package integration

import (
	"context"
	"fmt"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldk8s/herald/internal/testing/check"
)

// grantEvents gives the restricted user verbs on the events of apiGroup in
// namespace (a Role and a RoleBinding made with the admin client) and waits
// until the authorizer allows each verb.
func grantEvents(t *testing.T, cs kubernetes.Interface, namespace, apiGroup string, verbs ...string) {
	t.Helper()
	ctx := t.Context()
	name := "herald-it-events-" + randSuffix()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{apiGroup}, Resources: []string{"events"}, Verbs: verbs}},
	}
	if _, err := cs.RbacV1().Roles(namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Role %s: %v", name, err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: env.RestrictedUser}},
	}
	if _, err := cs.RbacV1().RoleBindings(namespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating RoleBinding %s: %v", name, err)
	}
	for _, verb := range verbs {
		check.Eventually(t, fmt.Sprintf("%s may %s events.%s in %s", env.RestrictedUser, verb, apiGroup, namespace), func() error {
			if !restrictedMay(ctx, cs, namespace, apiGroup, verb) {
				return fmt.Errorf("not allowed yet")
			}
			return nil
		})
	}
}

// restrictedMay asks the authorizer whether the restricted user may verb
// events of apiGroup in namespace.
func restrictedMay(ctx context.Context, cs kubernetes.Interface, namespace, apiGroup, verb string) bool {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: env.RestrictedUser,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: namespace, Group: apiGroup, Verb: verb, Resource: "events",
		},
	}}
	res, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	return err == nil && res.Status.Allowed
}

// TestEventsV1RBAC records as a user allowed to write core/v1 events only:
// events.k8s.io/v1 refuses each event, a counted Forbidden drop after
// exactly one POST (no retry storm), logged once. Once a Role grants create
// and patch on events.events.k8s.io, the same broadcaster writes its events,
// series included.
func TestEventsV1RBAC(t *testing.T) {
	const n = 5
	cs := adminClient(t)
	ns := env.CreateNamespace(t, "ev-rbac")
	grantEvents(t, cs, ns, "", "create", "patch", "get", "list")
	if restrictedMay(t.Context(), cs, ns, "events.k8s.io", "create") {
		t.Fatalf("%s may already create events.events.k8s.io in %s", env.RestrictedUser, ns)
	}

	proxy := newProxy(t)
	h := newEvHarness(t, evSink(t, proxy.Config(env.Restricted)))
	for i := range n {
		h.rec.Eventf(podRef(ns, fmt.Sprintf("app-%d", i)), nil, v1.EventTypeWarning, "FailedCreate", defaultAction, "Error creating: quota exceeded (%d)", i)
	}
	s := h.flush(flushTimeout)
	if s.Dropped.Forbidden != n || s.Dropped.Total() != n || s.Retried != 0 || written(s) != 0 {
		t.Errorf("stats %+v: want %d dropped as forbidden, nothing retried or written", s, n)
	}
	v1Path := "/apis/events.k8s.io/v1/namespaces/" + ns + "/events"
	if got := proxy.Requests("POST", v1Path); got != n {
		t.Errorf("%d POSTs to %s, want exactly %d (one per event)", got, v1Path, n)
	}
	if got := proxy.Requests("PATCH", v1Path) + proxy.Requests("PUT", v1Path); got != 0 {
		t.Errorf("%d PATCH/PUT requests to %s, want 0", got, v1Path)
	}
	if got := proxy.Requests("", "/api/v1/"); got != 0 {
		t.Errorf("%d requests to core/v1, want none", got)
	}
	checkDropLog(t, h.asHarness(), "forbidden", "forbidden", env.RestrictedUser)
	waitV1(t, cs, ns, metav1.ListOptions{}, countV1(map[string]int32{}))

	// Granted create and patch on events.events.k8s.io, the same
	// broadcaster writes new events and series.
	grantEvents(t, cs, ns, "events.k8s.io", "create", "patch")
	want := map[string]int32{"granted-0": 1, "granted-1": 4}
	for name, k := range want {
		for range k {
			h.rec.Eventf(podRef(ns, name), nil, v1.EventTypeNormal, "Created", defaultAction, "Created container app")
		}
	}
	s = h.flush(flushTimeout)
	if s.Created != 2 || written(s) != 5 || s.Dropped.Total() != n || s.Retried != 0 {
		t.Errorf("stats %+v: want 2 created and 5 written after the grant, still %d dropped", s, n)
	}
	waitV1(t, cs, ns, metav1.ListOptions{}, countV1(want))
}

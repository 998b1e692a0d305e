package soak

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldk8s/herald/internal/testing/testenv"
)

// webhookLabel marks the soak's namespaces: the webhook sees the event
// writes of those only.
const webhookLabel = "soak.herald.example/webhook"

// webhook is a validating admission webhook (failurePolicy Fail) for
// core/v1 and events.k8s.io/v1 events: it allows every write but those
// into the namespaces currently failing, which it answers HTTP 500, so that
// the API server refuses them ("failed calling webhook").
type webhook struct {
	srv    *httptest.Server
	mu     sync.Mutex
	failNS map[string]bool
	calls  atomic.Int64
	failed atomic.Int64
}

func newWebhook() *webhook {
	w := &webhook{failNS: map[string]bool{}}
	w.srv = httptest.NewTLSServer(http.HandlerFunc(w.serve))
	return w
}

func (w *webhook) serve(rw http.ResponseWriter, r *http.Request) {
	w.calls.Add(1)
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(rw, "bad review", http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	fail := w.failNS[review.Request.Namespace]
	w.mu.Unlock()
	if fail {
		w.failed.Add(1)
		http.Error(rw, "policy backend unavailable", http.StatusInternalServerError)
		return
	}
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	review.Request = nil
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(&review)
}

// setFailing makes the webhook fail the writes into namespaces (none: all
// pass).
func (w *webhook) setFailing(namespaces []string) {
	m := map[string]bool{}
	for _, ns := range namespaces {
		m[ns] = true
	}
	w.mu.Lock()
	w.failNS = m
	w.mu.Unlock()
}

func (w *webhook) failing() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for ns := range w.failNS {
		out = append(out, ns)
	}
	return out
}

// register creates the webhook's configuration in the server.
func (w *webhook) register(ctx context.Context, admin kubernetes.Interface) error {
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: w.srv.Certificate().Raw})
	vwc := testenv.EventsWebhook(metav1.ObjectMeta{Name: "herald-soak"}, "events.soak.herald.example.com",
		w.srv.URL+"/validate", caBundle, map[string]string{webhookLabel: "on"})
	_, err := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{})
	return err
}

func (w *webhook) close() { w.srv.Close() }

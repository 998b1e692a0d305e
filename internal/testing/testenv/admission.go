package testenv

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EventRateLimitConfig returns an [Options.AdmissionConfig] that enables
// the EventRateLimit admission plugin with one limit of limitType
// ("Server", "Namespace", "User" or "SourceAndObject"): qps events a
// second, a burst of burst. Over it the server answers 429 without
// Retry-After. The plugin limits core/v1 Events only.
func EventRateLimitConfig(limitType string, qps, burst int) string {
	return fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: EventRateLimit
  configuration:
    apiVersion: eventratelimit.admission.k8s.io/v1alpha1
    kind: Configuration
    limits:
    - type: %s
      qps: %d
      burst: %d
`, limitType, qps, burst)
}

// EventsWebhook returns the configuration of a validating admission
// webhook named name, served at url (trusting caBundle, PEM), with
// failurePolicy Fail and a 5 s timeout, for the creates and updates of
// core/v1 and events.k8s.io/v1 events in the namespaces labelled with
// namespaceLabels. meta names the configuration (Name or GenerateName).
func EventsWebhook(meta metav1.ObjectMeta, name, url string, caBundle []byte, namespaceLabels map[string]string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	timeout := int32(5)
	ops := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	rule := func(group string) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{
			Operations: ops,
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"v1"}, Resources: []string{"events"}},
		}
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: meta,
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    name,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules:                   []admissionregistrationv1.RuleWithOperations{rule(""), rule("events.k8s.io")},
			FailurePolicy:           &fail,
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: namespaceLabels},
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

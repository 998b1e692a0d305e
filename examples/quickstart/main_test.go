package main

import (
	"bytes"
	"regexp"
	"testing"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	existing := &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: objectName, UID: "uid-1"},
		Data:       map[string]string{"mode": "turbo"},
	}
	// The first run creates the ConfigMap, the second finds it.
	for i, client := range []*fake.Clientset{fake.NewClientset(), fake.NewClientset(existing)} {
		var out bytes.Buffer
		if err := run(ctx, client, "default", &out); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		t.Logf("run %d:\n%s", i, out.String())
		for _, want := range []string{
			`Recorded 4 events: .* 0 dropped`,
			`(?m)^Normal +Started +1 +Quickstart is checking herald-quickstart$`,
			`(?m)^Warning +InvalidSpec +3 +spec.mode "turbo" is not one of \[fast safe off\]$`,
			`(?m)\A(?:.*\n){4}(?:.*\n){2}\n.*describe configmap herald-quickstart -n default\n\z`, // two rows
		} {
			if !regexp.MustCompile(want).Match(out.Bytes()) {
				t.Errorf("run %d: output does not match %s", i, want)
			}
		}
	}
}

package recordtest_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/record/recordtest"
)

// reconcile stands for the code under test: it records through the
// record.EventRecorder it is given (in production, a broadcaster's).
func reconcile(rec record.EventRecorder, cm *v1.ConfigMap) {
	mode := cm.Data["mode"]
	switch mode {
	case "fast", "safe", "off":
		rec.Eventf(cm, v1.EventTypeNormal, "Synced", "Synced with mode %q", mode)
	default:
		rec.Eventf(cm, v1.EventTypeWarning, "InvalidSpec", "mode %q is not one of %v", mode, []string{"fast", "safe", "off"})
	}
}

// A test hands a Recorder to the code under test, then asserts on the
// events' fields rather than on formatted strings.
func ExampleRecorder() {
	rec := recordtest.New()
	reconcile(rec, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "good"}, Data: map[string]string{"mode": "fast"}})
	reconcile(rec, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "bad"}, Data: map[string]string{"mode": "turbo"}})

	for _, e := range rec.Events() {
		fmt.Printf("%s/%s: %s\n", e.Namespace, e.Name, e)
	}
	invalid := rec.WithReason("InvalidSpec") // in a test: if len(invalid) != 1 { t.Errorf(...) }
	fmt.Println("InvalidSpec events:", len(invalid), "about", invalid[0].Name)

	rec.Reset()
	fmt.Println("after Reset:", len(rec.Events()))
	// Output:
	// demo/good: Normal Synced Synced with mode "fast"
	// demo/bad: Warning InvalidSpec mode "turbo" is not one of [fast safe off]
	// InvalidSpec events: 1 about bad
	// after Reset: 0
}

package events_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldk8s/herald/events"
)

// The Verbose string is the one FakeRecorder's doc gives (client-go
// v0.37's), whatever client-go version herald is built with:
// "<type> <reason> <action> <note>[ {kind=K,apiVersion=G/V}][ {kind=…} of related][ map[annotations]]".
func TestFakeRecorderVerboseString(t *testing.T) {
	regarding := &v1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	related := &v1.ObjectReference{Kind: "Deployment", APIVersion: "apps/v1", Name: "d"}
	f := events.NewFakeRecorder(3)
	f.Verbose = true
	f.Eventf(regarding, related, v1.EventTypeWarning, "Failed", "Sync", "attempt %d", 2)
	f.AnnotatedEventf(regarding, nil, map[string]string{"b": "2", "a": "1"}, v1.EventTypeNormal, "R", "A", "n")
	f.Eventf(regarding, pod("ns", "untyped"), v1.EventTypeNormal, "R", "A", "n") // no kind: nothing for related
	for _, want := range []string{
		"Warning Failed Sync attempt 2 {kind=Pod,apiVersion=v1} {kind=Deployment,apiVersion=apps/v1}",
		"Normal R A n {kind=Pod,apiVersion=v1} map[a:1 b:2]",
		"Normal R A n {kind=Pod,apiVersion=v1}",
	} {
		if got := <-f.Events; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if f.Overflow() != 0 {
		t.Errorf("overflow %d", f.Overflow())
	}
}

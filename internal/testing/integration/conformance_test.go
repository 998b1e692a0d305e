package integration

import (
	"testing"

	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// TestSinkConformance runs sinktest's checks against the real API server,
// through herald's sink and client-go's: the fake sink the unit tests use
// must behave like this.
func TestSinkConformance(t *testing.T) {
	t.Run("herald", func(t *testing.T) {
		sinktest.Run(t, func(t *testing.T) (sink.EventSink, string) {
			return &sink.EventSinkImpl{Interface: adminClient(t).CoreV1().Events("")}, env.CreateNamespace(t, "conf")
		})
	})
	t.Run("client-go", func(t *testing.T) {
		sinktest.Run(t, func(t *testing.T) (sink.EventSink, string) {
			return &typedcorev1.EventSinkImpl{Interface: adminClient(t).CoreV1().Events("")}, env.CreateNamespace(t, "conf")
		})
	})
}

package controllerruntime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/heraldk8s/herald/controllerruntime/internal/crtest"
)

// env is the package's kube-apiserver (see package crtest: `make test`
// starts it).
var env *crtest.Env

func TestMain(m *testing.M) {
	// controller-runtime's logs go to klog, as herald's do. Without a
	// logger, controller-runtime prints a stack trace ("log.SetLogger(...)
	// was never called") once the process is 30 s old.
	ctrllog.SetLogger(klog.Background())
	// crtest.Main connects to the server, runs the tests, then checks for
	// leaked goroutines with goleak.
	crtest.Main(m, func(e *crtest.Env) { env = e })
}

const (
	// pollTimeout bounds the wait for a server-side observation.
	pollTimeout = 30 * time.Second
	// flushTimeout bounds a Flush when the API server is healthy.
	flushTimeout = 30 * time.Second
)

// eventually polls cond (bounded by pollTimeout) until it returns nil, and
// fails t with its last complaint otherwise.
func eventually(t *testing.T, what string, cond func(ctx context.Context) error) {
	t.Helper()
	last := fmt.Errorf("never polled")
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, pollTimeout, true, func(ctx context.Context) (bool, error) {
		last = cond(ctx)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v (last: %v)", what, err, last)
	}
}

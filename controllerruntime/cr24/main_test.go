package cr24_test

import (
	"testing"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/heraldk8s/herald/controllerruntime/internal/crtest"
)

// env is the package's kube-apiserver (see package crtest: `make test`
// and `make compat` start it).
var env *crtest.Env

func TestMain(m *testing.M) {
	ctrllog.SetLogger(klog.Background())
	crtest.Main(m, func(e *crtest.Env) { env = e })
}

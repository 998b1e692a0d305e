// Package crtest gives the controllerruntime module's tests the
// kube-apiserver they run against. The server is started outside the
// module (herald's test environment is internal to the root module): `make
// test` runs these tests under `go run ./internal/cmd/testserver`, which
// sets HERALD_TEST_KUBECONFIG to an admin kubeconfig. Without it, Main
// fails the package (it never skips).
package crtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// KubeconfigEnv names the variable that carries the kubeconfig's path.
const KubeconfigEnv = "HERALD_TEST_KUBECONFIG"

// Env is the server the tests run against.
type Env struct {
	// Admin is a config for an admin (system:masters) user, with
	// client-side throttling relaxed (QPS 1000, burst 2000); change a copy
	// if a test needs client-go's defaults.
	Admin *rest.Config
	// Kubeconfig is the path of the admin kubeconfig, for a process.
	Kubeconfig string
	// Dir is a temporary directory for the package, removed by Main.
	Dir string

	admin kubernetes.Interface
}

// Main runs a test package against the server: call it from TestMain. It
// reads the kubeconfig, calls set, runs the tests, removes Dir, then checks
// for leaked goroutines with goleak (with leakOpts) if the tests passed.
func Main(m *testing.M, set func(*Env), leakOpts ...goleak.Option) {
	os.Exit(run(m, set, leakOpts))
}

func run(m *testing.M, set func(*Env), leakOpts []goleak.Option) int {
	env, err := newEnv()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	defer os.RemoveAll(env.Dir)
	set(env)
	code := m.Run()
	// The server outlives the package: close the connections the tests'
	// clients left idle (client-go shares one transport per TLS config),
	// which the server's exit used to close, before looking for leaks.
	if rt, err := rest.TransportFor(env.Admin); err == nil {
		utilnet.CloseIdleConnectionsFor(rt)
	}
	if code == 0 {
		if err := goleak.Find(leakOpts...); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	return code
}

func newEnv() (*Env, error) {
	path := os.Getenv(KubeconfigEnv)
	if path == "" {
		return nil, fmt.Errorf("crtest: $%s is not set: run these tests with `make test`, or under `go run ./internal/cmd/testserver -- go test ...` from herald's root", KubeconfigEnv)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("crtest: reading %s: %w", path, err)
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	admin, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("crtest: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return nil, fmt.Errorf("crtest: the server of %s does not answer: %w", path, err)
	}
	dir, err := os.MkdirTemp("", "herald-crtest-")
	if err != nil {
		return nil, fmt.Errorf("crtest: %w", err)
	}
	return &Env{Admin: cfg, Kubeconfig: path, Dir: dir, admin: admin}, nil
}

// CreateNamespace creates a namespace named after prefix (plus a random
// suffix) and deletes it when t ends. There is no controller manager, so a
// deleted namespace stays Terminating with its content until the server
// stops.
func (e *Env) CreateNamespace(t testing.TB, prefix string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: namespacePrefix(prefix)}}
	created, err := e.admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("crtest: creating namespace %q: %v", prefix, err)
	}
	name := created.Name
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.admin.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("crtest: deleting namespace %s: %v", name, err)
		}
	})
	return name
}

// namespacePrefix keeps the lowercase letters and digits of prefix, at
// most 40, as the GenerateName of a namespace.
func namespacePrefix(prefix string) string {
	keep := func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}
	s := strings.Map(keep, strings.ToLower(prefix))
	if len(s) > 40 {
		s = s[:40]
	}
	return "t" + s + "-"
}

// ExampleObject creates a namespace named after prefix (plus a random
// suffix) and a ConfigMap "settings" in it: the object the packages'
// examples record about. cleanup deletes the namespace.
func (e *Env) ExampleObject(prefix string) (cm *corev1.ConfigMap, cleanup func(), err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns, err := e.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: namespacePrefix(prefix)}}, metav1.CreateOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("namespace: %w", err)
	}
	cleanup = func() {
		_ = e.admin.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	}
	cm, err = e.admin.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}, metav1.CreateOptions{})
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("configmap: %w", err)
	}
	return cm, cleanup, nil
}

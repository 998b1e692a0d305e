// Package testenv runs a real kube-apiserver (with an embedded etcd) for
// herald's integration tests.
//
// The server binary is built from the separate module in
// internal/testing/testenv/kube-apiserver by `make apiserver` into bin/kube-apiserver
// at the repository root (see [BinaryPath]). [Start] runs it on free loopback
// ports in a temporary directory with a service-account key, a token file
// holding an admin (system:masters) and a restricted user, and RBAC that lets
// the restricted user write events in one namespace only. It returns an
// [Env] with a rest.Config per user and an admin kubeconfig for kubectl.
//
// One server per test package is the intended use, from TestMain via [Main];
// tests isolate themselves with [Env.CreateNamespace]:
//
//	var env *testenv.Env
//
//	func TestMain(m *testing.M) {
//		testenv.Main(m, testenv.Options{}, func(e *testenv.Env) { env = e })
//	}
//
// A missing binary or a server that does not become ready fails the test
// package; it is never skipped.
//
// Set HERALD_KUBE_APISERVER to use another binary, HERALD_KUBECTL to use
// another kubectl, and HERALD_TESTENV_KEEP=1 to keep the temporary directory
// (server log, kubeconfig, certificates) after [Env.Stop] or a failed [Start].
package testenv

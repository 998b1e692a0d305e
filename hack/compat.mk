## compat: the compatibility matrix. The root module against
## k8s.io/{api,apimachinery,client-go} at the newest patch of each supported
## minor, and each supported controller-runtime minor (v0.23, v0.24, v0.25)
## with its k8s.io minor, in the controllerruntime module of its API
## generation: each combination in a temporary copy of the tree (`go get`,
## `go mod tidy`, build, vet, unit tests, and the controller-runtime
## modules' tests against the real kube-apiserver), never touching the
## checkout's go.mod. The server is built once (`apiserver`) and shared by
## every row. Prints a table; fails if any combination fails. See
## hack/compat.sh for the variables (COMPAT_K8S, COMPAT_CR,
## COMPAT_TESTFLAGS, COMPAT_MODULES, COMPAT_SERVER_TESTS). On a 2-core machine
## shared at load 17-25: ~20 min a root row, 5-7 min a cr24 row, ~10 min the v0.25 row.
.PHONY: compat
compat: apiserver
	GO=$(GO) ./hack/compat.sh

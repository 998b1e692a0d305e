## compat: the compatibility matrix. The root module against
## k8s.io/{api,apimachinery,client-go} at the newest patch of each supported
## minor, and the controllerruntime module against each supported
## controller-runtime with its k8s.io minor: each combination in a temporary
## copy of the tree (`go get`, `go mod tidy`, build, vet, unit tests), never
## touching the checkout's go.mod. Prints a table; fails if any combination
## fails. See hack/compat.sh for the variables (COMPAT_K8S, COMPAT_CR,
## COMPAT_TESTFLAGS, COMPAT_MODULES, COMPAT_SERVER_TESTS). About ten minutes
## a combination on a busy 2-core machine.
.PHONY: compat
compat:
	GO=$(GO) ./hack/compat.sh

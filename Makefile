# herald — make targets. `make test` is what CI runs (.ci/run).
GO ?= go
export GOFLAGS ?= -buildvcs=false

.PHONY: all test vet unit integration bench fuzz demo demo-events apiserver api

all: test

include hack/*.mk

## test: vet, then every package with -race (unit and integration tests
## against the real kube-apiserver, which `apiserver` builds first). The
## unit packages (hack/testpkgs.sh: those that do not import the test
## environment) run with HERALD_KUBE_APISERVER naming no file, so a test
## that needs the server among them fails here, not only in `make compat`,
## whose copies have no bin/. The controllerruntime modules' tests run under
## internal/cmd/testserver, which starts the server for them (its packages
## stay off herald's internal/ but for controllerruntime/cmd/soak, whose
## TestSoakManager, the short soak with controller-runtime managers, starts
## servers of its own). internal/testing/muxcompat is a module of its
## own that runs apimachinery's watch mux tests against herald's watch
## package, as a user's module would.
NO_APISERVER = HERALD_KUBE_APISERVER=$(CURDIR)/bin/none/kube-apiserver
test: vet apiserver
	$(NO_APISERVER) $(GO) test -race -count=1 -timeout 30m $$(./hack/testpkgs.sh unit)
	$(GO) test -race -count=1 -timeout 30m $$(./hack/testpkgs.sh server)
	cd internal/testing/muxcompat && $(GO) test -race -count=1 ./...
	$(GO) run ./internal/cmd/testserver -- sh -c 'cd controllerruntime && $(GO) test -race -count=1 -timeout 20m ./...'
	$(GO) run ./internal/cmd/testserver -- sh -c 'cd controllerruntime/cr24 && $(GO) test -race -count=1 -timeout 10m ./...'
	cd monitoring && $(GO) test -mod=mod -race -count=1 ./...

## vet also runs staticcheck (checks in staticcheck.conf) on every module.
## `go run pkg@version` builds the pinned release with the dependency
## versions of its own go.mod, verified against the Go checksum database, so a
## machine with only Go runs the same staticcheck, and herald's go.mod does
## not carry the tool's dependencies.
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## PUBLISHED_MODS are the modules users require besides the root one: each
## requires herald's modules at the version tagged with it (CHANGELOG.md),
## never v0.0.0, which a replace line serves here and no proxy ever will.
PUBLISHED_MODS = controllerruntime/go.mod controllerruntime/cr24/go.mod controllerruntime/internal/go.mod
vet:
	@if grep -n 'github.com/heraldk8s/herald[^ ]* v0\.0\.0' $(PUBLISHED_MODS); then \
	  echo "a published module requires a herald module at v0.0.0, which no tag provides"; exit 1; fi
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd controllerruntime && $(GO) vet ./...
	cd controllerruntime/internal && $(GO) vet ./...
	cd controllerruntime/cr24 && $(GO) vet ./...
	$(STATICCHECK) ./...
	cd controllerruntime && $(STATICCHECK) ./...
	cd controllerruntime/internal && $(STATICCHECK) ./...
	cd controllerruntime/cr24 && $(STATICCHECK) ./...
	cd monitoring && $(GO) vet -mod=mod ./...
	cd internal/testing/muxcompat && $(GO) vet ./...
	$(GO) run ./internal/cmd/apilisting -check api/herald.txt -max $(API_MAX_NAMES) $(API_MODULES)

## api: rewrite api/herald.txt, the listing of the public API (one line per
## exported name, as Go's api/*.txt files) that `make vet` checks, so that
## every change of the surface shows in review.
API_MODULES = . controllerruntime controllerruntime/cr24
## API_MAX_NAMES is the budget of the public API (issue 26): functions,
## variables, constants, types and methods, each counted once.
API_MAX_NAMES = 215
api:
	$(GO) run ./internal/cmd/apilisting -o api/herald.txt $(API_MODULES)

## unit: the tests that need no API server (hack/testpkgs.sh unit).
unit:
	$(NO_APISERVER) $(GO) test -race -count=1 $$(./hack/testpkgs.sh unit)

## fuzz: a short run of every fuzz target.
FUZZTIME ?= 10s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

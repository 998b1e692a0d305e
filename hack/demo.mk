# demo.mk: `make demo`, the README's first command.
#
# Included by the root Makefile. Unless $KUBECONFIG is set, it builds the
# kube-apiserver if needed (the `apiserver` target, ~9 minutes the first
# time); it builds the demo
# program (internal/cmd/demo, which runs examples/controller in-process), and
# runs it: a local API server from internal/testing/testenv, or the cluster of
# $KUBECONFIG when that is set. DEMO_ARGS passes flags, for example
# `make demo DEMO_ARGS=-duration=10s` (see `bin/herald-demo -h`).
#
# `make demo-events` runs the same program with -events: events.k8s.io/v1
# through herald's events package (a few events, a series, Flush, Shutdown),
# then `kubectl events` and the Stats.

DEMO_BIN := $(CURDIR)/bin/herald-demo

.PHONY: demo demo-events
demo: $(if $(KUBECONFIG),,apiserver)
	@echo "==> Building the demo (internal/cmd/demo, examples/controller)"
	@mkdir -p $(dir $(DEMO_BIN))
	@$(GO) build -o $(DEMO_BIN) ./internal/cmd/demo
	@$(DEMO_BIN) $(DEMO_ARGS)

demo-events: $(if $(KUBECONFIG),,apiserver)
	@echo "==> Building the demo (internal/cmd/demo)"
	@mkdir -p $(dir $(DEMO_BIN))
	@$(GO) build -o $(DEMO_BIN) ./internal/cmd/demo
	@$(DEMO_BIN) -events $(DEMO_ARGS)

# apiserver.mk: builds the kube-apiserver that internal/testing/testenv runs.
#
# Included by the root Makefile. `make apiserver` builds
# $(CURDIR)/bin/kube-apiserver from the separate module in
# internal/testing/testenv/kube-apiserver (embedded etcd + k8s.io/kubernetes'
# kube-apiserver). It needs only Go: go build downloads the modules. The first
# build takes about 9 minutes on a 2-core machine; later ones rebuild only when
# a file of that module changes, and are quick thanks to Go's build cache.
# Set HERALD_KUBE_APISERVER to run another binary instead.

APISERVER_DIR := $(CURDIR)/internal/testing/testenv/kube-apiserver
APISERVER_BIN := $(CURDIR)/bin/kube-apiserver
APISERVER_SRC := $(APISERVER_DIR)/go.mod $(APISERVER_DIR)/go.sum $(wildcard $(APISERVER_DIR)/*.go)

.PHONY: apiserver
apiserver: $(APISERVER_BIN)

# Built to a temporary name and renamed, so that an interrupted build never
# leaves a fresh-looking broken binary. GOWORK=off: the module stands alone.
$(APISERVER_BIN): $(APISERVER_SRC)
	@echo "building kube-apiserver (first time ~9 min)"
	@mkdir -p $(@D)
	cd $(APISERVER_DIR) && GOWORK=off go build -buildvcs=false -o $@.tmp . && mv -f $@.tmp $@

## soak: the mixed-fault soak (internal/testing/soak, issue 27) against a
## kube-apiserver of its own behind the fault proxy: recorders of both
## event APIs, controller-runtime managers (heraldcr) among them, under a
## seeded schedule of faults (server killed and restarted,
## partitions, latency, resets, lost answers, a flapping webhook,
## EventRateLimit, priority-and-fairness saturation, a namespace deleted,
## recorders restarted, short Flush and Shutdown deadlines), then a ledger
## that balances to the event. SEED=n
## replays a run (default: a random seed, printed first); DURATION is the
## load's length (the settling comes on top). Exits 1 if the ledger is off.
## The command is the controllerruntime module's (controllerruntime/cmd/soak):
## herald's root module does not require controller-runtime.
## SOAK_ARGS=-v=4 writes herald's logs to standard error, every failed write
## with its error.
SEED ?= 0
DURATION ?= 3m
SOAK_ARGS ?=
.PHONY: soak
soak: apiserver
	cd controllerruntime && $(GO) run ./cmd/soak -seed $(SEED) -duration $(DURATION) $(SOAK_ARGS)

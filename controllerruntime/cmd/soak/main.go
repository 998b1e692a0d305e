// Command soak runs herald's mixed-fault soak (package
// internal/testing/soak of herald's root module) with, among its recorders,
// controller-runtime managers (heraldcr.NewManager): `make soak SEED=n
// DURATION=d`. It lives in this module because herald's root module does
// not require controller-runtime. It prints the seed, the fault schedule, a
// progress line every few seconds and, last, the ledger's line; it exits 1
// if the ledger does not balance. See soak.Main for the flags.
package main

import (
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/heraldk8s/herald/internal/testing/soak"
)

func main() {
	// controller-runtime logs through the soak's logger too (without a
	// logger set, it prints a stack trace once the process is 30 s old).
	soak.Main(ctrllog.SetLogger, managerSlots()...)
}

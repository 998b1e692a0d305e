// Command soak runs herald's mixed-fault soak (internal/testing/soak)
// against a kube-apiserver of its own, with the recorders of herald's root
// module only (`make soak` runs controllerruntime/cmd/soak, which adds
// controller-runtime managers). It prints the seed, the fault schedule, a
// progress line every few seconds and, last, the ledger's line; it exits 1
// if the ledger does not balance. See soak.Main for the flags.
package main

import "github.com/heraldk8s/herald/internal/testing/soak"

func main() {
	soak.Main(nil)
}

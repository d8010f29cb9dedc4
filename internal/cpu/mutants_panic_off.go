//go:build !mutants

package cpu

// Without the mutants build tag there is no deliberate panic.

func mutantPanic(*CPU) {}

//go:build !mutants

package mutex

// Without the mutants build tag the deliberate mistakes of the detector
// tests do not exist: the hook is constant and inlines away.

func mutantLateBlockedOn() bool { return false }

func mutantWakeQNoRef() bool { return false }

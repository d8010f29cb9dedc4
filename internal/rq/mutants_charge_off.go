//go:build !mutants

package rq

// Without the mutants build tag the deliberate mistakes of the detector
// tests do not exist: the hook is constant and inlines away.

func mutantChargeCurr() bool      { return false }
func mutantDelayedOutOfAvg() bool { return false }
func mutantDLNoThrottle() bool    { return false }
func mutantRTPrioInverted() bool  { return false }

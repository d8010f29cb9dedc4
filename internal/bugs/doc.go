// Package bugs is the catalogue of real proxy-execution bugs
// (the races found in the series' history) that proxysim can switch back on.
//
// Each bug is a guarded branch at the very place where its fix lives, so
// the code shows both sides:
//
//	if c.Bug(bugs.LateActivationOnCPU) {
//		// the v17 code: ...
//	} else {
//		// the fix (v18): ...
//	}
//
// The catalogue is proxysim's proof that its detectors work: every entry
// must be caught by an invariant, the lock-order validator, the watchdog or
// the race detector.
package bugs

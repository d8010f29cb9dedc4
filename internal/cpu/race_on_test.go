//go:build race

package cpu

// raceEnabled: the race detector slows the simulation about tenfold, so
// the heaviest cases (256 deterministic CPUs) run only in normal builds.
const raceEnabled = true

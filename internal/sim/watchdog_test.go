package sim

import (
	"testing"
	"time"
)

// A deterministic run's result must not depend on the host's speed: the
// wall-clock hang watchdog stays out of deterministic mode, however short
// --hang-timeout is and however slowly the run goes (here each epoch takes
// far longer than the timeout). The turn-counting watchdog stays.
func TestDeterministicIgnoresWallClockHangTimeout(t *testing.T) {
	o := Defaults()
	o.CPUs, o.Workload, o.SimTime, o.Seed = 8, "stress", 500*time.Millisecond, 4
	o.Deterministic, o.Strategy = true, "random"
	o.Epoch = 100 * time.Millisecond // few epochs: long stretches of real time without one
	o.HangTimeout = time.Millisecond
	start := time.Now()
	s := run(t, o)
	if el := time.Since(start); el < 250*time.Millisecond {
		t.Logf("the run took only %v: the watchdog (100ms tick) may not have looked", el)
	}
	for _, v := range s.Violations {
		t.Errorf("deterministic run reported %v", v)
	}
}

package cpu

import (
	"strings"
	"testing"
)

// The liveness detectors catch a lost hand-off (a waiter that re-arms
// blocked_on after dropping wait_lock is handed the lock and sleeps on it):
// as a lost hand-off (33), the waiters' wait age (34), a lost wake-up
// without proxy execution (35), and the livelock of re-picks (36). Each
// child runs the same deterministic workload clean first (no false alarm)
// and then with the mistake, in a binary built with -tags mutants.
func TestLivenessDetectorsCatchLostHandoff(t *testing.T) {
	children := []string{"TestMutantChildLostHandoff", "TestMutantChildLostWakeup", "TestMutantChildWaitAge", "TestMutantChildLivelock"}
	out := runMutantChild(t, "("+strings.Join(children, "|")+")", false)
	for _, c := range children {
		if !strings.Contains(out, "--- PASS: "+c) {
			t.Errorf("%s did not pass:\n%s", c, tail(out, 4000))
		}
	}
}

// Class time charged to the execution context instead of the donor is
// reported by the charge ledger (37) at the first proxied interval.
func TestChargeLedgerCatchesClassTimeToCurr(t *testing.T) {
	out := runMutantChild(t, "TestMutantChildChargeCurr", false)
	if !strings.Contains(out, "--- PASS: TestMutantChildChargeCurr") {
		t.Fatalf("the mutant child did not pass:\n%s", tail(out, 3000))
	}
}

// A delayed entity taken out of avg_vruntime (the kernel keeps delayed
// entities in V) is reported by the EEVDF lag invariant (46).
func TestEEVDFLagCatchesDelayedOutOfAvg(t *testing.T) {
	out := runMutantChild(t, "TestMutantChildDelayedOutOfAvg", false)
	if !strings.Contains(out, "--- PASS: TestMutantChildDelayedOutOfAvg") {
		t.Fatalf("the mutant child did not pass:\n%s", tail(out, 3000))
	}
}

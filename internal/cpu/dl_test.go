package cpu

import (
	"strings"
	"testing"
)

// Invariant 46 must catch an update_curr_dl that never throttles (the
// mutant child checks that it is the first violation, and that the same
// run without the mistake is clean).
func TestDLBudgetCatchesMissingThrottle(t *testing.T) {
	out := runMutantChild(t, "TestMutantChildDLNoThrottle", false)
	if !strings.Contains(out, "--- PASS: TestMutantChildDLNoThrottle") {
		t.Fatalf("the mutant child did not pass:\n%s", tail(out, 3000))
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "caught at") {
			t.Log(strings.TrimSpace(l))
		}
	}
}

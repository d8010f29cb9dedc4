package cpu

import (
	"strings"
	"testing"
)

// The donor-rank invariant (65) catches an RT wake-up that does not
// preempt a less important RT donor (at the wake-up, after
// wakeup_preempt) and an RT push that forgets to reschedule its target
// (at the target's tick). Each child runs the pi workload clean first.
func TestDonorOutrankedCatchesMistakes(t *testing.T) {
	children := []string{"TestMutantChildRTPrioInverted", "TestMutantChildPushNoResched"}
	out := runMutantChild(t, "("+strings.Join(children, "|")+")", false)
	for _, c := range children {
		if !strings.Contains(out, "--- PASS: "+c) {
			t.Errorf("%s did not pass:\n%s", c, tail(out, 4000))
		}
	}
}

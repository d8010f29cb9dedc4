//go:build mutants

package cpu

import (
	"strings"
	"testing"

	"github.com/proxysim/proxysim/internal/mutex"
)

// TestMutantChildWakeQNoRef runs only as the child of
// TestWakeQWithoutReferenceIsCaught.
func TestMutantChildWakeQNoRef(t *testing.T) {
	childOnly(t)
	mutex.SetMutant("wakeq-no-ref", true)
	defer mutex.SetMutant("wakeq-no-ref", false)
	vs, _, _ := wwVictimExitsBeforeWake(t)
	if len(vs) == 0 || !strings.Contains(vs[0], "use-after-free") {
		t.Fatalf("a wake-up of a freed task went unnoticed: %v", vs)
	}
	t.Logf("caught: %s", vs[0])
}

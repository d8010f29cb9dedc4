//go:build mutants

package cpu

import (
	"os"
	"strings"
	"sync/atomic"

	"github.com/proxysim/proxysim/internal/audit"
)

// panicCPU and panicAt make CPU panicCPU panic in its loop once its clock
// reaches panicAt: the checker-defect test of a panicking CPU in
// deterministic mode (-tags mutants only). -1: off.
var (
	panicCPU atomic.Int32
	panicAt  atomic.Int64
)

func init() { panicCPU.Store(-1) }

func mutantPanic(cp *CPU) {
	if int(panicCPU.Load()) == cp.id && cp.c.Now >= panicAt.Load() {
		panicCPU.Store(-1)
		panic("mutant: deliberate panic in the CPU loop")
	}
}

// mutantLiveConfig keeps only the liveness checks named in
// PROXYSIM_LIVE_ONLY (handoff, wait, lost, livelock, progress), so that a
// mutants build can time one detector at a time against a mistake.
func mutantLiveConfig(lc audit.LiveConfig) audit.LiveConfig {
	only := os.Getenv("PROXYSIM_LIVE_ONLY")
	if only == "" {
		return lc
	}
	keep := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		keep[strings.TrimSpace(n)] = true
	}
	if !keep["handoff"] {
		lc.HandoffBound = 0
	}
	if !keep["wait"] {
		lc.WaitBound = 0
	}
	if !keep["lost"] {
		lc.LostAudits = 0
	}
	if !keep["livelock"] {
		lc.LivelockFactor = 0
	}
	if !keep["progress"] {
		lc.ProgressFloor = 0
	}
	return lc
}

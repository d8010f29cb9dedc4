//go:build mutants

package cpu

import "sync/atomic"

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

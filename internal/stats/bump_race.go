//go:build race

package stats

import (
	"sync/atomic"
	"unsafe"
)

// Bump adds n to a single-writer counter (see bump.go). Under the race
// detector every sync/atomic operation is a synchronisation event, about
// 100 ns each, and the lock layer alone bumps two counters per
// acquisition. The counters are the simulator's, not the kernel's, so the
// one writer adds with a plain load and store the detector does not see
// (//go:norace); readers (scrapes, summaries) keep their atomic loads,
// which see the aligned word whole, and gain no happens-before edge from
// the writer. -race also turns on checkptr, which would look up the heap
// object of every unsafe conversion here (runtime.findObject, 2% of a
// race stress run's CPU for this and its three like it): //go:nocheckptr.
//
//go:norace
//go:nocheckptr
func Bump(a *atomic.Uint64, n uint64) {
	p := (*uint64)(unsafe.Pointer(a))
	*p += n
}

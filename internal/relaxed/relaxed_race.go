//go:build race && (amd64 || arm64)

package relaxed

import (
	"sync/atomic"
	"unsafe"
)

// xadd64 atomically adds n to *p and returns the new value, in assembly
// (xadd_amd64.s, xadd_arm64.s) that the race detector does not instrument.
//
//go:noescape
func xadd64(p *uint64, n uint64) uint64

// AddUint64 atomically adds n to *p and returns the new value, ordering
// nothing (atomic64_add_return_relaxed), and invisible to the detector.
//
//go:nocheckptr
func AddUint64(p *atomic.Uint64, n uint64) uint64 {
	return xadd64((*uint64)(unsafe.Pointer(p)), n)
}

//go:build race

package spinlock

import "unsafe"

// setHolder records the holder (id+1, 0 when free). Written only by the
// holder, under the lock, and read (Holder) only for panics and reports.
// Under the race detector an atomic store is a synchronisation event,
// two per acquisition here, with no counterpart in the kernel
// (debug_spin_lock_after writes its owner words with WRITE_ONCE, which
// orders nothing), so the holder writes it where the detector does not
// see it; Holder's atomic load still reads the aligned word whole.
//
//go:norace
//go:nocheckptr
func (l *Lock) setHolder(v int32) { *(*int32)(unsafe.Pointer(&l.holder)) = v }

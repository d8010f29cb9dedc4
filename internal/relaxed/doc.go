// Package relaxed is the kernel's relaxed atomics (atomic_long_inc_return_relaxed
// and friends) and the simulator's own shared counters, for the race
// detector's sake.
//
// Under -race every sync/atomic operation is a synchronisation event: an
// Add orders everything its goroutine did before it before everything any
// later Add's goroutine does after. The kernel's relaxed atomics order
// nothing, and the simulator's bookkeeping (the flight recorder's
// sequence number) has no kernel counterpart at all; both would give the
// detector happens-before edges the kernel does not have, which hide races.
// In race builds on amd64 and arm64 the operations here are assembly,
// which the detector does not see; elsewhere they are sync/atomic.
//
// Only for words that are never accessed any other way than through this
// package or sync/atomic loads: a plain access to such a word is not
// checked against these.
package relaxed

// Package mutex models the kernel mutex (kernel/locking/mutex.c) with the
// proxy-execution changes: an atomic owner word carrying the owner task and
// the WAITERS, HANDOFF and PICKUP flags; a wait_lock spinlock guarding a
// FIFO wait list; the fast paths (a single compare-and-swap); the slow
// lock path, which sets blocked_on and, with proxy execution, leaves the
// waiter queued as a donor; and the slow unlock path, which prefers the
// blocked donor and forces a hand-off to it (proxy-exec v9+).
//
// A task cannot block inside a Go function while its CPU goes on running
// others, so the slow lock path is split where the kernel calls
// schedule(): LockSlowStart queues the waiter and returns, the caller
// schedules, and LockSlowResume is the body of the kernel's wait loop
// after schedule() returns.
//
// Locking: m.wait_lock, then the current task's blocked_lock, then (unlock
// only, nested) the chosen waiter's blocked_lock. Wakeups are collected on
// a WakeQ and issued by the caller after wait_lock is dropped.
package mutex

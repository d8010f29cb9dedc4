// Package spinlock models the kernel's raw spinlocks (include/linux/spinlock.h,
// kernel/locking/spinlock.c) together with the part of lockdep
// (kernel/locking/lockdep.c) that proxysim needs.
//
// A Lock is a real sync.Mutex: when two CPU goroutines contend, one of them
// really waits. Every acquisition names the CPU that takes it (a *CPU, the
// per-CPU lock context), which gives three things the protocol code never has
// to think about:
//
//   - lock-held assertions (lockdep_assert_held) via Lock.AssertHeld;
//   - lock-order validation against the proxy-execution order
//     pi_lock -> rq->lock -> mutex->wait_lock -> p->blocked_lock, reported the
//     first time an inversion is seen rather than when it deadlocks;
//   - yield points: every acquire, failed try and release calls the CPU's
//     Hooks, which is where stress jitter and the deterministic conductor
//     hook in without any change to the protocol code.
//
// Interrupts: proxysim CPUs only take interrupts (IPIs, timers) between steps
// of work, when they hold no lock, so every lock here behaves like the
// kernel's raw_spin_lock_irqsave.
package spinlock

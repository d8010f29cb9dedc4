// Package spinlock models the kernel's raw spinlocks (include/linux/spinlock.h,
// kernel/locking/spinlock.c) together with the part of lockdep
// (kernel/locking/lockdep.c) that proxysim needs.
//
// A Lock is a real sync.Mutex: when two CPU goroutines contend, one of them
// really waits. Every acquisition names the CPU that takes it (a *CPU, the
// per-CPU lock context), which gives four things the protocol code never has
// to think about:
//
//   - lock-held assertions (lockdep_assert_held) via Lock.AssertHeld;
//   - lock-order validation against the proxy-execution order
//     pi_lock -> rq->lock -> mutex->wait_lock -> p->blocked_lock, reported the
//     first time an inversion is seen rather than when it deadlocks;
//   - yield points: every acquire, failed try and release calls the CPU's
//     Hooks, which is where stress jitter and the deterministic conductor
//     hook in without any change to the protocol code;
//   - IRQ usage (irq.go, usage.go): each CPU tracks whether hard IRQs are
//     off and whether it runs in hard-IRQ or softirq context; each lock
//     class records lockdep's usage bits (IN-HARDIRQ-W, HARDIRQ-ON-W and the
//     softirq pair) with the site that set each first, and an acquisition
//     that contradicts them is reported in lockdep's layout ("inconsistent
//     {IN-HARDIRQ-W} -> {HARDIRQ-ON-W} usage", irq lock inversion,
//     HARDIRQ-safe -> HARDIRQ-unsafe lock order).
//
// Interrupts: proxysim CPUs only take interrupts (IPIs, timers, the tick)
// between steps of work, when they hold no lock, so the self-deadlock an
// IRQ-unsafe acquisition allows is never simulated: the validator predicts
// it, as lockdep does. The classes the kernel only takes with IRQs off
// (pi_lock, wait_lock, blocked_lock, the timer base, siglock, completions)
// disable IRQs for as long as they are held; the rq lock leaves the IRQ
// state to its caller (rq.LockIrq, or a surrounding IRQ-off section), as
// raw_spin_rq_lock() does.
package spinlock

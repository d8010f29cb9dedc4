package spinlock

import "strconv"

// IRQ state of a simulated CPU, for the usage half of lockdep
// (kernel/locking/lockdep.c: mark_usage, mark_lock, the irqtrace state).
//
// The kernel tracks, per task, whether hard IRQs are enabled
// (lockdep_hardirqs_enabled), whether softirqs are, and whether the code runs
// in hard-IRQ or softirq context. proxysim takes interrupts only between
// steps of work with no lock held, so one state per CPU is enough:
//
//   - irqOff counts the open local_irq_save()/local_irq_disable() sections
//     (raw_spin_lock_irqsave, rq_lock_irq, __schedule's local_irq_disable);
//     hard IRQs are enabled when it is 0. The kernel restores saved flags;
//     nesting the sections the way the kernel does gives the same answer.
//   - hardirq counts hard-IRQ handlers running (the tick, IPIs, hrtimer
//     expiry); a handler runs with IRQs off.
//   - softirq counts softirq handlers running (SCHED_SOFTIRQ's balancing),
//     which run with IRQs on and softirqs off.
//
// All of it is owned by the CPU's goroutine.

// irqsaveClass marks the classes that the kernel takes only with hard IRQs
// already off: every acquisition is _irqsave (or nested inside a lock that
// is), so the lock layer disables IRQs for the time the lock is held.
// pi_lock (raw_spin_lock_irqsave everywhere), mutex::wait_lock (irqsave
// since the proxy series made it IRQ-safe), blocked_lock (guard
// raw_spinlock_irqsave when alone, raw_spin_lock under wait_lock or the rq
// lock), the hrtimer base lock, the completion's wait.lock and
// sighand->siglock (spin_lock_irqsave). The rq lock is not among them:
// raw_spin_rq_lock() leaves the IRQ state to its caller (rq_lock_irq,
// rq_lock_irqsave, task_rq_lock, __schedule's local_irq_disable), and that
// is where the kernel has made mistakes.
//
// The wait queue head's lock is spin_lock_irqsave in prepare_to_wait and
// __wake_up_common_lock. sk_lock.slock (spin_lock_bh) and unix_sock->lock
// (spin_lock) only keep softirqs off or nothing; the model has no
// bottom-half state and holds them with IRQs off, which is stricter: it
// gives them no usage bit.
var irqsaveClass = [NumClasses]bool{ClassPiLock: true, ClassWaitLock: true, ClassBlockedLock: true,
	ClassTimer: true, ClassOther: true, ClassSigLock: true, ClassWaitQueue: true, ClassSockLock: true, ClassUnixState: true}

// IrqDisable is local_irq_save() / local_irq_disable(): the start of a
// section with hard IRQs off. Sections nest; IrqEnable ends the innermost.
func (c *CPU) IrqDisable() { c.irqOff++ }

// IrqEnable is local_irq_restore() / local_irq_enable(). When hard IRQs
// come back on with locks held, those locks become HARDIRQ-ON (and
// SOFTIRQ-ON outside softirq context), as lockdep's mark_held_locks() does.
func (c *CPU) IrqEnable() {
	c.irqOff--
	if c.irqOff < 0 {
		panic("spinlock: local_irq_enable without a matching disable on cpu " + strconv.Itoa(c.ID))
	}
	if c.irqOff == 0 && c.hardirq == 0 && c.nHeld > 0 && c.Dep != nil {
		u := c.usageNow()
		for i := 0; i < c.nHeld; i++ {
			c.Dep.mark(c, c.held[i], u&(EnabledHardirq|EnabledSoftirq))
		}
	}
}

// HardirqEnter is irq_enter(): a hard-IRQ handler starts (IRQs off).
func (c *CPU) HardirqEnter() { c.hardirq++; c.irqOff++ }

// HardirqExit is irq_exit() (without running softirqs: the model runs its
// softirq work explicitly, SoftirqEnter).
func (c *CPU) HardirqExit() { c.irqOff--; c.hardirq-- }

// SoftirqEnter starts softirq work (__do_softirq: softirqs off, IRQs on).
func (c *CPU) SoftirqEnter() { c.softirq++ }

// SoftirqExit ends it.
func (c *CPU) SoftirqExit() { c.softirq-- }

// IrqsDisabled is irqs_disabled().
func (c *CPU) IrqsDisabled() bool { return c.irqOff > 0 }

// InHardirq is in_hardirq().
func (c *CPU) InHardirq() bool { return c.hardirq > 0 }

// InSoftirq is in_serving_softirq().
func (c *CPU) InSoftirq() bool { return c.softirq > 0 }

// usageNow is the usage an acquisition made now gives its class
// (mark_usage): IN-HARDIRQ / IN-SOFTIRQ in those contexts, HARDIRQ-ON
// when hard IRQs are enabled, SOFTIRQ-ON when softirqs are enabled too.
// Trylocks count as acquisitions here (the model has none that matter).
func (c *CPU) usageNow() Usage {
	var u Usage
	if c.hardirq > 0 {
		u |= UsedInHardirq
	}
	if c.softirq > 0 {
		u |= UsedInSoftirq
	}
	if c.irqOff == 0 {
		u |= EnabledHardirq
		if c.softirq == 0 {
			u |= EnabledSoftirq
		}
	}
	return u
}

// irqStateString is lockdep's [HCn[n]:SCn[n]:HEn:SEn]: hard-IRQ context
// and its depth, softirq context and its depth, hard IRQs enabled,
// softirqs enabled.
func (c *CPU) irqStateString() string {
	b := func(x bool) string {
		if x {
			return "1"
		}
		return "0"
	}
	return "[HC" + b(c.hardirq > 0) + "[" + strconv.Itoa(int(c.hardirq)) + "]:SC" + b(c.softirq > 0) + "[" + strconv.Itoa(int(c.softirq)) +
		"]:HE" + b(c.irqOff == 0) + ":SE" + b(c.softirq == 0) + "]"
}

// LockIrq is raw_spin_lock_irq(): disable IRQs, then take l.
func (l *Lock) LockIrq(c *CPU) {
	c.IrqDisable()
	l.lock(c, false)
}

// UnlockIrq is raw_spin_unlock_irq(): drop l, then enable IRQs.
func (l *Lock) UnlockIrq(c *CPU) {
	l.Unlock(c)
	c.IrqEnable()
}

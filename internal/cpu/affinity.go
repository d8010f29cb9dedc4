// This file mirrors kernel/sched/core.c: set_cpus_allowed_ptr() / affine_move_task(),
// move_queued_task() and the migration stopper (migration_cpu_stop).

package cpu

import (
	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/proxy"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// setCPUsAllowed is __set_cpus_allowed_ptr() / affine_move_task(): change
// p's mask under pi_lock and its rq lock; if p's CPU is no longer allowed,
// move it now when it is merely queued, or have the stopper move it when
// it is running. Only rq->donor may stay where it is (a donor boosting a
// proxy; the return path places it later).
func (m *Machine) setCPUsAllowed(c *percpu.Ctx, p *task.Task, mask task.Mask) {
	mask = mask.And(task.MaskAll(len(m.cpus)))
	if mask.Empty() {
		return
	}
	p.PiLock.Lock(c.CPU)
	r := m.taskRQLock(c, p)
	// cpumask_any_and_distribute(cpu_active_mask, new_mask), read once:
	// cpu_active_mask changes under us (hotplug), so a second read could
	// find nothing where the first found a CPU.
	dest := m.nextActive(&mask, p.CPU())
	if p.State() == task.Dead || dest < 0 {
		// It found nothing: -EINVAL, nothing changes.
		r.Unlock(c)
		p.PiLock.Unlock(c.CPU)
		return
	}
	if p.DLTask() && !m.spansRootDomain(&mask) {
		// __sched_setaffinity: a SCHED_DEADLINE task's mask must cover
		// its root domain's span (admission control is per root
		// domain), else -EBUSY. The kernel tests the policy before it
		// takes any lock; here under them, where the policy is stable.
		c.Inc(stats.DLAffinityRefused)
		c.Emit(trace.EvDLAdmission, int32(p.ID), 3, 0, 0)
		r.Unlock(c)
		p.PiLock.Unlock(c.CPU)
		return
	}
	p.CPUsMask = mask
	p.NrCPUsAllowed = mask.Weight()
	p.PublishMask()
	c.Emit(trace.EvAffinity, int32(p.ID), int32(mask.Next(0)), int32(p.NrCPUsAllowed), 0)
	running := p == r.Curr() || p.OnCPU()
	// TASK_WAKING and not on a CPU: p sits on task_cpu(p)'s wake list
	// (ttwu holds pi_lock until it is queued there, and we hold it now).
	waking := !running && p.State() == task.Waking
	// The reference's exemption ("done if the task is the current donor,
	// boosting a lock-holding proxy") also covers a donor the proxy's
	// unlock has just handed the lock and woken (is_blocked clear,
	// runnable) but that is still rq->donor: finding F13. The fix
	// exempts only a donor that is still blocked; a runnable one goes to
	// the stopper, which preempts the proxy and moves it.
	donorRunnable := !running && p == r.Donor(c) && !p.IsBlocked() && !c.Bug(bugs.DonorAffinityExempt)
	if !mask.Has(p.WakeCPU) && !c.Bug(bugs.WakeCPUOutsideMask) && !(running && p.CPU() == p.WakeCPU && !mask.Has(p.CPU())) && !waking && !(donorRunnable && !mask.Has(p.CPU())) && (running || p.MigrationDisabled == 0) {
		// v11: a home CPU that is no longer allowed moves with the mask.
		// Not for a task the stopper is to move, running at home or
		// TASK_WAKING on task_cpu's wake list: its move (set_task_cpu)
		// sets wake_cpu, and a later mask that allows its CPU again must
		// not find it away from a wake_cpu it never left for (invariant
		// 8; a waking task that then took a mutex, migrate-disabled,
		// was proxy-migrated to that stray wake_cpu, got the lock there
		// and ran where it was not pinned: invariant 49).
		p.WakeCPU = dest
	}
	switch {
	case mask.Has(p.CPU()):
		// Nothing to move.
	case running || waking || donorRunnable:
		// task_on_cpu() or TASK_WAKING: affine_move_task cannot decide
		// here and punts to the stopper of task_cpu(p), which flushes
		// that CPU's wake list first (a waking p is then queued there)
		// and moves p.
		p.MigrationReady = true
		cp := m.cpus[r.CPU]
		cp.stopWork = append(cp.stopWork, p)
		if running || donorRunnable {
			r.ReschedCurr(c)
		}
		m.sendIPI(c, r.CPU, ipiStopper)
	case p.Queued() && p != r.Donor(c) && p.MigrationDisabled == 0:
		// affine_move_task exempts only rq->donor (not curr): a donor
		// boosting a proxy may stay; every other queued task, a
		// mutex-blocked one too, moves (and its wake_cpu with it).
		if c.Proxy && p.IsBlocked() && r.Donor(c) != r.Curr() && !c.Bug(bugs.ProxyKeepsDonor) {
			// A proxy runs here and p may be a link of its donor's
			// chain: once p leaves, the chain no longer ends at curr
			// (invariant 4). Re-pick. move_queued_task only checks
			// preemption on the destination: finding F2 (the same hole
			// as its unlock and wake-up halves).
			r.ReschedCurr(c)
		}
		m.moveQueuedTask(c, r, p, dest, trace.ReasonAffinity)
		r = nil
	}
	if r != nil {
		r.Unlock(c)
	}
	p.PiLock.Unlock(c.CPU)
}

// moveQueuedTask is move_queued_task(): with p's pi_lock and src's lock
// held, dequeue p (MIGRATING), point it at dest, drop src, enqueue on
// dest. Returns with no rq lock held.
func (m *Machine) moveQueuedTask(c *percpu.Ctx, src *rq.RQ, p *task.Task, dest int, why trace.MigrateReason) {
	m.moveQueuedTaskLocked(c, src, p, dest, why).Unlock(c)
}

// moveQueuedTaskLocked is move_queued_task() as the kernel returns from
// it: with dest's rq lock held (and src's dropped).
func (m *Machine) moveQueuedTaskLocked(c *percpu.Ctx, src *rq.RQ, p *task.Task, dest int, why trace.MigrateReason) *rq.RQ {
	src.DeactivateTask(c, p, rq.DequeueMigrating)
	rq.SetTaskCPU(c, p, dest, false, why)
	src.Unlock(c)
	dr := m.rqs[dest]
	dr.Lock(c)
	dr.ActivateTask(c, p, rq.EnqueueMigrated)
	dr.CheckPreemptCurr(c, p)
	return dr
}

// migrationStop is migration_cpu_stop(): the stopper thread, the highest
// priority on this CPU, preempts the current task; with it off the CPU
// (on_cpu clear) the tasks whose new mask excludes this CPU are moved
// (move_queued_task), and the CPU reschedules.
func (cp *CPU) migrationStop() {
	c, r, m := cp.c, cp.rq, cp.m
	// flush_smp_call_function_queue(): pending wake-ups are enqueued
	// first, so that a task that was TASK_WAKING on this CPU's wake list
	// is queued here and can be moved.
	cp.ttwuPending()
	r.Lock(c)
	work := cp.stopWork
	cp.stopWork = nil
	r.Unlock(c)
	for _, p := range work {
		p.PiLock.Lock(c.CPU)
		pr := m.taskRQLock(c, p)
		p.MigrationReady = false
		if pr == r && !p.CPUsMask.Has(p.WakeCPU) && !c.Bug(bugs.WakeCPUOutsideMask) && (!p.Queued() || p.IsBlocked()) && p.MigrationDisabled == 0 {
			// A task that left the CPU asleep, or stays here as a donor,
			// keeps its home: v11's wake_cpu move, deferred while it
			// ran here (setCPUsAllowed). Kernel: not queued -> wake_cpu
			// = dest. Not for a migrate-disabled task: migration_cpu_stop
			// leaves at is_migration_disabled() before it touches
			// wake_cpu, and migrate_enable() sends the stopper again.
			// (Moving it let a migrate-disabled waiter, proxy-migrated
			// to its new "home", take the lock and run there: invariant
			// 49.)
			p.WakeCPU = p.CPUsMask.Next(0)
		}
		if pr != r || p.CPUsMask.Has(r.CPU) || !p.Queued() || p.State() == task.Dead {
			pr.Unlock(c)
			p.PiLock.Unlock(c.CPU)
			continue
		}
		if p == r.Curr() || (p == r.Donor(c) && !p.IsBlocked() && !c.Bug(bugs.DonorAffinityExempt)) {
			// The stopper preempts p, or (F13's fix: p is the donor of a
			// proxy and runnable again) the proxy running for p; the
			// stopper is then rq->donor itself, and p a queued task like
			// any other.
			cp.stopperPreempt()
		}
		if p.MigrationDisabled > 0 {
			// is_migration_disabled(): out; migrate_enable() sends the
			// stopper again.
			pr.Unlock(c)
		} else if p == r.Donor(c) || (p.IsBlocked() && proxy.TaskIsBlocked(c, p)) {
			// A donor asleep in its wait loop (is_blocked, read under
			// this rq lock, and blocked_on set) may stay outside its
			// mask; the return path places it once it can run. A task
			// that was running here is not is_blocked, even with
			// blocked_on set (a woken waiter that has not re-armed yet):
			// it moves like any other.
			pr.Unlock(c)
		} else {
			// __migrate_task(): only to an allowed CPU (is_cpu_allowed).
			if dest := m.nextActive(&p.CPUsMask, 0); dest >= 0 && m.isCPUAllowed(p, dest) {
				m.moveQueuedTask(c, pr, p, dest, trace.ReasonAffinity)
			} else {
				p.StopFailed = true // the kernel's XXX: stays on a dodgy CPU
				pr.Unlock(c)
			}
		}
		p.PiLock.Unlock(c.CPU)
	}
	r.SetNeedResched()
}

// stopperPreempt is the stop thread preempting rq->curr (the idle task
// stands in for it): curr is switched out by a __schedule whose picked:
// clears its TIF_NEED_RESCHED, the stopper is rq->donor, and the CPU
// reschedules after it (the stopper sleeps when its work is done: the
// flag is set on the stand-in). The rq lock is held.
func (cp *CPU) stopperPreempt() {
	c, r := cp.c, cp.rq
	q := r.Curr()
	r.UpdateCurr(c)
	r.SetDonor(c, r.Idle)
	q.ClearTskNeedResched()
	if q != r.Idle {
		migrateDisableSwitch(r, q)
		cp.switchTo(q, r.Idle)
	}
	r.SetNeedResched()
	r.SetNextTask(c)
	r.PublishPrio(c)
}

// spansRootDomain is cpumask_subset(rd->span, mask): the one root
// domain spans the active CPUs.
func (m *Machine) spansRootDomain(mask *task.Mask) bool {
	for cpu := range m.cpus {
		if m.cpuActive(cpu) && !mask.Has(cpu) {
			return false
		}
	}
	return true
}

// nextActive is the first CPU of mask at or after from (wrapping) that
// is active: cpumask_any_and_distribute(cpu_active_mask, mask) in
// effect. -1 if there is none.
func (m *Machine) nextActive(mask *task.Mask, from int) int {
	for cpu := mask.Next(from); cpu >= 0; cpu = mask.Next(cpu + 1) {
		if m.cpuActive(cpu) {
			return cpu
		}
	}
	for cpu := mask.Next(0); cpu >= 0 && cpu < from; cpu = mask.Next(cpu + 1) {
		if m.cpuActive(cpu) {
			return cpu
		}
	}
	return -1
}

// This file mirrors kernel/sched/core.c: set_cpus_allowed_ptr() / affine_move_task(),
// move_queued_task() and the migration stopper (migration_cpu_stop).

package cpu

import (
	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// setCPUsAllowed is __set_cpus_allowed_ptr() / affine_move_task(): change
// p's mask under pi_lock and its rq lock; then, as affine_move_task does:
// done when task_cpu(p) is in the new mask, or when p is rq->donor and
// not rq->curr (the reference's exemption; finding F13's fix keeps it
// for a donor that is still blocked only); the stopper when p is on a
// CPU or TASK_WAKING (and, with F13's fix, when it is a runnable donor);
// otherwise move_queued_task when p is queued and not migrate-disabled,
// and nothing at all when it sleeps. wake_cpu is touched only where the
// kernel touches it: set_task_cpu of a move, and migration_cpu_stop's
// wake_cpu = dest for a task no longer queued. A sleeper whose wake_cpu
// the new mask excludes keeps it; its wake-up's select_task_rq places it
// on an allowed CPU (is_cpu_allowed, select_fallback_rq).
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
	p.WatchWrite(trace.FieldMask, int64(p.CPUsMask[0]))
	p.NrCPUsAllowed = mask.Weight()
	p.PublishMask()
	p.MigrationDest = dest // a pending move's pending->arg.dest_cpu
	c.Emit(trace.EvAffinity, int32(p.ID), int32(mask.Next(0)), int32(p.NrCPUsAllowed), 0)
	running := p == r.Curr() || p.OnCPU() // task_on_cpu(rq, p)
	// TASK_WAKING and not on a CPU: p sits on task_cpu(p)'s wake list
	// (ttwu holds pi_lock until it is queued there, and we hold it now).
	waking := !running && p.State() == task.Waking
	// "the current donor, boosting a lock-holding proxy": the reference
	// exempts it; the exemption also covers a donor the proxy's unlock
	// has just handed the lock and woken (is_blocked clear, runnable)
	// but that is still rq->donor: finding F13. The fix exempts only a
	// donor that is still blocked; a runnable one goes to the stopper,
	// which preempts the proxy and moves it.
	donor := !running && p == r.Donor(c)
	exempt := donor && (p.IsBlocked() || c.Bug(bugs.DonorAffinityExempt))
	switch {
	case mask.Has(p.CPU()) || exempt:
		// Nothing to move.
	case running || waking || donor:
		// task_on_cpu() or TASK_WAKING: affine_move_task cannot decide
		// here and punts to the stopper of task_cpu(p), which flushes
		// that CPU's wake list first (a waking p is then queued there)
		// and moves p.
		p.MigrationReady = true
		cp := m.cpus[r.CPU]
		cp.stopWork = append(cp.stopWork, p)
		if running || donor {
			r.ReschedCurr(c)
		}
		m.sendIPI(c, r.CPU, ipiStopper)
	case p.MigrationDisabled > 0:
		// is_migration_disabled(): the pending move waits for the
		// outermost migrate_enable(), which sends the stopper.
	case p.Queued():
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
	default:
		// Asleep: nothing moves, wake_cpu stays where it was.
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
// priority on this CPU, preempts the current task; for each task whose
// new mask excludes this CPU, with its pi_lock and this rq lock held: if
// it is still on this runqueue and not migrate-disabled, a queued task
// moves to the pending destination (__migrate_task: only if
// is_cpu_allowed there) and one no longer queued gets wake_cpu = dest; a
// task that left this runqueue meanwhile is done if its CPU is allowed,
// else the stopper of its CPU is sent after it. Then the CPU reschedules.
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
		dest := p.MigrationDest
		if pr == r && (p == r.Curr() || p == r.Donor(c)) && !p.CPUsMask.Has(r.CPU) && p.State() != task.Dead {
			// The stopper is rq->curr and rq->donor when it runs: p,
			// or the proxy running for it, is preempted first (a
			// migrate-disabled p is pinned here by that switch-out).
			cp.stopperPreempt()
		}
		switch {
		case p.State() == task.Dead:
			// Exited meanwhile: nothing left to place.
		case pr != r:
			// It moved before the stopper ran. Done if it landed on an
			// allowed CPU; else chase it (stop_one_cpu_nowait on
			// task_cpu(p)).
			if !p.CPUsMask.Has(p.CPU()) && p.MigrationDisabled == 0 {
				p.MigrationReady = true
				m.cpus[pr.CPU].stopWork = append(m.cpus[pr.CPU].stopWork, p)
				m.sendIPI(c, pr.CPU, ipiStopper)
			}
		case p.MigrationDisabled > 0:
			// is_migration_disabled(): out; migrate_enable() sends the
			// stopper again.
		case p.CPUsMask.Has(r.CPU):
			// The pending move is complete: this CPU is allowed again.
		case !p.Queued():
			// Slept meanwhile: its wake-up will start from dest.
			p.SetWakeCPU(dest)
		default:
			// __migrate_task(): only to an allowed CPU (is_cpu_allowed).
			if m.isCPUAllowed(p, dest) {
				m.moveQueuedTask(c, pr, p, dest, trace.ReasonAffinity)
				pr = nil
			} else {
				p.StopFailed = true // the kernel's XXX: stays on a dodgy CPU
			}
		}
		if pr != nil {
			pr.Unlock(c)
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

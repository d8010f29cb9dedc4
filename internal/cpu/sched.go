package cpu

import (
	"fmt"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/proxy"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// schedule is __schedule(). preempt is SM_PREEMPT: the current task is
// not going to sleep even if its state says so.
//
// With proxy execution the pick has two results: rq.donor, the task whose
// scheduling context (class, priority, vruntime) is charged, and rq.curr,
// the task that executes — the end of the donor's blocked_on chain.
func (cp *CPU) schedule(preempt bool) {
	c, r, m := cp.c, cp.rq, cp.m
	r.Lock.Lock(c.CPU)
	r.UpdateCurr(c)
	prev := r.Curr()
	if !preempt && prev != r.Idle {
		if st := prev.State(); st != task.Running {
			cp.tryToBlockTask(prev, st)
		}
	}
	keepResched := false
	var next *task.Task
	for pick := 0; ; pick++ {
		// pick_again
		if n := r.BalanceCallbacks(); n != 0 {
			m.Report(c, check.InvBalanceCallbacks, nil, fmt.Sprintf("%d balance callbacks left from an abandoned pick at pick_again on cpu%d", n, r.CPU))
			r.ZapBalanceCallbacks(c)
		}
		next = r.PickNextTask(c)
		if next == r.Idle && pick < 4 && cp.newidleBalance() {
			continue
		}
		if d := r.Donor(c); d != next {
			r.UpdateCurr(c)
		}
		r.SetDonor(c, next)
		if next != r.Idle {
			next.BlockedLock.Lock(c.CPU)
			next.SetBlockedDonor(c.CPU, nil)
			next.BlockedLock.Unlock(c.CPU)
		}
		cp.queueRTBalance(prev, next)
		if next != r.Idle && proxy.TaskIsBlocked(c, next) {
			n := proxy.FindProxyTask(c, m, r, next)
			if n == nil {
				r.ZapBalanceCallbacks(c)
				if pick > 1000 {
					m.Report(c, check.InvFPTNoWait, next, "find_proxy_task asked for a re-pick 1000 times in one __schedule: livelock")
					next = proxy.ReschedIdle(c, r)
					keepResched = true
					break
				}
				continue
			}
			if n == r.Idle {
				r.ZapBalanceCallbacks(c)
				next = n
				if !c.Bug(bugs.NeedReschedCleared) {
					keepResched = true
				}
				break
			}
			next = n
		}
		break
	}
	if !keepResched {
		r.ClearNeedResched()
	}
	if next != prev {
		cp.switchTo(prev, next)
	}
	// The pick itself takes time (not charged to any task): a CPU that
	// keeps re-picking, e.g. waiting for an owner to land, still moves
	// through virtual time, reaches the epoch's end and lets audits run.
	c.Now += m.cfg.SchedCost
	c.Stats.SimTime.Store(c.Now)
	r.SetNextTask(c)
	r.PublishPrio(c)
	r.RunBalanceCallbacks(c)
	r.Lock.Unlock(c.CPU)
}

// switchTo is context_switch(): next.on_cpu is set before the switch and
// prev.on_cpu cleared after it (finish_task_switch), with the rq lock held.
func (cp *CPU) switchTo(prev, next *task.Task) {
	c, r, m := cp.c, cp.rq, cp.m
	if next != r.Idle {
		cp.checkSwitchIn(prev, next)
	}
	r.SetCurr(c, next)
	c.Inc(stats.ContextSwitches)
	c.Emit(trace.EvSwitch, int32(next.ID), int32(prev.ID), int32(r.Donor(c).ID), 0)
	if next != r.Idle {
		next.Stats.Switches++
		if next.WakeTime != 0 {
			next.Stats.WakeLatency.Add(c.Now - next.WakeTime)
			next.WakeTime = 0
		}
	}
	c.Now += m.cfg.SwitchCost
	c.Stats.SimTime.Store(c.Now)
	r.UpdateClock(c)
	if prev != r.Idle {
		prev.SE.Runnable = c.Now // waits again from now, if still queued
		prev.SetOnCPU(false)
	}
}

// checkSwitchIn holds the inline invariants of a task about to execute.
func (cp *CPU) checkSwitchIn(prev, next *task.Task) {
	c, r, m := cp.c, cp.rq, cp.m
	if next.OnCPU() {
		m.Report(c, check.InvSingleRun, next, fmt.Sprintf("%v switched in on cpu%d while on_cpu is still set (running or switching out elsewhere)", next, r.CPU))
	}
	next.SetOnCPU(true)
	if next.CPU() != r.CPU {
		m.Report(c, check.InvQueuedHere, next, fmt.Sprintf("%v switched in on cpu%d but task_cpu is %d", next, r.CPU, next.CPU()))
	}
	if !next.Queued() || !next.SE.Queued || next.SE.QueueCPU != r.CPU {
		m.Report(c, check.InvQueuedHere, next, fmt.Sprintf("%v switched in on cpu%d but is not queued here (on_rq=%d, class queue cpu%d)", next, r.CPU, next.OnRQ(), next.SE.QueueCPU))
	}
	if !next.CPUsMask.Has(r.CPU) {
		m.Report(c, check.InvAffinity, next, fmt.Sprintf("%v executes on cpu%d outside its mask %v (wake_cpu %d)", next, r.CPU, next.CPUsMask, next.WakeCPU))
	}
	if c.Proxy && next != prev && proxy.TaskIsBlocked(c, next) {
		m.Report(c, check.InvBlockedNotCurr, next, fmt.Sprintf("%v switched in to execute on cpu%d while blocked on a mutex", next, r.CPU))
	}
	if st := next.State(); st == task.Dead {
		m.Report(c, check.InvSingleRun, next, fmt.Sprintf("%v switched in after exit", next))
	}
}

// tryToBlockTask is try_to_block_task(): a task that is going to sleep
// leaves the runqueue, unless it is mutex-blocked and proxy execution is
// on, in which case it stays queued as a potential donor.
func (cp *CPU) tryToBlockTask(prev *task.Task, st task.State) {
	c, r := cp.c, cp.rq
	if st != task.Dead && proxy.TaskIsBlocked(c, prev) {
		c.Emit(trace.EvDonorKeep, int32(prev.ID), 0, 0, 0)
		return
	}
	r.DeactivateTask(c, prev, rq.DequeueSleep)
	if st == task.Uninterruptible {
		r.NrUninterruptible++
	}
	c.Emit(trace.EvBlock, int32(prev.ID), int32(st), 0, 0)
}

// movable is can_migrate_task() for pulling t from src to dst (src lock
// held): queued, not executing, not the donor, allowed on dst, not
// mutex-blocked (blocked tasks move only by proxy migration).
func (cp *CPU) movable(src *rq.RQ, t *task.Task, dst int) bool {
	c := cp.c
	if t == src.Curr() || t == src.Donor(c) || t.OnCPU() || !t.Queued() || t.MigrationReady {
		return false
	}
	if !t.CPUsMask.Has(dst) {
		return false
	}
	return !proxy.TaskIsBlocked(c, t)
}

// pullFrom moves the best movable task from src to this CPU. Both rq
// locks are held.
func (cp *CPU) pullFrom(src *rq.RQ) *task.Task {
	c, r := cp.c, cp.rq
	t := src.PickBest(func(t *task.Task) bool { return cp.movable(src, t, r.CPU) })
	if t == nil {
		return nil
	}
	src.DeactivateTask(c, t, rq.DequeueMigrating)
	rq.SetTaskCPU(c, t, r.CPU, false, trace.ReasonLoadBalance)
	r.ActivateTask(c, t, rq.EnqueueMigrated)
	c.Emit(trace.EvLoadBalance, int32(t.ID), int32(src.CPU), int32(r.CPU), 0)
	return t
}

// findBusiest scans up to 64 CPUs (a sched domain's worth) for the
// runqueue with the most queued tasks, at least min.
func (cp *CPU) findBusiest(min int) *rq.RQ {
	m := cp.m
	n := len(m.rqs)
	span := n
	if span > 64 {
		span = 64
	}
	start := cp.id + 1 + int(cp.c.Rand.IntN(n))
	var best *rq.RQ
	bestN := min - 1
	for i := 0; i < span; i++ {
		o := m.rqs[(start+i)%n]
		if o == cp.rq {
			continue
		}
		if nr := o.NrRunning(); nr > bestN {
			best, bestN = o, nr
		}
	}
	return best
}

// newidleBalance is sched_balance_newidle(): called from __schedule with
// this rq locked and nothing to run. It drops the lock (prev stays curr
// and on_cpu, so it is pinned), pulls one task from the busiest runqueue
// under double_rq_lock, and retakes the lock. Returns true if it pulled.
func (cp *CPU) newidleBalance() bool {
	c, r := cp.c, cp.rq
	busiest := cp.findBusiest(2)
	if busiest == nil {
		return false
	}
	r.Lock.Unlock(c.CPU)
	rq.DoubleLock(c, r, busiest)
	t := cp.pullFrom(busiest)
	if t == nil {
		// The busiest runqueue changed while our lock was dropped.
		c.Inc(stats.LockJugglingRetries)
	}
	busiest.Lock.Unlock(c.CPU)
	return t != nil || r.NrRunning() > 0
}

// idleBalance pulls work into an idle CPU (kicked by a busy one).
func (cp *CPU) idleBalance() {
	c, r := cp.c, cp.rq
	busiest := cp.findBusiest(2)
	if busiest == nil {
		return
	}
	rq.DoubleLock(c, r, busiest)
	if t := cp.pullFrom(busiest); t != nil {
		r.SetNeedResched()
	}
	rq.DoubleUnlock(c, r, busiest)
}

// periodicBalance is the tick's sched_balance_trigger: pull from a
// clearly busier CPU, or kick an idle CPU to pull from us (nohz).
func (cp *CPU) periodicBalance(nr int) {
	c, r, m := cp.c, cp.rq, cp.m
	if busiest := cp.findBusiest(nr + 2); busiest != nil {
		rq.DoubleLock(c, r, busiest)
		if busiest.NrRunning() >= r.NrRunning()+2 {
			cp.pullFrom(busiest)
		}
		rq.DoubleUnlock(c, r, busiest)
	}
	if nr >= 2 {
		n := len(m.rqs)
		start := int(c.Rand.IntN(n))
		for i := 0; i < 16 && i < n; i++ {
			o := m.rqs[(start+i)%n]
			if o != r && o.IsIdle() {
				m.sendIPI(c, o.CPU, ipiBalance)
				break
			}
		}
	}
}

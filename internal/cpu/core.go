// This file mirrors kernel/sched/core.c: __schedule() with split donor/execution contexts,
// the context switch, try_to_block_task().

package cpu

import (
	"fmt"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/proxy"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// schedule is __schedule(). preempt is SM_PREEMPT: the current task is
// not going to sleep even if its state says so. The idle task enters it
// only from the idle loop, which is schedule_idle(): __schedule(SM_IDLE),
// whose fast path keeps the idle task when nothing is queued.
//
// With proxy execution the pick has two results: rq.donor, the task whose
// scheduling context (class, priority, vruntime) is charged, and rq.curr,
// the task that executes — the end of the donor's blocked_on chain.
func (cp *CPU) schedule(preempt bool) {
	c, r, m := cp.c, cp.rq, cp.m
	cp.spendCharges()
	c.IrqDisable() // local_irq_disable(), then rq_lock()
	r.Lock(c)
	cp.inSchedule = true
	cp.checkDonorHere()
	r.UpdateCurrSchedule(c)
	prev := r.Curr()
	// SM_IDLE: with rq->nr_running 0 the idle task stays (next = prev,
	// goto picked): no pick_next_task, so no newidle balancing, no
	// core-wide selection (a sibling's stale core_pick for this CPU
	// stays, and so does the core's forced-idle state), no find_proxy_task.
	idleFast := prev == r.Idle && r.NrRunning() == 0
	if idleFast {
		c.Inc(stats.SchedIdleFast)
	} else if !preempt && prev != r.Idle {
		if st := prev.State(); st != task.Running {
			cp.tryToBlockTask(prev, st)
		}
	}
	// keepResched is the kernel's keep_resched label: the pick skips
	// clear_tsk_need_resched(prev) of picked:.
	keepResched := false
	// balance_dl: the donor being put was a DL task that left the dl
	// tree (slept or throttled). Read now, under the lock, while it is
	// still ours (on_cpu if it is prev, queued here if it is a donor).
	prevDonor := r.Donor(c)
	needPullDL := prevDonor.DLTask() && !prevDonor.SE.DL.OnDLRQ
	var next *task.Task
	// The kernel's pick_again loop is unbounded. The model calls it a
	// livelock when it re-picks more often than the runqueue could drain:
	// every queued task proxy-migrated, parked or deactivated in turn,
	// twice over, plus a margin for donors arriving while the lock is
	// dropped (a runqueue holding a thousand donors of an owner that left
	// drains in a thousand re-picks, and that is progress).
	maxRepick := 1000 + 2*r.NrRunning()
	if idleFast {
		next = prev
	}
	for pick := 0; !idleFast; pick++ {
		// pick_again
		if n := r.BalanceCallbacks(); n != 0 {
			m.Report(c, check.InvBalanceCallbacks, nil, fmt.Sprintf("%d balance callbacks left from an abandoned pick at pick_again on cpu%d", n, r.CPU))
			r.ZapBalanceCallbacks(c)
		}
		if len(cp.stopWork) != 0 {
			// stop_one_cpu_nowait() woke this CPU's stopper while holding
			// this rq lock: it is queued here, and stop_sched_class is
			// picked before every other class. The idle task stands in
			// for it; its IPI (migrationStop) is pending and the CPU
			// reschedules after it (the stopper sleeps when done).
			// Without this, a task woken onto this CPU's wake list whose
			// mask then excluded the CPU was picked before the stopper
			// could move it (invariant 2). A pick like any other:
			// picked: clears prev's flag.
			if r.Donor(c) != r.Idle {
				r.UpdateCurr(c)
			}
			r.SetDonor(c, r.Idle)
			next = r.Idle
			break
		}
		if r.WatchedCoreEnabled() {
			next = cp.corePickNextTask(pick)
		} else {
			next = r.PickNextTask(c)
			if next == r.Idle && pick < 4 && cp.newidleBalance() {
				continue
			}
		}
		// put_prev_set_next_task(rq, rq->donor, next) returns at once
		// when next is the donor already: no put_prev_task and no
		// set_next_task, so no push or pull is queued (set_next_task_rt
		// and _dl queue the push when a task becomes the donor). A
		// re-pick of the same donor queues nothing; were it to, the
		// push's own "resched_curr(rq) instead" shortcut could ask for
		// the same pick again and again (under core scheduling the
		// pushable task may not be the core's choice).
		donorChanged := false
		if !(c.Proxy && cp.coreRetainDonor()) {
			// The pick becomes rq->donor (a retained donor's re-pick
			// returns the owner, an execution context, which may be a
			// throttled task).
			cp.checkThrottledPick(next)
			if d := r.Donor(c); d != next {
				r.UpdateCurr(c)
				donorChanged = true
			}
			r.SetDonor(c, next)
			if next != r.Idle {
				next.SetBlockedDonor(nil) // rq lock held: next is queued here
			}
		}
		if donorChanged {
			cp.queueRTBalance(prev, next)
			cp.queueDLBalance(needPullDL, next)
		}
		if c.Proxy && next != r.Idle && next.IsBlocked() {
			var n *task.Task
			if !mutantFPTRetry() {
				n = proxy.FindProxyTask(c, m, r, next)
			}
			if n == nil {
				r.ZapBalanceCallbacks(c)
				c.Charge(c.ProxyCosts.Repick) // pick_again: the pick runs once more
				if pick > maxRepick {
					m.Report(c, check.InvFPTNoWait, next, fmt.Sprintf("find_proxy_task asked for a re-pick %d times in one __schedule (%d tasks queued at its start): livelock", pick, (maxRepick-1000)/2))
					next = proxy.ReschedIdle(c, r)
					keepResched = true
					break
				}
				continue
			}
			if n == r.Idle {
				// goto keep_resched: prev's flag stays, and
				// proxy_resched_idle set the idle task's. --bug
				// need-resched-cleared goes through picked: as v10/v11
				// did, clearing prev's flag: harmless unless prev is
				// the idle task, whose flag proxy_resched_idle just set.
				r.ZapBalanceCallbacks(c)
				next = n
				if !c.Bug(bugs.NeedReschedCleared) {
					keepResched = true
				}
				break
			}
			if !r.CPUCookieMatch(n) {
				// The execution context's cookie governs (the
				// reference's sched_cpu_cookie_match after
				// find_proxy_task).
				if n = cp.coreSwapPick(); n == nil {
					// RETRY_TASK: the reference goes to pick_again
					// without zap_balance_callbacks(), where
					// assert_balance_callbacks_empty() would WARN on
					// what the first pick queued (docs/kernel-map.md).
					r.ZapBalanceCallbacks(c)
					c.Charge(c.ProxyCosts.Repick)
					if pick > maxRepick {
						m.Report(c, check.InvFPTNoWait, next, fmt.Sprintf("core re-pick for the owner of donor %v asked for %d times in one __schedule: livelock", next, pick))
						next = proxy.ReschedIdle(c, r)
						keepResched = true
						break
					}
					continue
				}
			}
			if n != next && n.MigrationDisabled > 0 {
				c.Inc(stats.MigrateDisabledProxy) // a migrate-disabled owner runs as a proxy
			}
			if d := r.Donor(c); n != d && d.DLTask() {
				c.Inc(stats.DLDonorPicks) // a DL budget pays for its owner
			}
			next = n
		}
		break
	}
	if !keepResched {
		prev.ClearTskNeedResched() // picked:
	}
	cp.outrankedSince = -1 // the pick ran: invariant 65's time starts again
	if next != prev {
		if prev != r.Idle {
			migrateDisableSwitch(r, prev)
		}
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
	if cp.balancePush {
		cp.balancePushCB()
	}
	cp.inSchedule = false
	r.Unlock(c)
	c.IrqEnable() // finish_task_switch: raw_spin_rq_unlock_irq()
}

// switchTo is context_switch(): next.on_cpu is set before the switch and
// prev.on_cpu cleared after it (finish_task_switch), with the rq lock held.
func (cp *CPU) switchTo(prev, next *task.Task) {
	c, r, m := cp.c, cp.rq, cp.m
	if next != r.Idle {
		cp.checkSwitchIn(prev, next)
		if r.CoreEnabled() {
			cp.checkCoreCookie(next)
		}
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
		prev.SE.Runnable, prev.SE.RunnableHi = c.Now, r.HiClassTime(c.Now) // waits again from now, if still queued
		dead := prev.State() == task.Dead && !prev.Exec.Reaped
		if dead {
			prev.Exec.Reaped = true
		}
		prev.SetOnCPU(false)
		if dead {
			// finish_task_switch: a dead prev drops its own reference
			// through put_task_struct_rcu_user, that is call_rcu: the
			// put runs after a grace period, at the epoch barrier
			// (rcuBarrierPuts). Code that still holds a pointer from
			// before (IRQs off in __schedule, an RCU read side) finds a
			// DEAD task, not freed memory.
			prev.PutTaskStructRCUUser()
			cp.rcuPuts = append(cp.rcuPuts, prev)
			if prev.CoreCookie != 0 && m.cfg.CoreSched != CoreOff {
				// sched_core_free(): the cookie reference goes with
				// the task (the kernel puts it when the struct is
				// freed, a grace period later).
				m.schedCorePut()
			}
		}
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
	if m.hotplug && !m.cpuOnline(r.CPU) {
		m.Report(c, check.InvOffline, next, fmt.Sprintf("%v switched in on offline cpu%d", next, r.CPU))
	}
	if next.PinnedCPU >= 0 && next.PinnedCPU != r.CPU {
		m.Report(c, check.InvMigrateDisabled, next, fmt.Sprintf("migrate-disabled %v (pinned to cpu%d) switched in on cpu%d", next, next.PinnedCPU, r.CPU))
	}
	if next.StopFailed && next.CPUsMask.Has(r.CPU) {
		next.StopFailed = false
	}
	if !next.CPUsMask.Has(r.CPU) && next.PinnedCPU != r.CPU && !next.StopFailed {
		m.Report(c, check.InvAffinity, next, fmt.Sprintf("%v executes on cpu%d outside its mask %v (wake_cpu %d)", next, r.CPU, next.CPUsMask, next.WakeCPU))
	}
	if next != prev && next.IsBlocked() {
		m.Report(c, check.InvBlockedNotCurr, next, fmt.Sprintf("%v switched in to execute on cpu%d with is_blocked set", next, r.CPU))
	}
	if st := next.State(); st == task.Dead {
		m.Report(c, check.InvSingleRun, next, fmt.Sprintf("%v switched in after exit", next))
	}
}

// tryToBlockTask is try_to_block_task(): a task that is going to sleep is
// marked is_blocked and leaves the runqueue, unless it is mutex-blocked
// (task_is_blocked) and proxy execution is on, in which case it stays
// queued as a potential donor. A signal pending for the sleep state
// (signal_pending_state) cancels the sleep first: the task is RUNNING
// again, its blocked_on is cleared (clear_task_blocked_on takes its
// blocked_lock, inside the rq lock), and it stays current; a mutex waiter
// then leaves its wait loop with -EINTR.
func (cp *CPU) tryToBlockTask(prev *task.Task, st task.State) {
	c, r := cp.c, cp.rq
	if prev.IsBlocked() {
		c.Warn(check.InvRunningNotBlocked, prev.ID, prev.String(), "try_to_block_task: %v already has is_blocked set", prev)
	}
	if prev.SignalPendingState(st) {
		prev.SetState(task.Running)
		prev.BlockedLock.Lock(c.CPU)
		prev.ClearBlockedOn(c, nil, true)
		prev.BlockedLock.Unlock(c.CPU)
		c.Inc(stats.SignalSleepAborts)
		return
	}
	prev.SetIsBlocked(true)
	if st != task.Dead && proxy.TaskIsBlocked(c, prev) {
		c.Emit(trace.EvDonorKeep, int32(prev.ID), 0, 0, 0)
		return
	}
	if r.BlockTask(c, prev, st) {
		c.Emit(trace.EvBlock, int32(prev.ID), int32(st), 0, 0)
	}
}

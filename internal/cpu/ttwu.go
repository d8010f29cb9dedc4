// This file mirrors kernel/sched/core.c: try_to_wake_up(), ttwu_runnable(), the wake list
// (ttwu_queue_wakelist, sched_ttwu_pending), ttwu_do_activate(),
// select_task_rq(), task_rq_lock().

package cpu

import (
	"fmt"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/proxy"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// WakeUpProcess is wake_up_process() (proxy.Machine).
func (m *Machine) WakeUpProcess(c *percpu.Ctx, p *task.Task) bool {
	return m.tryToWakeUp(c, p, task.WakeNormal)
}

// ttwuDoWakeup is ttwu_do_wakeup(): is_blocked cleared and TASK_RUNNING,
// with the rq lock held (or by current for itself).
func ttwuDoWakeup(c *percpu.Ctx, p *task.Task) {
	if !c.Bug(bugs.TTWUKeepsBlocked) {
		p.SetIsBlocked(false)
	}
	p.SetState(task.Running)
}

// tryToWakeUp is try_to_wake_up(): pi_lock, then the state test; a task
// still queued is woken in place (ttwu_runnable, with the return check of
// proxy execution); otherwise it is marked TASK_WAKING, its on_cpu waited
// for (or the wakeup handed to that CPU's wake list), a CPU chosen with
// select_task_rq and the task enqueued there.
func (m *Machine) tryToWakeUp(c *percpu.Ctx, p *task.Task, mask task.StateMask) bool {
	if p.Freed() {
		// The waker holds no reference and the task's last one is gone:
		// the kernel would take p->pi_lock in freed memory.
		m.Report(c, check.InvUseAfterFree, p, fmt.Sprintf("try_to_wake_up of %v after its last reference was dropped (it exited)", p))
		return false
	}
	self := m.cpus[c.ID]
	if p == self.rq.Curr() {
		// p == current: it is running right here.
		if p.IsBlocked() {
			c.Warn(check.InvRunningNotBlocked, p.ID, p.String(), "try_to_wake_up: current %v has is_blocked set", p)
		}
		if p.SE.Delayed {
			// current runs before __schedule's block_task: never delayed.
			c.Warn(check.InvOneQueue, p.ID, p.String(), "try_to_wake_up: current %v is sched_delayed", p)
		}
		// clear_task_blocked_on(p, NULL), before the state test.
		p.BlockedLock.Lock(c.CPU)
		p.ClearBlockedOn(c, nil, true)
		p.BlockedLock.Unlock(c.CPU)
		if !p.State().Matches(mask) {
			return false
		}
		ttwuDoWakeup(c, p)
		c.Inc(stats.Wakeups)
		return true
	}
	p.PiLock.Lock(c.CPU)
	if !p.State().Matches(mask) {
		p.PiLock.Unlock(c.CPU)
		if c.Bug(bugs.EarlyActivation) {
			m.maybeActivateWaiters(c, p) // the kernel's out: label
		}
		return false
	}
	c.Inc(stats.Wakeups)
	p.Stats.Wakeups++
	if p.OnRQ() != task.OnRQNone && m.ttwuRunnable(c, p) {
		p.PiLock.Unlock(c.CPU)
		c.Inc(stats.WakeupsRunnable)
		m.maybeActivateWaiters(c, p)
		return true
	}
	p.SetState(task.Waking)
	if p.OnCPU() {
		// Still switching out on its CPU: let that CPU finish the wakeup
		// (ttwu_queue_wakelist with WF_ON_CPU), or wait for it.
		if t := p.CPU(); m.ttwuQueueCond(c, p, t) {
			p.WakeTime = c.Now
			m.queueWakeList(c, p, t)
			p.PiLock.Unlock(c.CPU)
			if c.Bug(bugs.EarlyActivation) {
				m.maybeActivateWaiters(c, p) // before t has enqueued p
			}
			return true
		}
		for p.OnCPU() {
			c.Inc(stats.OnCPUWaits)
			c.Relax()
		}
	}
	cpu := m.selectTaskRQ(c, p)
	if (c.Bug(bugs.ReturnToOffline) || c.Bug(bugs.WakeCPUOutsideMask)) && p.CPU() != p.WakeCPU {
		// Before v16 (v11 for a wake_cpu outside the mask): a
		// returning donor goes straight back to wake_cpu, online or
		// not, allowed or not.
		cpu = p.WakeCPU
	}
	if cpu != p.CPU() {
		why := trace.ReasonWake
		if p.CPU() != p.WakeCPUOf() {
			// Away from home: a proxy-migrated task that
			// proxy_needs_return (or proxy_activate) sent back.
			why = trace.ReasonReturn
		}
		rq.SetTaskCPU(c, p, cpu, false, why)
	} else if cpu != p.WakeCPU {
		p.SetWakeCPU(cpu)
	}
	p.WakeTime = c.Now
	queued := m.ttwuQueue(c, p, cpu)
	p.PiLock.Unlock(c.CPU)
	if !queued || c.Bug(bugs.EarlyActivation) {
		m.maybeActivateWaiters(c, p)
	}
	return true
}

// maybeActivateWaiters runs activate_blocked_waiters at the end of ttwu,
// once p is on a runqueue. A wakeup handed to a wake list activates the
// waiters when the target CPU has enqueued p (sched_ttwu_pending): before
// that, p's on_rq is still 0 and a donor could park on it after an early
// activation pass had found the list empty, stranded for good. That is
// finding F1 (docs/findings.md): the kernel activates at ttwu's out:
// label on every path; --bug early-activation restores it.
func (m *Machine) maybeActivateWaiters(c *percpu.Ctx, p *task.Task) {
	if c.Proxy && m.cfg.SleepingOwners {
		proxy.ActivateBlockedWaiters(c, m, p.CPU(), p)
	}
}

// taskRQLock is __task_rq_lock(): lock the rq p is on; if p moved while
// we waited for the lock, or is MIGRATING, unlock, spin without the lock
// until it is no longer MIGRATING, and start over. The caller holds
// p.PiLock.
func (m *Machine) taskRQLock(c *percpu.Ctx, p *task.Task) *rq.RQ {
	p.PiLock.AssertHeld(c.CPU)
	for {
		r := m.rqs[p.CPU()]
		r.Lock(c)
		if r.CPU == p.CPU() && !p.Migrating() {
			return r
		}
		r.Unlock(c)
		c.Inc(stats.LockJugglingRetries)
		for p.Migrating() {
			c.Relax()
		}
	}
}

// ttwuRunnable is ttwu_runnable(): p is still queued; mark it RUNNING
// there. With proxy execution an is_blocked p (a donor) first gets its
// return check (proxy_needs_return): if it must move, it has been
// dequeued and ttwuRunnable returns false so that the caller does the
// full wakeup.
func (m *Machine) ttwuRunnable(c *percpu.Ctx, p *task.Task) bool {
	r := m.taskRQLock(c, p)
	defer r.Unlock(c)
	if !p.Queued() {
		// Dequeued between the lockless on_rq look and the lock.
		c.Inc(stats.LockJugglingRetries)
		return false
	}
	r.UpdateClock(c)
	if p.IsBlocked() && p.SE.Delayed {
		// A delayed sleeper (DELAY_DEQUEUE) is still queued: take it
		// off a sleeping owner's list it may be parked on and requeue
		// it (ENQUEUE_DELAYED). The reference does this inside its
		// is_blocked test, which every sleeper passes.
		if c.Proxy {
			p.RemoveFromSleepingOwner(c.CPU)
		}
		r.Enqueue(c, p, rq.EnqueueDelayed)
	}
	if c.Proxy && p.IsBlocked() {
		if r.Donor(c) != r.Curr() && !c.Bug(bugs.ProxyKeepsDonor) {
			// A proxy runs here, and p may be its donor or a link of the
			// donor's chain: once p is runnable (or leaves), that chain
			// no longer ends at curr. Re-pick. The reference does not:
			// wakeup_preempt compares p with the donor (itself, if p is
			// the donor) and proxy_needs_return reschedules only for the
			// donor. Finding F2 (the wake-up half; the unlock half is in
			// cpu.unlock).
			r.ReschedCurr(c)
		}
		if c.Bug(bugs.RunnableWithoutReturn) {
			// Bug 7 (before v9/v14): no return check; the woken donor is
			// made runnable wherever it is queued.
		} else if proxy.NeedsReturn(c, r, p) {
			return false
		}
	}
	if !p.OnCPU() {
		r.CheckPreemptCurr(c, p)
	}
	ttwuDoWakeup(c, p)
	c.Emit(trace.EvWakeRunnable, int32(p.ID), int32(r.CPU), 0, 0)
	return true
}

// queueWakeList is ttwu_queue_wakelist(): push p on CPU target's wake
// list and send it the IPI.
func (m *Machine) queueWakeList(c *percpu.Ctx, p *task.Task, target int) {
	t := m.cpus[target]
	for {
		head := t.wakeList.Load()
		p.WakeEntry.Store(head)
		if t.wakeList.CompareAndSwap(head, p) {
			break
		}
	}
	p.WatchWrite(trace.FieldWakeEntry, int64(target))
	c.Inc(stats.WakeupsRemote)
	c.Emit(trace.EvWake, int32(p.ID), int32(target), 1, 0)
	m.sendIPI(c, target, ipiWakeList)
}

// ttwuQueueCond is ttwu_queue_cond(): may the wake-up of p on cpu go
// through cpu's wake list? Not outside p's mask; always across LLCs; not
// to this CPU; within the LLC only to a CPU with nothing running (its
// nr_running read without its lock). There is no hotplug (every CPU is
// active) and no sched_ext.
func (m *Machine) ttwuQueueCond(c *percpu.Ctx, p *task.Task, cpu int) bool {
	if !m.cpuActive(cpu) {
		return false // no wake list while the CPU is in hotplug state
	}
	if !p.CPUsMask.Has(cpu) {
		return false
	}
	if m.topo.LLC(cpu) != m.topo.LLC(c.ID) {
		return true
	}
	if cpu == c.ID {
		return false
	}
	return m.rqs[cpu].NrRunning() == 0
}

// ttwuQueue is ttwu_queue(): enqueue p on cpu, through that CPU's wake
// list when ttwu_queue_cond allows (that CPU will do the enqueue itself).
// Returns true if it went through the wake list.
func (m *Machine) ttwuQueue(c *percpu.Ctx, p *task.Task, cpu int) bool {
	r := m.rqs[cpu]
	if mutantUnlockedEnqueue(c, r, p) {
		return false
	}
	if m.ttwuQueueCond(c, p, cpu) {
		m.queueWakeList(c, p, cpu)
		return true
	}
	r.Lock(c)
	m.ttwuDoActivate(c, r, p)
	r.Unlock(c)
	c.Emit(trace.EvWake, int32(p.ID), int32(cpu), 0, 0)
	return false
}

// ttwuDoActivate is ttwu_do_activate(): enqueue, preempt check, RUNNING.
func (m *Machine) ttwuDoActivate(c *percpu.Ctx, r *rq.RQ, p *task.Task) {
	r.UpdateClock(c)
	updateAvgIdle(r, c.Now)
	if p.ContributesToLoad {
		r.NrUninterruptible--
	}
	flags := rq.EnqueueWakeup
	if p.Migrating() {
		flags |= rq.EnqueueMigrated
	}
	r.ActivateTask(c, p, flags)
	r.CheckPreemptCurr(c, p)
	ttwuDoWakeup(c, p)
	m.taskWokenDL(c, r, p)
}

// ttwuPending is sched_ttwu_pending(): activate everything on this CPU's
// wake list.
func (cp *CPU) ttwuPending() {
	c, r := cp.c, cp.rq
	head := cp.wakeList.Swap(nil)
	if head == nil {
		return
	}
	var list []*task.Task
	for p := head; p != nil; {
		next := p.WakeEntry.Load()
		p.WakeEntry.Store(nil)
		p.WatchRead(trace.FieldWakeEntry, int64(cp.id))
		list = append(list, p)
		p = next
	}
	r.Lock(c)
	for i := len(list) - 1; i >= 0; i-- {
		p := list[i]
		if on := p.OnRQ(); on != task.OnRQNone {
			// A wake-list entry must be off every runqueue: the remote CPU
			// enqueues it without pi_lock (v23: never queue a MIGRATING
			// task here; its mover may spin for it in task_rq_lock).
			cp.m.Report(c, check.InvOneQueue, p, fmt.Sprintf("%v taken off cpu%d's wake list with on_rq=%d: it was queued there while still on a runqueue or moving", p, r.CPU, on))
		}
		if p.CPU() != r.CPU {
			rq.SetTaskCPU(c, p, r.CPU, false, trace.ReasonWake)
		}
		// A mask changed while p sat here (TASK_WAKING) sent this CPU's
		// stopper, which runs after this and moves p (affine_move_task).
		cp.m.ttwuDoActivate(c, r, p)
	}
	r.Unlock(c)
	if c.Bug(bugs.EarlyActivation) {
		return // the waker activated at the end of try_to_wake_up
	}
	for i := len(list) - 1; i >= 0; i-- {
		cp.m.maybeActivateWaiters(c, list[i])
	}
}

// selectTaskRQ is select_task_rq(): p's pi_lock is held and p is off
// every runqueue. The previous (home) CPU if it is idle; else, walking
// prev's domains from the smallest (select_idle_sibling looks in the LLC;
// find_lowest_rq prefers the closest domain), an idle allowed CPU, or for
// an RT task an allowed CPU running something of lower priority; a fair
// task stays within the LLC (the least loaded allowed CPU there) if it
// may run in it. Never outside the mask.
func (m *Machine) selectTaskRQ(c *percpu.Ctx, p *task.Task) int {
	p.PiLock.AssertHeld(c.CPU)
	if cpu, ok := mutantSelectIgnoresMask(m, p); ok {
		return cpu
	}
	prev := p.WakeCPU
	mask := &p.CPUsMask
	if p.NrCPUsAllowed == 1 || p.MigrationDisabled > 0 {
		// cpumask_any(p->cpus_ptr): a migrate-disabled task goes back to
		// the CPU it is pinned to.
		cpu := mask.Next(0)
		if p.PinnedCPU >= 0 {
			cpu = p.PinnedCPU
		}
		if m.hotplug && !m.isCPUAllowed(p, cpu) {
			cpu = m.selectFallbackRQ(c, p.CPU(), p)
		}
		return cpu
	}
	if mask.Has(prev) && m.cpuActive(prev) && m.rqs[prev].IsIdle() {
		return prev
	}
	if p.DLTask() && mask.Has(prev) {
		cpu := m.selectTaskRQDL(c, p, prev)
		if m.hotplug && !m.isCPUAllowed(p, cpu) {
			// select_task_rq()'s is_cpu_allowed check covers every
			// class's pick (here: prev went down under a DL task).
			cpu = m.selectFallbackRQ(c, p.CPU(), p)
		}
		return cpu
	}
	rt := p.SE.Policy.RT()
	prio := p.SE.Prio
	best, bestScore := -1, int(^uint(0)>>1)
	llcSize := len(m.topo.LLCSpan(prev))
	for _, span := range m.spans(prev) {
		n := len(span)
		// start after prev in the span, so that wakers spread
		start := 0
		for k, cpu := range span {
			if cpu == prev {
				start = k + 1
				break
			}
		}
		for i := 0; i < n; i++ {
			cpu := span[(start+i)%n]
			if !mask.Has(cpu) || !m.cpuActive(cpu) {
				continue
			}
			o := m.rqs[cpu]
			var score int
			switch {
			case o.IsIdle():
				return cpu
			case rt && o.CurrPrio() > prio:
				score = -1000 - (o.CurrPrio() - prio) + o.NrRunning()
			default:
				score = o.NrRunning()
			}
			if cpu == prev {
				score--
			}
			if score < bestScore {
				best, bestScore = cpu, score
			}
		}
		if best < 0 {
			continue
		}
		if rt && bestScore < -1000 {
			return best // a lower-priority CPU in the closest domain
		}
		if !rt && len(span) >= llcSize {
			return best // fair wake-ups stay within the LLC
		}
	}
	if best < 0 {
		best = mask.Next(0)
	}
	if m.hotplug && !m.isCPUAllowed(p, best) {
		// select_task_rq(): the class's pick is not allowed (inactive:
		// going down or offline).
		best = m.selectFallbackRQ(c, p.CPU(), p)
	}
	return best
}

// This file mirrors kernel/sched/deadline.c's balancing and timer halves as the
// proxy-execution series has them: the dl_timer (dl_task_timer), the balance
// callbacks (push_dl_tasks, pull_dl_task), find_later_rq over cpudl
// (cpudl_find with the scheduling and execution contexts), find_lock_later_rq,
// select_task_rq_dl, and admission control at sched_setattr time.

package cpu

import (
	"fmt"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/proxy"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// dlMaxTries is DL_MAX_TRIES.
const dlMaxTries = 3

// startDLTimer is hrtimer_start of p's dl_timer on the calling CPU (the
// rq.StartDLTimer hook; start_dl_timer has checked it is not queued).
func (m *Machine) startDLTimer(c *percpu.Ctx, p *task.Task, when int64) uint64 {
	return m.cpus[c.ID].armTimerKind(p, when, timerDL)
}

// dlTaskTimer is dl_task_timer(): on the CPU whose timer fired, take
// task_rq_lock(p); the rq part (rq.DLTimerFire) replenishes; a task put
// back in the dl tree may be pushed away at once (__push_dl_task).
func (m *Machine) dlTaskTimer(c *percpu.Ctx, p *task.Task, id uint64) {
	p.PiLock.Lock(c.CPU)
	r := m.taskRQLock(c, p)
	if m.hotplug && !m.cpuOnline(r.CPU) && p.DLTask() && p.SE.DL.Throttled && p.Queued() {
		// The kernel tests !rq->online, which set_rq_offline clears at
		// sched_cpu_deactivate, while the CPU is still going down; the
		// model waits for take_cpu_down (cpu_online). Tested the
		// kernel's way, a migrate-disabled throttled task (its CPU
		// pinned by nr_pinned) was moved: invariant 49 within seconds
		// at 4 CPUs, set_task_cpu's is_migration_disabled WARN in the
		// kernel. Not yet checked against deadline.c: a candidate.
		r = m.dlTaskOfflineMigration(c, r, p)
	}
	if r.DLTimerFire(c, p, c.ID, id) && r.NrDL() >= 2 {
		m.pushDLTasks(c, r)
	}
	r.Unlock(c)
	p.PiLock.Unlock(c.CPU)
}

// dlTaskOfflineMigration is dl_task_offline_migration(): the dl_timer of
// a throttled task whose CPU went offline under it (a throttled task is
// not in nr_running, so the CPU could go) moves the task to an active CPU
// of its cpus_ptr, or to any active CPU when none is left (the kernel's
// "the task will never come back" fallback, affinity broken). The kernel
// first tries find_lock_later_rq; the model takes the fallback directly,
// and moves the task with a dequeue and an enqueue (the kernel only
// set_task_cpu()s it: throttled, it is in no tree; the model's throttled
// list is per runqueue).
// Called with pi_lock and r locked; returns with the new rq locked
// instead of r.
func (m *Machine) dlTaskOfflineMigration(c *percpu.Ctx, r *rq.RQ, p *task.Task) *rq.RQ {
	cpu := -1
	for d := range m.cpus {
		if m.cpuActive(d) && p.AllowedOn(d) {
			cpu = d
			break
		}
	}
	if cpu < 0 {
		for d := range m.cpus {
			if m.cpuActive(d) {
				cpu = d
				break
			}
		}
		p.CPUsMask = task.MaskAll(len(m.cpus))
		p.WatchWrite(trace.FieldMask, int64(p.CPUsMask[0]))
		p.NrCPUsAllowed = len(m.cpus)
		p.PublishMask()
		c.Inc(stats.AffinityBroken)
	}
	if cpu < 0 {
		return r // no active CPU at all: cannot happen (never the last one)
	}
	later := m.rqs[cpu]
	rq.DoubleLockBalance(c, r, later)
	if p.CPU() != r.CPU || !p.Queued() {
		// Moved while double_lock_balance dropped r (the kernel's
		// task_rq_lock plus pi_lock keep p from moving; so does ours).
		rq.DoubleUnlockBalance(c, r, later)
		return r
	}
	r.DeactivateTask(c, p, rq.DequeueMigrating)
	rq.SetTaskCPU(c, p, cpu, false, trace.ReasonHotplug)
	later.ActivateTask(c, p, rq.EnqueueMigrated)
	r.Unlock(c)
	return later
}

// queueDLBalance queues push_dl_tasks when the pick is a DL donor and
// other DL tasks wait here (set_next_task_dl's deadline_queue_push_tasks),
// and pull_dl_task when the previous donor was a DL task that left the dl
// tree (balance_dl's need_pull_dl_task) while some runqueue is
// DL-overloaded. As for RT, the model queues both after the pick.
//
// needPull is need_pull_dl_task for the donor being put, read by
// __schedule before the pick (the previous donor may leave this runqueue
// while the pick drops the lock; its class state is then not ours).
func (cp *CPU) queueDLBalance(needPull bool, next *task.Task) {
	c, r := cp.c, cp.rq
	if next.DLTask() && r.NrDL() >= 2 {
		r.QueueBalanceCallback(c, rq.BalanceCallback{Name: "push_dl_tasks", Fn: cp.m.pushDLTasks})
	}
	if needPull && cp.m.dlo.Load() > 0 {
		r.QueueBalanceCallback(c, rq.BalanceCallback{Name: "pull_dl_task", Fn: cp.m.pullDLTask})
	}
}

// dlCandidates lists r's pushable DL tasks, earliest deadline first: in
// the dl tree (not throttled), not task_is_blocked (enqueue_task_dl and
// put_prev_task_dl keep blocked donors off the pushable list), allowed on
// more than one CPU, not migrate-disabled (push_dl_task and pull_dl_task
// skip is_migration_disabled tasks), and not this runqueue's donor (set_next_task_dl took
// it off the list). The model reads the test now instead of keeping the
// list.
func dlCandidates(c *percpu.Ctx, r *rq.RQ) []*task.Task {
	var out []*task.Task
	d := r.Donor(c)
	for _, t := range r.DLTasks(c) {
		if t != d && t.NrCPUsAllowed > 1 && t.PinnedCPU < 0 && !proxy.TaskIsBlocked(c, t) {
			out = append(out, t)
		}
	}
	return out
}

// pickNextPushableDLTask is pick_next_pushable_dl_task(): the earliest
// pushable task not on a CPU.
func pickNextPushableDLTask(c *percpu.Ctx, r *rq.RQ) *task.Task {
	for _, t := range dlCandidates(c, r) {
		if t != r.Curr() && !t.OnCPU() {
			return t
		}
	}
	return nil
}

// pickEarliestPushableDLTask is pick_earliest_pushable_dl_task(): the
// earliest candidate task_is_pushable to cpu, and what moves with it.
func pickEarliestPushableDLTask(c *percpu.Ctx, r *rq.RQ, cpu int) (*task.Task, []*task.Task) {
	for _, t := range dlCandidates(c, r) {
		if ok, chain := taskIsPushable(c, r, t, cpu); ok == pushable {
			return t, chain
		}
	}
	return nil, nil
}

// dlTaskIsEarliestDeadline is dl_task_is_earliest_deadline(p, rq).
func dlTaskIsEarliestDeadline(p *task.Task, r *rq.RQ) bool {
	return r.NrDL() == 0 || rq.DLTimeBefore(p.SE.DL.Deadline, r.EarliestDL())
}

// cpudlFind is cpudl_find(cp, sched_ctx, exec_ctx, later_mask): the CPUs
// with no DL task that exec may run on (free_cpus); failing that, the CPU
// whose earliest deadline is the latest of all (the heap's maximum) if
// exec may run there and sched's deadline is earlier. The kernel reads a
// max-heap under its own lock; the model scans the per-CPU earliest
// deadlines (READ_ONCE), which gives the same answer up to races the
// heap's lock does not prevent either (the rq locks are not held).
func (m *Machine) cpudlFind(sched, exec *task.Task) task.Mask {
	var later task.Mask
	// cpudl covers the root domain's online runqueues: rq_offline_dl
	// takes a CPU out of it when it goes inactive (as findLowestRQ's
	// cpupri).
	for cpu := exec.CPUsMask.Next(0); cpu >= 0; cpu = exec.CPUsMask.Next(cpu + 1) {
		if m.rqs[cpu].EarliestDL() == 0 && m.cpuActive(cpu) {
			later.Set(cpu)
		}
	}
	if !later.Empty() {
		return later
	}
	best, bestDL := -1, int64(0)
	for cpu, r := range m.rqs {
		if !m.cpuActive(cpu) {
			continue
		}
		if d := r.EarliestDL(); d != 0 && (best < 0 || rq.DLTimeBefore(bestDL, d)) {
			best, bestDL = cpu, d
		}
	}
	if best >= 0 && exec.CPUsMask.Has(best) && rq.DLTimeBefore(sched.SE.DL.Deadline, bestDL) {
		later.Set(best)
	}
	return later
}

// checkPreemptEqualDL is check_preempt_equal_dl(rq, p) as the series has
// it, for p woken on r with the donor's deadline (r's lock held): useless
// to reschedule if the execution context cannot move or cpudl offers the
// donor no CPU; p's chain must end on r (find_exec_ctx) in a task other
// than the one running; and if p could move (cpudl offers it a CPU for
// its execution context), it is left to the push and pull. Otherwise the
// donor is rescheduled.
func (m *Machine) checkPreemptEqualDL(c *percpu.Ctx, r *rq.RQ, p *task.Task) bool {
	curr, donor := r.Curr(), r.Donor(c)
	if curr.NrCPUsAllowed == 1 {
		return false
	}
	if later := m.cpudlFind(donor, curr); later.Empty() {
		return false
	}
	exec, _ := findExecCtx(c, r, p)
	if exec == nil || exec == curr {
		return false
	}
	if p.NrCPUsAllowed != 1 {
		if later := m.cpudlFind(p, exec); !later.Empty() {
			return false
		}
	}
	return true
}

// findLaterRQ is find_later_rq(sched_ctx, exec_ctx) from CPU c: among the
// CPUs cpudl_find offers, the task's own CPU, else this CPU if it is in
// one of the task CPU's domains, else the first offered CPU of the
// smallest domain holding one, else any. -1 if none.
func (m *Machine) findLaterRQ(c *percpu.Ctx, sched, exec *task.Task) int {
	if exec == nil || exec.NrCPUsAllowed == 1 {
		return -1
	}
	later := m.cpudlFind(sched, exec)
	if later.Empty() {
		return -1
	}
	cpu := sched.CPU()
	if later.Has(cpu) {
		return cpu
	}
	this := c.ID
	if !later.Has(this) {
		this = -1
	}
	for _, span := range m.spans(cpu) {
		for _, o := range span {
			if o == this {
				return this // preempting this CPU is cheaper than migrating
			}
		}
		for _, o := range span {
			if later.Has(o) {
				return o
			}
		}
	}
	if this != -1 {
		return this
	}
	return later.Next(0)
}

// dlRevalidateRQState is dl_revalidate_rq_state(): after
// double_lock_balance dropped our lock, is t still the task to push?
func dlRevalidateRQState(c *percpu.Ctx, t *task.Task, r, later *rq.RQ) bool {
	if t.CPU() != r.CPU || !t.Queued() {
		// It left while our lock was dropped: its class state is another
		// runqueue's now (the kernel reads it racily; the model must not).
		return false
	}
	if !t.CPUsMask.Has(later.CPU) {
		return false
	}
	if t.SE.DL.Throttled {
		return t.CPU() == r.CPU && !t.OnCPU() && t.DLTask() && t.Queued()
	}
	return t == pickNextPushableDLTask(c, r)
}

// findLockLaterRQ is find_lock_later_rq(): find a CPU for t (its
// execution context's mask decides, find_exec_ctx) and lock it; nil if
// none. On success both rq locks are held.
func (m *Machine) findLockLaterRQ(c *percpu.Ctx, t *task.Task, r *rq.RQ) *rq.RQ {
	for tries := 0; tries < dlMaxTries; tries++ {
		if t.CPU() != r.CPU || !t.Queued() {
			return nil // moved while a previous try dropped our lock
		}
		exec, _ := findExecCtx(c, r, t)
		if exec == nil {
			return nil
		}
		cpu := m.findLaterRQ(c, t, exec)
		if cpu == -1 || cpu == r.CPU {
			return nil
		}
		later := m.rqs[cpu]
		if !dlTaskIsEarliestDeadline(t, later) {
			return nil
		}
		if rq.DoubleLockBalance(c, r, later) {
			if !dlRevalidateRQState(c, t, r, later) {
				rq.DoubleUnlockBalance(c, r, later)
				c.Inc(stats.LockJugglingRetries)
				return nil
			}
		}
		if dlTaskIsEarliestDeadline(t, later) {
			return later
		}
		rq.DoubleUnlockBalance(c, r, later)
	}
	return nil
}

// pushDLTask is push_dl_task(): send the earliest pushable DL task (and
// what task_is_pushable moves with it) to a CPU running a later deadline.
// r is locked. It reports whether it moved something.
func (m *Machine) pushDLTask(c *percpu.Ctx, r *rq.RQ) bool {
	next := pickNextPushableDLTask(c, r)
	if next == nil {
		return false
	}
	d := r.Donor(c)
	if d.DLTask() && rq.DLTimeBefore(next.SE.DL.Deadline, d.SE.DL.Deadline) && r.Curr().NrCPUsAllowed > 1 {
		r.ReschedCurr(c) // next preempts here; the current can move away
		return false
	}
	later := m.findLockLaterRQ(c, next, r)
	if later == nil {
		return false
	}
	ok, chain := taskIsPushable(c, r, next, later.CPU)
	if ok != pushable {
		rq.DoubleUnlockBalance(c, r, later)
		c.Inc(stats.LockJugglingRetries)
		return false
	}
	moveChain(c, r, later, chain)
	later.ReschedCurr(c)
	rq.DoubleUnlockBalance(c, r, later)
	c.Inc(stats.DLPushes)
	return true
}

// pushDLTasks is push_dl_tasks(): push while something moves (bounded:
// each push takes a task away, but the model bounds it anyway).
func (m *Machine) pushDLTasks(c *percpu.Ctx, r *rq.RQ) {
	for i := 0; i < 64 && m.pushDLTask(c, r); i++ {
	}
}

// pullDLTask is pull_dl_task(), run as a balance callback with this rq
// locked: from every DL-overloaded runqueue, take the earliest pushable
// task that would run here at once, unless it is about to preempt its
// own runqueue's donor.
func (m *Machine) pullDLTask(c *percpu.Ctx, this *rq.RQ) {
	if m.dlo.Load() == 0 {
		return
	}
	n := len(m.rqs)
	start := int(c.Rand.IntN(n))
	dmin := int64(1<<63 - 1)
	resched := false
	for i := 0; i < n; i++ {
		src := m.rqs[(start+i)%n]
		if src == this || src.NrDL() < 2 {
			continue
		}
		rq.DoubleLockBalance(c, this, src)
		if src.NrDL() > 1 {
			p, chain := pickEarliestPushableDLTask(c, src, this.CPU)
			if p != nil && rq.DLTimeBefore(p.SE.DL.Deadline, dmin) && dlTaskIsEarliestDeadline(p, this) &&
				!rq.DLTimeBefore(p.SE.DL.Deadline, src.Donor(c).SE.DL.Deadline) {
				moveChain(c, src, this, chain)
				dmin = p.SE.DL.Deadline
				resched = true
				c.Inc(stats.DLPulls)
			}
		}
		rq.DoubleUnlockBalance(c, this, src)
	}
	if resched {
		this.ReschedCurr(c)
	}
}

// taskWokenDL is task_woken_dl(), after a wakeup enqueued p on r (rq
// lock held): if p will not run soon here (r runs a DL donor that p does
// not preempt, or whose execution context cannot move), push now.
func (m *Machine) taskWokenDL(c *percpu.Ctx, r *rq.RQ, p *task.Task) {
	if !p.DLTask() || p.OnCPU() || r.NeedResched() || p.NrCPUsAllowed < 2 {
		return
	}
	d := r.Donor(c)
	if d.DLTask() && (r.Curr().NrCPUsAllowed < 2 || !rq.DLTimeBefore(p.SE.DL.Deadline, d.SE.DL.Deadline)) {
		m.pushDLTasks(c, r)
	}
}

// selectTaskRQDL is select_task_rq_dl() for a wakeup: stay on prev unless
// prev runs a DL donor that p would not preempt, in which case a CPU
// find_later_rq offers where p would be the earliest deadline. The
// donor's deadline is read as prev's cpudl entry (its earliest queued
// deadline: the running DL task stays in the tree) because the model's
// rq->donor is a plain field of the rq lock; the kernel also tests
// whether curr may move, which the model leaves out for the same reason.
func (m *Machine) selectTaskRQDL(c *percpu.Ctx, p *task.Task, prev int) int {
	r := m.rqs[prev]
	if r.CurrPrio() != task.DLPrio || p.NrCPUsAllowed < 2 || rq.DLTimeBefore(p.SE.DL.Deadline, r.EarliestDL()) {
		return prev
	}
	if t := m.findLaterRQ(c, p, p); t != -1 && dlTaskIsEarliestDeadline(p, m.rqs[t]) {
		return t
	}
	return prev
}

// checkDLBudget is invariant 54 at the tick, after update_curr (rq lock
// held): a DL donor still in the dl tree has budget left. update_curr_dl
// throttles the moment runtime reaches 0, so a donor found at or below 0
// here ran past its budget unthrottled.
func (cp *CPU) checkDLBudget() {
	c, r := cp.c, cp.rq
	d := r.Donor(c)
	if d == r.Idle || !d.DLTask() || !d.SE.DL.OnDLRQ || d.SE.DL.Runtime > 0 {
		return
	}
	cp.m.Report(c, check.InvDLBudget, d, fmt.Sprintf("DL donor %v on cpu%d has runtime %d ns left (deadline %d, rq clock %d) and is neither throttled nor replenished", d, r.CPU, d.SE.DL.Runtime, d.SE.DL.Deadline, r.Clock))
}

// checkThrottledPick is invariant 64 after pick_next_task (rq lock
// held), for a pick that becomes rq->donor: it is never a throttled
// SCHED_DEADLINE task. Every class pick reads the dl tree, which a
// throttled task has left; only a stale core_pick taken by the core fast
// path can return one (finding F17). A throttled task may still execute
// as a proxy (the owner a retained donor's re-pick returns).
func (cp *CPU) checkThrottledPick(next *task.Task) {
	r := cp.rq
	if next == r.Idle || !next.DLTask() || !next.SE.DL.Throttled || next.SE.DL.OnDLRQ {
		return
	}
	where := "pick_next_task"
	if r.CoreEnabled() {
		where = "the core pick (a sibling's core_pick taken by the fast path: throttling moves no core_task_seq)"
	}
	cp.m.Report(cp.c, check.InvDLThrottledPick, next, fmt.Sprintf("%s on cpu%d returned %v, a throttled SCHED_DEADLINE task (runtime %d ns, off the dl tree, dl_timer armed=%v): its proxy would run on a context with no budget, uncharged, until the replenishment", where, r.CPU, next, next.SE.DL.Runtime, next.SE.DL.TimerQueued))
}

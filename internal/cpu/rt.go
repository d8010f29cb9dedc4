// This file mirrors kernel/sched/rt.c: push_rt_tasks(), pull_rt_task(), with the full
// series' chain-level pushability (find_exec_ctx, task_is_pushable).

package cpu

import (
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/proxy"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// RT push and pull (kernel/sched/rt.c), proxy-aware (the full series' chain-level balancing):
// never pushed or pulled are the running task, the donor, anything
// on_cpu, and (as a single task) a mutex-blocked donor; with proxy
// execution on, a blocked donor's whole queued chain may move when its
// execution context may run on the destination (the full series'
// chain-level balancing). With proxy execution off this is exactly the
// classic rule: not running and allowed on the destination.

// queueRTBalance queues push_rt_tasks when the pick leaves RT tasks
// waiting here, and pull_rt_task when this CPU's priority drops from RT
// (prev was RT, next is not: need_pull_rt_task) while other runqueues are
// RT-overloaded (queue_balance_callback).
func (cp *CPU) queueRTBalance(prev, next *task.Task) {
	c, r := cp.c, cp.rq
	if cp.balancePush {
		// queue_balance_callback() queues nothing while balance_push is
		// installed (the CPU is going down, or not up yet).
		return
	}
	if next.RT() {
		if r.NrRT() >= 2 {
			r.QueueBalanceCallback(c, rq.BalanceCallback{Name: "push_rt_tasks", Fn: cp.m.pushRTTasks})
		}
		return
	}
	if prev.RT() && cp.m.rto.Load() > 0 {
		r.QueueBalanceCallback(c, rq.BalanceCallback{Name: "pull_rt_task", Fn: cp.m.pullRTTask})
	}
}

// pushability results (task_is_pushable).
const (
	notPushable = 0
	pushable    = 1
	execForbids = -1 // pushable chain, but its execution context may not run there
)

// findExecCtx is find_exec_ctx(): follow p's blocked_on chain while the
// link is blocked and not on a CPU (a link still on_cpu ends the walk: it
// is the execution context). It returns the execution context, or nil
// when the chain leaves this runqueue (an owner not queued here, or
// queued here as rq->donor), plus the links walked (p first, the
// execution context included; the donor that ends a walk is not).
func findExecCtx(c *percpu.Ctx, r *rq.RQ, p *task.Task) (*task.Task, []*task.Task) {
	chain := []*task.Task{p}
	t := p
	for i := 0; i < proxy.MaxChain; i++ {
		if !proxy.TaskIsBlocked(c, t) || t.OnCPU() {
			return t, chain
		}
		t.BlockedLock.Lock(c.CPU)
		m := t.BlockedOn(c.CPU)
		t.BlockedLock.Unlock(c.CPU)
		if m == nil {
			return t, chain
		}
		o := m.OwnerTask()
		if o == nil || o == t {
			// The lock is free or being handed to t: t itself is the
			// execution context (its mask decides), as in find_exec_ctx.
			return t, chain
		}
		if !o.Queued() || o.CPU() != r.CPU || o == r.Donor(c) {
			return nil, chain
		}
		t = o
		chain = append(chain, t)
	}
	return nil, chain
}

// taskIsPushable is task_is_pushable(): may p (queued on r) move to cpu?
// It returns the tasks to move with it (move_queued_task_locked's walk:
// p and the links after it, up to the execution context or to where the
// chain leaves the runqueue). The callers' candidates stand in for the
// pushable lists, which hold neither rq->curr (proxy_tag_curr) nor
// rq->donor (set_next_task): those are never pushable here.
func taskIsPushable(c *percpu.Ctx, r *rq.RQ, p *task.Task, cpu int) (int, []*task.Task) {
	if p == r.Curr() || p == r.Donor(c) {
		return notPushable, nil
	}
	if !c.Proxy {
		// __task_is_pushable.
		if p.OnCPU() {
			return notPushable, nil
		}
		if p.CPUsMask.Has(cpu) {
			return pushable, []*task.Task{p}
		}
		return execForbids, nil
	}
	if p.CPU() != r.CPU || !p.Queued() {
		return notPushable, nil
	}
	exec, chain := findExecCtx(c, r, p)
	if exec == nil {
		// The chain leaves this runqueue: the queued links can go.
		return pushable, chain
	}
	if exec.OnCPU() || exec.NrCPUsAllowed <= 1 {
		return notPushable, nil
	}
	if exec.CPUsMask.Has(cpu) {
		return pushable, chain
	}
	return execForbids, nil
}

// moveChain moves tasks from src to dst; both rq locks are held
// (move_queued_task_locked). Blocked links keep their home CPU, as in a
// proxy migration; the execution context goes home to dst.
func moveChain(c *percpu.Ctx, src, dst *rq.RQ, tasks []*task.Task) {
	moveChainTasks(c, src, dst, tasks)
	dst.CheckPreemptCurr(c, tasks[0])
}

// moveChainTasks is moveChain without the preempt check on dst.
func moveChainTasks(c *percpu.Ctx, src, dst *rq.RQ, tasks []*task.Task) {
	for i, t := range tasks {
		blocked := proxy.TaskIsBlocked(c, t)
		src.DeactivateTask(c, t, rq.DequeueMigrating)
		why := trace.ReasonLoadBalance
		if i > 0 {
			why = trace.ReasonChain
		}
		rq.SetTaskCPU(c, t, dst.CPU, blocked, why)
		dst.ActivateTask(c, t, rq.EnqueueMigrated)
	}
}

// rtCandidates lists r's pushable RT tasks best first: the queued RT
// tasks that are not task_is_blocked (rt.c never puts a blocked task on
// the pushable list, in enqueue_task_rt or put_prev_task_rt; the model
// reads the test now instead of at enqueue time).
func rtCandidates(c *percpu.Ctx, r *rq.RQ) []*task.Task {
	var out []*task.Task
	for _, t := range r.Tasks() {
		if t.RT() && t.PinnedCPU < 0 && !proxy.TaskIsBlocked(c, t) {
			out = append(out, t)
		}
	}
	for i := 1; i < len(out); i++ { // insertion sort by prio: short lists
		for j := i; j > 0 && out[j].SE.Prio < out[j-1].SE.Prio; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// findLowestRQ is find_lowest_rq(): among the CPUs of mask other than
// from whose current priority is lower than prio (cpupri's lowest_mask:
// those at the lowest level found), the first in the smallest of from's
// domains that holds one. -1 if none.
func (m *Machine) findLowestRQ(from int, mask *task.Mask, prio int) int {
	worst := prio
	for cpu := mask.Next(0); cpu >= 0; cpu = mask.Next(cpu + 1) {
		if cpu == from || !m.cpuActive(cpu) {
			continue // cpupri covers the root domain's online runqueues
		}
		if pr := m.rqs[cpu].CurrPrio(); pr > worst {
			worst = pr
		}
	}
	if worst == prio {
		return -1
	}
	for _, span := range m.spans(from) {
		for _, cpu := range span {
			if cpu != from && mask.Has(cpu) && m.cpuActive(cpu) && m.rqs[cpu].CurrPrio() == worst {
				return cpu
			}
		}
	}
	return -1
}

// rtRevalidateRQState is rt_revalidate_rq_state(), find_lock_lowest_rq's
// check after double_lock_balance dropped our lock: p is still an RT
// task on this runqueue's pushable list (so not task_is_blocked: a task
// that blocked and came back by proxy migration while the lock was
// dropped is a chain link now, never a push candidate), still queued
// here, not migrate-disabled, and still allowed on the target.
// Without it, the chain behind such a task moves, and with it an owner
// that is migrate-disabled (invariant 49).
func rtRevalidateRQState(c *percpu.Ctx, p *task.Task, r, lowest *rq.RQ) bool {
	if p.CPU() != r.CPU || !p.Queued() {
		// It left while our lock was dropped: its class and mask are
		// another runqueue's now. (The series tests rt_task() first, a
		// lockless read of p->prio; like dlRevalidateRQState, the model
		// tests where p is first, as mainline's find_lock_lowest_rq does.)
		return false
	}
	if !p.RT() || p.OnCPU() || p == r.Curr() || p == r.Donor(c) {
		return false
	}
	if p.MigrationDisabled > 0 || !p.CPUsMask.Has(lowest.CPU) {
		return false
	}
	for _, t := range rtCandidates(c, r) {
		if t == p {
			return true
		}
	}
	return false
}

// pushRTTasks is push_rt_tasks(), run as a balance callback with r
// locked: move a waiting RT task (or chain) to a CPU running something of
// lower priority.
func (m *Machine) pushRTTasks(c *percpu.Ctx, r *rq.RQ) {
	for _, p := range rtCandidates(c, r) {
		if p == r.Curr() || p == r.Donor(c) {
			continue
		}
		// find_lowest_rq: the allowed CPUs running the lowest priority,
		// the one in the closest domain first.
		mask := p.CPUsMask
		if exec, _ := findExecCtx(c, r, p); c.Proxy && exec != nil && exec != p {
			mask = exec.CPUsMask // the execution context must be allowed there
		}
		target := m.findLowestRQ(r.CPU, &mask, p.SE.Prio)
		if target < 0 {
			continue
		}
		if ok, _ := taskIsPushable(c, r, p, target); ok != pushable {
			continue
		}
		tr := m.rqs[target]
		// double_lock_balance may drop ours to take both in order:
		// recheck either way.
		var ok int
		var chain []*task.Task
		if !rq.DoubleLockBalance(c, r, tr) || rtRevalidateRQState(c, p, r, tr) {
			ok, chain = taskIsPushable(c, r, p, target)
		}
		if ok == pushable && tr.CurrPrio() > p.SE.Prio {
			if mutantPushNoResched() {
				moveChainTasks(c, r, tr, chain)
			} else {
				moveChain(c, r, tr, chain)
			}
			c.Inc(stats.RTPushes)
		} else {
			c.Inc(stats.LockJugglingRetries) // things changed while the lock was dropped
		}
		rq.DoubleUnlockBalance(c, r, tr)
		return
	}
}

// pullRTTask is pull_rt_task(), run as a balance callback with r locked
// after this CPU picked something below RT: take the best pushable RT
// task (or chain) from an RT-overloaded runqueue whose priority beats
// ours.
func (m *Machine) pullRTTask(c *percpu.Ctx, r *rq.RQ) {
	if !m.cpuActive(r.CPU) {
		return // rq_offline_rt: not in the root domain any more
	}
	// The root domain's rto_mask: every RT-overloaded runqueue.
	n := len(m.rqs)
	start := int(c.Rand.IntN(n))
	m.rtoMask.ForEach(start, n, func(cpu int) bool {
		src := m.rqs[cpu]
		if src == r || src.NrRT() < 2 {
			return true
		}
		rq.DoubleLockBalance(c, r, src)
		pulled := false
		for _, p := range rtCandidates(c, src) {
			if p.SE.Prio >= r.Donor(c).SE.Prio {
				break
			}
			if ok, chain := taskIsPushable(c, src, p, r.CPU); ok == pushable {
				moveChain(c, src, r, chain)
				c.Inc(stats.RTPulls)
				pulled = true
				break
			}
		}
		rq.DoubleUnlockBalance(c, r, src)
		if pulled {
			r.SetNeedResched()
			return false
		}
		return true
	})
}

// This file mirrors kernel/sched/fair.c load balancing: can_migrate_task(),
// find_busiest_queue(), sched_balance_newidle(), the periodic and nohz
// idle balance.

package cpu

import (
	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/proxy"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// movable is can_migrate_task() for pulling t from src to dst (src lock
// held): queued, not executing, not the donor, allowed on dst, not
// delayed (sched_delayed), not mutex-blocked (blocked tasks move only by
// proxy migration).
func (cp *CPU) movable(src *rq.RQ, t *task.Task, dst int) bool {
	c := cp.c
	if t == src.Curr() || t == src.Donor(c) || t.OnCPU() || !t.Queued() || t.MigrationReady {
		return false
	}
	if t.DLTask() {
		return false // DL tasks move by push and pull only (load_balance detaches CFS tasks)
	}
	if !t.AllowedOn(dst) || !cp.m.cpuActive(dst) {
		return false
	}
	if t.SE.Delayed {
		// can_migrate_task(): a delayed task moves only when the
		// balancer migrates load; the model's balancer moves tasks
		// (migrate_task), so never.
		return false
	}
	return !proxy.TaskIsBlocked(c, t)
}

// nrMigrate is sysctl_sched_nr_migrate: detach_tasks() examines at most
// this many tasks of the busiest runqueue (env->loop_max) per attempt.
const nrMigrate = 32

// pullFrom moves the best movable task from src to this CPU, examining
// at most nrMigrate tasks with can_migrate_task() as detach_tasks() does.
// Both rq locks are held.
//
// Without the bound a runqueue full of blocked donors (proxy migration
// gathers a contended mutex's waiters on its owner's CPU) was walked
// whole, a blocked_lock per donor, by every CPU going idle: about 72 tasks
// per attempt, 99% of attempts finding nothing, 40% of the run's CPU time
// (docs/architecture.md, "Cost of a simulated switch").
func (cp *CPU) pullFrom(src *rq.RQ) *task.Task {
	c, r := cp.c, cp.rq
	examined := 0
	t := src.PickBest(func(t *task.Task) bool {
		if examined == nrMigrate {
			return false
		}
		examined++
		return cp.movable(src, t, r.CPU)
	})
	if t == nil {
		return nil
	}
	if t.IsBlocked() && src.Curr() != src.Donor(c) && !c.Bug(bugs.ProxyKeepsDonor) {
		// A sleeping link whose blocked_on was cleared (a ww wound, its
		// wake-up still on a wake_q) may be a link of the chain src's
		// proxy runs for: finding F2's fix reschedules src, whose chain
		// this move breaks (the kernel's detach_task does not).
		src.ReschedCurr(c)
	}
	src.DeactivateTask(c, t, rq.DequeueMigrating)
	rq.SetTaskCPU(c, t, r.CPU, false, trace.ReasonLoadBalance)
	r.ActivateTask(c, t, rq.EnqueueMigrated)
	c.Emit(trace.EvLoadBalance, int32(t.ID), int32(src.CPU), int32(r.CPU), 0)
	return t
}

// spans returns the CPU spans cpu balances and places over, smallest
// first: its scheduling domains (SMT, LLC, PKG, machine; degenerate levels
// dropped), then the whole machine if no domain covers it. Built once.
func (m *Machine) spans(cpu int) [][]int { return m.domainSpans[cpu] }

// buildSpans fills m.domainSpans from the topology.
func (m *Machine) buildSpans() {
	all := make([]int, len(m.rqs))
	for i := range all {
		all[i] = i
	}
	m.domainSpans = make([][][]int, len(m.rqs))
	for cpu := range m.rqs {
		ds := m.topo.Domains(cpu)
		out := make([][]int, 0, len(ds)+1)
		for _, d := range ds {
			out = append(out, d.CPUs)
		}
		if len(out) == 0 || len(out[len(out)-1]) < len(m.rqs) {
			out = append(out, all)
		}
		m.domainSpans[cpu] = out
	}
}

// findBusiest is find_busiest_queue() over one domain's span: the
// runqueue other than ours with the most queued tasks, at least min. The
// scan starts at a random place in the span so that CPUs of one domain do
// not all pick the same victim.
func (cp *CPU) findBusiest(span []int, min int) *rq.RQ {
	m := cp.m
	n := len(span)
	start := int(cp.c.Rand.IntN(n))
	var best *rq.RQ
	bestN := min - 1
	// span[start:] then span[:start]: the same order as indexing
	// (start+i)%n, without a division per CPU scanned.
	for _, part := range [2][]int{span[start:], span[:start]} {
		for _, cpu := range part {
			o := m.rqs[cpu]
			if o == cp.rq || !m.cpuActive(cpu) {
				// An inactive CPU left the scheduling domains
				// (cpuset_cpu_inactive rebuilds them without it).
				continue
			}
			if nr := o.NrRunning(); nr > bestN {
				best, bestN = o, nr
			}
		}
	}
	return best
}

// newidleBalance is sched_balance_newidle(): called from __schedule with
// this rq locked and nothing to run. It walks the domains from the
// smallest (SMT, then the LLC, then the socket, then the machine) and
// stops at the first that yields a task. For each candidate it drops the
// lock (prev stays curr and on_cpu, so it is pinned), pulls one task from
// the busiest runqueue under double_rq_lock, and keeps this rq's lock.
// Returns true if it pulled or something arrived meanwhile.
func (cp *CPU) newidleBalance() bool {
	c, r := cp.c, cp.rq
	c.Inc(stats.NewidleBalances)
	if !cp.m.cpuActive(cp.id) {
		return false // no sched domain while going down
	}
	if cp.m.cfg.NewidleCost > 0 {
		// the balancing time is charged to nobody, also by the
		// update_curr of a pulled task's enqueue (EEVDF placement)
		r.BeginUncharged(c)
		defer r.EndUncharged(c)
	}
	if cp.m.srq != nil {
		if done, pulled := cp.srqNewidle(); done {
			return pulled
		}
		defer func() {
			if r.NrRunning() > 0 {
				r.IdleStamp = 0
			}
		}()
	}
	for i, span := range cp.m.spans(cp.id) {
		if cp.srqSkipSpan(i) {
			continue
		}
		c.Now += cp.m.cfg.NewidleCost
		c.Inc(stats.NewidleDomains)
		busiest := cp.findBusiest(span, 2)
		if busiest == nil {
			continue
		}
		r.Unlock(c)
		rq.DoubleLock(c, r, busiest)
		t := cp.pullFrom(busiest)
		if t == nil {
			// The busiest runqueue changed while our lock was dropped.
			c.Inc(stats.LockJugglingRetries)
		} else {
			c.Inc(stats.NewidlePulls)
		}
		rq.DoubleUnlockBalance(c, r, busiest) // a sibling sharing the core lock: keep it
		if t != nil || r.NrRunning() > 0 {
			return true
		}
	}
	return false
}

// idleBalance pulls work into an idle CPU (kicked by a busy one), from
// the smallest domain that has a runqueue to pull from.
func (cp *CPU) idleBalance() {
	c, r := cp.c, cp.rq
	if !cp.m.cpuActive(cp.id) {
		return
	}
	for _, span := range cp.m.spans(cp.id) {
		busiest := cp.findBusiest(span, 2)
		if busiest == nil {
			continue
		}
		c.IrqDisable() // sched_balance_rq: rq_lock_irqsave(busiest)
		rq.DoubleLock(c, r, busiest)
		t := cp.pullFrom(busiest)
		rq.DoubleUnlock(c, r, busiest)
		c.IrqEnable()
		if t != nil {
			r.SetNeedResched()
			return
		}
	}
}

// periodicBalance is the tick's sched_balance_trigger: pull from a
// clearly busier CPU of the smallest domain that has one, or kick an
// idle CPU (the nearest first) to pull from us (nohz).
func (cp *CPU) periodicBalance(nr int) {
	c, r, m := cp.c, cp.rq, cp.m
	if !m.cpuActive(cp.id) {
		return
	}
	spans := m.spans(cp.id)
	if m.srq != nil && cp.id == 0 {
		// The top domain's balance recomputes rd->overload
		// (update_sd_lb_stats: set_rd_overloaded(rd, sg_overloaded));
		// the first CPU stands for that domain's balancing CPU.
		over := false
		for _, o := range m.rqs {
			if o.NrRunning() >= 2 {
				over = true
				break
			}
		}
		m.srq.cfg.Overload.Store(over)
	}
	for _, span := range spans {
		busiest := cp.findBusiest(span, nr+2)
		if busiest == nil {
			continue
		}
		c.IrqDisable() // sched_balance_rq: rq_lock_irqsave(busiest)
		rq.DoubleLock(c, r, busiest)
		if busiest.NrRunning() >= r.NrRunning()+2 {
			cp.pullFrom(busiest)
		}
		rq.DoubleUnlock(c, r, busiest)
		c.IrqEnable()
		break
	}
	if nr < 2 {
		return
	}
	for _, span := range spans {
		n := len(span)
		start := int(c.Rand.IntN(n))
		for i := 0; i < n; i++ {
			o := m.rqs[span[(start+i)%n]]
			if o != r && o.IsIdle() && m.cpuActive(o.CPU) {
				m.sendIPI(c, o.CPU, ipiBalance)
				return
			}
		}
	}
}

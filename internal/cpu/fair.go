// This file mirrors kernel/sched/fair.c load balancing: can_migrate_task(),
// find_busiest_queue(), sched_balance_newidle(), the periodic and nohz
// idle balance.

package cpu

import (
	"github.com/proxysim/proxysim/internal/proxy"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

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
	c.Inc(stats.MigrationsLoadBalance)
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
	r.Unlock(c)
	rq.DoubleLock(c, r, busiest)
	t := cp.pullFrom(busiest)
	if t == nil {
		// The busiest runqueue changed while our lock was dropped.
		c.Inc(stats.LockJugglingRetries)
	}
	busiest.Unlock(c)
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

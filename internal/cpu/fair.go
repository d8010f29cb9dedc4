// This file mirrors kernel/sched/fair.c load balancing: can_migrate_task(),
// find_busiest_queue(), sched_balance_newidle(), the periodic and nohz
// idle balance.

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

// movable is can_migrate_task() for pulling t from src to dst (src lock
// held): queued, not executing, not the donor, allowed on dst, not
// delayed (sched_delayed), not mutex-blocked (blocked tasks move only by
// proxy migration).
func (cp *CPU) movable(src *rq.RQ, t *task.Task, dst int) bool {
	c := cp.c
	if t == src.Curr() || t == src.Donor(c) || t.OnCPU() || !t.Queued() {
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
// at most nrMigrate tasks with can_migrate_task() as detach_tasks() does,
// and says how many it examined. Both rq locks are held.
//
// Without the bound a runqueue full of blocked donors (proxy migration
// gathers a contended mutex's waiters on its owner's CPU) was walked
// whole, a blocked_lock per donor, by every CPU going idle: about 72 tasks
// per attempt, 99% of attempts finding nothing, 40% of the run's CPU time
// (docs/architecture.md, "Cost of a simulated switch").
func (cp *CPU) pullFrom(src *rq.RQ) (*task.Task, int) {
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
		return nil, examined
	}
	reschedBrokenChain(c, src, t)
	src.DeactivateTask(c, t, rq.DequeueMigrating)
	rq.SetTaskCPU(c, t, r.CPU, false, trace.ReasonLoadBalance)
	r.ActivateTask(c, t, rq.EnqueueMigrated)
	c.Emit(trace.EvLoadBalance, int32(t.ID), int32(src.CPU), int32(r.CPU), 0)
	return t, examined
}

// reschedBrokenChain is finding F2's fix for a balancer taking t off src
// (the load balancer's detach_task, core scheduling's try_steal_cookie):
// a sleeping link whose blocked_on was cleared (a ww wound, its wake-up
// still on a wake_q) is movable, and may be a link of the chain src's
// proxy runs for; the move breaks that chain, so src reschedules. The
// kernel's paths do not (--bug proxy-keeps-donor). src's lock held.
func reschedBrokenChain(c *percpu.Ctx, src *rq.RQ, t *task.Task) {
	if t.IsBlocked() && src.Curr() != src.Donor(c) && !c.Bug(bugs.ProxyKeepsDonor) {
		src.ReschedCurr(c)
	}
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
// not all pick the same victim. over is update_sg_lb_stats()'
// sg_overloaded: some active runqueue of the span, ours included, has
// more than one task.
func (cp *CPU) findBusiest(span []int, min int) (busiest *rq.RQ, over bool) {
	m := cp.m
	n := len(span)
	start := int(cp.c.Rand.IntN(n))
	bestN := min - 1
	// span[start:] then span[:start]: the same order as indexing
	// (start+i)%n, without a division per CPU scanned.
	for _, part := range [2][]int{span[start:], span[:start]} {
		for _, cpu := range part {
			if !m.cpuActive(cpu) {
				// An inactive CPU left the scheduling domains
				// (cpuset_cpu_inactive rebuilds them without it).
				continue
			}
			// m.rqs[cpu].NrRunning(), read from the dense array: the top
			// domain of a big machine makes this the model's longest loop.
			nr := int(peekNrRunning(m.nrRunning, cpu))
			if nr > 1 {
				over = true
			}
			if cpu != cp.id && nr > bestN {
				busiest, bestN = m.rqs[cpu], nr
			}
		}
	}
	return busiest, over
}

// peekNrRunning reads cpu's rq->nr_running as update_sg_lb_stats() does:
// a plain load, with no ordering against the runqueue's owner. An atomic
// load would give the race detector a happens-before edge from every CPU
// the scan reads (the last add to its count, made under its rq lock) to
// the scanning CPU, which the kernel's load does not give, and such edges
// hide races (peekClock, F4 in docs/findings.md); under -race it also cost
// a synchronising operation per CPU scanned. The count is a word written
// with atomic adds; the scan only chooses whom to lock.
//
//go:norace
func peekNrRunning(nrs []int32, cpu int) int32 { return nrs[cpu] }

// migrationCost is sysctl_sched_migration_cost (500 us): rq->avg_idle
// starts at twice it and rq->max_idle_balance_cost at it (sched_init),
// and update_newidle_cost caps a domain's cost a little above it.
const migrationCost = 500_000

// The model's default costs of newidle balancing (Config.NewidleCost,
// NewidleCPUCost, NewidleTaskCost). Chosen, not measured: a domain's
// sched_balance_rq costs about 0.5 us of fixed work (should_we_balance,
// the group set-up, calculate_imbalance), update_sg_lb_stats reads a few
// cache lines of every runqueue of the span (cpu_load, util, runnable,
// nr_running, idle_cpu), a miss or so each on another core or socket,
// taken as 50 ns, and can_migrate_task looks at a cache-cold task_struct,
// taken as 100 ns. The top domain of the default 256-CPU machine then
// costs about 13 us, the LLC's 1.3 us: the order of the
// max_newidle_lb_cost a large two-socket server shows, not a figure of
// any one machine.
const (
	DefaultNewidleCost     = 500
	DefaultNewidleCPUCost  = 50
	DefaultNewidleTaskCost = 100
)

// sdNewidle is one sched_domain's part of newidle's bookkeeping:
// sd->max_newidle_lb_cost and sd->last_decay_max_lb_cost (virtual ns;
// the kernel keeps jiffies). sched_domain's initial values are 0 (the
// domains are built zeroed; topology.c is not stored for the reference,
// docs/kernel-map.md).
type sdNewidle struct {
	maxCost   int64
	lastDecay int64
}

// newidleCharged says whether newidle balancing costs virtual time.
func (m *Machine) newidleCharged() bool {
	return m.cfg.NewidleCost > 0 || m.cfg.NewidleCPUCost > 0 || m.cfg.NewidleTaskCost > 0
}

// updateNewidleCost is update_newidle_cost(): a cost above the domain's
// maximum raises it (capped at sysctl_sched_migration_cost + 200 ns, the
// kernel's guard against the failure bump growing without bound);
// otherwise the maximum decays by 253/256 once a second. Returns true when
// it decayed.
func (cp *CPU) updateNewidleCost(sd *sdNewidle, cost int64) bool {
	now := cp.c.Now
	if cost > sd.maxCost {
		sd.maxCost = min(cost, migrationCost+200)
		sd.lastDecay = now
	} else if now > sd.lastDecay+1_000_000_000 {
		sd.maxCost = sd.maxCost * 253 / 256
		sd.lastDecay = now
		return true
	}
	return false
}

// decayNewidleCosts is sched_balance_domains()' regular visit of every
// domain: each domain's maximum decays (update_newidle_cost(sd, 0)) and,
// when the last one decayed, rq->max_idle_balance_cost is refreshed from
// their sum, floored at sysctl_sched_migration_cost. No rq lock (the
// balance softirq).
func (cp *CPU) decayNewidleCosts() {
	var sum int64
	decayed := false
	for i := range cp.sd {
		decayed = cp.updateNewidleCost(&cp.sd[i], 0)
		sum += cp.sd[i].maxCost
	}
	if decayed {
		cp.rq.MaxIdleBalanceCost.Store(max(migrationCost, sum))
	}
}

// updateAvgIdle is ttwu_do_activate()'s rq->avg_idle update: a wake-up
// onto a runqueue that newidle balance stamped ends an idle period, which
// moves the average an eighth of the way (update_avg), capped at twice
// rq->max_idle_balance_cost. The rq lock is held; now is the waker's
// clock (a remote waker does not advance the rq clock), and an idle
// period that by the waker's clock has not started yet counts as 0 (the
// kernel's rq clock does not go back).
func updateAvgIdle(r *rq.RQ, now int64) {
	if r.IdleStamp == 0 {
		return
	}
	delta := max(now-r.IdleStamp, 0)
	r.AvgIdle += (delta - r.AvgIdle) / 8
	if mx := 2 * r.MaxIdleBalanceCost.Load(); r.AvgIdle > mx {
		r.AvgIdle = mx
	}
	r.IdleStamp = 0
}

// newidleBalance is sched_balance_newidle(): called from __schedule with
// this rq locked and nothing to run. It gives up at once when a wake-up
// is queued for this CPU (ttwu_pending), when no runqueue of the root
// domain has a task waiting (rd->overloaded clear), or when this CPU's
// idle periods are on average shorter than balancing its smallest domain
// costs (avg_idle < that domain's max_newidle_lb_cost). Otherwise it
// walks the domains from the smallest (SMT, then the LLC, then the
// socket, then the machine) while the average idle period covers what
// the walk has cost so far plus the next domain's maximum, and stops at
// the first that yields a task. Each domain's cost (virtual time, charged
// to nobody: the CPU is in the scheduler) raises its maximum; a domain
// that yields nothing is charged half its maximum again (the reference's
// bump: failing newidle is made to look dearer, so that it runs less).
// For each candidate it drops the lock (prev stays curr and on_cpu, so it
// is pinned), pulls one task from the busiest runqueue under
// double_rq_lock, and keeps this rq's lock. Returns true if it pulled or
// something arrived meanwhile.
func (cp *CPU) newidleBalance() bool {
	c, r, m := cp.c, cp.rq, cp.m
	c.Inc(stats.NewidleBalances)
	if cp.wakeList.Load() != nil {
		// this_rq->ttwu_pending: the wake-up is enqueued when this CPU
		// switches to idle and takes the IPI.
		c.Inc(stats.NewidleCutTTWUPending)
		return false
	}
	r.IdleStamp = c.Now // measured as idle time from here
	if !m.cpuActive(cp.id) {
		return false // no sched domain while going down
	}
	if m.newidleCharged() {
		// the balancing time is charged to nobody, also by the
		// update_curr of a pulled task's enqueue (EEVDF placement)
		r.BeginUncharged(c)
		defer r.EndUncharged(c)
	}
	if m.srq != nil {
		if done, pulled := cp.srqNewidle(); done {
			return pulled
		}
	}
	if !m.rdOverloaded.Load() {
		c.Inc(stats.NewidleCutOverload)
		return false
	}
	if r.AvgIdle < cp.sd[0].maxCost {
		c.Inc(stats.NewidleCutAvgIdle)
		return false
	}
	spans := m.spans(cp.id)
	var currCost int64
	pulled := false
	for i, span := range spans {
		if cp.srqSkipSpan(i) {
			continue
		}
		sd := &cp.sd[i]
		if r.AvgIdle < currCost+sd.maxCost {
			c.Inc(stats.NewidleCutDomain)
			break
		}
		t0 := c.Now
		moved, more := cp.newidleBalanceDomain(span, i == len(spans)-1)
		cost := c.Now - t0
		currCost += cost
		if !moved {
			cost = 3 * sd.maxCost / 2
		}
		cp.updateNewidleCost(sd, cost)
		if moved || !more {
			pulled = moved
			break
		}
	}
	c.Add(stats.NewidleCostNs, uint64(currCost))
	if currCost > r.MaxIdleBalanceCost.Load() {
		r.MaxIdleBalanceCost.Store(currCost)
	}
	if pulled || r.NrRunning() > 0 {
		// a task pulled, or one that arrived while the lock was dropped
		r.IdleStamp = 0
		return true
	}
	return false
}

// newidleBalanceDomain is sched_balance_rq() for CPU_NEWLY_IDLE over one
// domain's span (top: the root domain's, with no parent): should_we_balance
// ends the walk if this runqueue has a task or a wake-up pending
// (continue_balancing = 0, more = false); find_busiest_group reads every
// runqueue of the span, and at the top domain recomputes rd->overloaded;
// then one task is pulled from the busiest runqueue. Virtual time is
// charged as Config.NewidleCost says. This rq's lock is held on entry and
// on return.
func (cp *CPU) newidleBalanceDomain(span []int, top bool) (moved, more bool) {
	c, r, m := cp.c, cp.rq, cp.m
	if r.NrRunning() > 0 || cp.wakeList.Load() != nil {
		return false, false
	}
	c.Inc(stats.NewidleDomains)
	c.Now += m.cfg.NewidleCost + m.cfg.NewidleCPUCost*int64(len(span))
	busiest, over := cp.findBusiest(span, 2)
	if top {
		m.setRDOverloaded(over)
	}
	if busiest == nil {
		return false, true
	}
	r.Unlock(c)
	rq.DoubleLock(c, r, busiest)
	t, examined := cp.pullFrom(busiest)
	c.Now += m.cfg.NewidleTaskCost * int64(examined)
	if t == nil {
		// The busiest runqueue changed while our lock was dropped.
		c.Inc(stats.LockJugglingRetries)
	} else {
		c.Inc(stats.NewidlePulls)
	}
	rq.DoubleUnlockBalance(c, r, busiest) // a sibling sharing the core lock: keep it
	return t != nil, true
}

// setRDOverloaded is update_sd_lb_stats()' set_rd_overloaded(rd,
// sg_overloaded) at the root domain: written only when it changes.
func (m *Machine) setRDOverloaded(over bool) {
	if m.rdOverloaded.Load() != over {
		m.rdOverloaded.Store(over)
	}
}

// idleBalance pulls work into an idle CPU (kicked by a busy one), from
// the smallest domain that has a runqueue to pull from. It is the nohz
// idle balancer's sched_balance_domains(rq, CPU_IDLE) for this CPU, so
// it also decays the CPU's newidle costs.
func (cp *CPU) idleBalance() {
	c, r := cp.c, cp.rq
	if !cp.m.cpuActive(cp.id) {
		return
	}
	cp.decayNewidleCosts()
	for _, span := range cp.m.spans(cp.id) {
		busiest, _ := cp.findBusiest(span, 2)
		if busiest == nil {
			continue
		}
		c.IrqDisable() // sched_balance_rq: rq_lock_irqsave(busiest)
		rq.DoubleLock(c, r, busiest)
		t, _ := cp.pullFrom(busiest)
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
// idle CPU (the nearest first) to pull from us (nohz). Like
// sched_balance_domains it decays this CPU's newidle costs first.
func (cp *CPU) periodicBalance(nr int) {
	c, r, m := cp.c, cp.rq, cp.m
	if !m.cpuActive(cp.id) {
		return
	}
	cp.decayNewidleCosts()
	spans := m.spans(cp.id)
	if cp.id == 0 {
		// The top domain's balance recomputes rd->overloaded
		// (update_sd_lb_stats: set_rd_overloaded(rd, sg_overloaded));
		// the first CPU stands for that domain's balancing CPU.
		over := false
		for cpu, o := range m.rqs {
			if o.NrRunning() > 1 && m.cpuActive(cpu) {
				over = true
				break
			}
		}
		m.setRDOverloaded(over)
	}
	for _, span := range spans {
		busiest, _ := cp.findBusiest(span, nr+2)
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

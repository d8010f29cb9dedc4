// This file mirrors the fair.c side of the SHARED_RUNQ series (David
// Vernet, v2-v4 2023, with K Prateek Nayak's bailouts):
// shared_runq_pick_next_task() and its place in newidle balance, the
// domain rebuild (update_domains_fair / shared_runq_reassign_domains),
// the feature toggle with its drain, and the audit of the shards. The
// shard list itself is internal/rq/srq.go.

package cpu

import (
	"fmt"
	"slices"
	"sync"

	"github.com/proxysim/proxysim/internal/percpu"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/proxy"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/topology"
	"github.com/proxysim/proxysim/internal/trace"
)

// SRQOptions configure SHARED_RUNQ (off unless Config.SRQ is set).
type SRQOptions struct {
	Enabled   bool          // sched_feat(SHARED_RUNQ) at boot
	Hooks     int           // rq.SRQHooksV2, V3 or V4 (0: V4, the last posted)
	ShardSize int           // CPUs per shard (SHARED_RUNQ_SHARD_SZ; v3: 6)
	Bailouts  rq.SRQBailout // Prateek's bailouts switched on
	// ToggleEvery is the stress injector's period (virtual ns of busy
	// time per CPU; 0: off): alternately a domain rebuild (shards
	// reassigned, old queues drained) and a flip of the feature bit
	// (drained when it goes off).
	ToggleEvery int64
}

// DefaultSRQHooks is the hook placement of a machine that names none:
// v4's, the last posted, with the recheck whose lack is v2's and v3's
// known defect (SRQKnownDefects).
const DefaultSRQHooks = rq.SRQHooksV4

// DefaultSRQShardSize is v3 7/7's SHARED_RUNQ_SHARD_SZ.
const DefaultSRQShardSize = 6

// srqState is the machine's part of SHARED_RUNQ.
type srqState struct {
	cfg rq.SRQConfig
	// rebuild is sched_domains_mutex / cpus_read_lock: one rebuild or
	// toggle at a time (tried, never waited for: a CPU that finds it
	// taken skips its turn).
	rebuild sync.Mutex
	// queues are the current per-LLC shared runqueues, and gen counts
	// rebuilds (shard lock numbering). Guarded by rebuild (and read by
	// audits with every CPU parked).
	queues []*rq.SharedRunq
	gen    int
	// drain are the shared runqueues a rebuild replaced, drained by the
	// rebuild's AfterUpdateDomains. Guarded by sched_domains_mutex.
	drain []*rq.SharedRunq
	// llcDepth[cpu] is how many of cpu's balance spans are <= its LLC
	// (bailout (g) and v4 skip them).
	llcDepth []int
}

// enableSRQ builds one shared runqueue per LLC and points every
// runqueue at its home shard, before the machine starts.
func (m *Machine) enableSRQ(o SRQOptions) {
	st := &srqState{}
	st.cfg.Hooks, st.cfg.ShardSize, st.cfg.Bailouts = o.Hooks, o.ShardSize, o.Bailouts
	st.cfg.Enabled.Store(o.Enabled)
	m.srq = st
	st.llcDepth = make([]int, len(m.rqs))
	for cpu, r := range m.rqs {
		r.SRQCfg = &st.cfg
		for _, d := range m.topo.Domains(cpu) {
			if d.Level <= topology.LevelLLC {
				st.llcDepth[cpu]++
			}
		}
	}
	st.queues = m.buildSRQs()
	for cpu, r := range m.rqs {
		q, s := m.homeShard(st.queues, cpu)
		r.SetSRQ(q, s)
	}
	// update_domains_fair: each runqueue (its lock held, IRQs off) gets
	// its shard of the current shared runqueues; then the ones a rebuild
	// replaced are drained.
	m.UpdateDomainsFair = func(_ *percpu.Ctx, r *rq.RQ) {
		q, s := m.homeShard(st.queues, r.CPU)
		r.SetSRQ(q, s)
	}
	m.AfterUpdateDomains = func(c *percpu.Ctx) {
		if old := st.drain; old != nil {
			st.drain = nil
			// synchronize_rcu(): a pop runs under its rq lock, which
			// every reassignment has taken since.
			m.srqDrainAll(c, old, 2)
		}
	}
}

// buildSRQs makes a new shared runqueue per LLC: num_shards =
// ceil(llc_size / SHARD_SZ).
func (m *Machine) buildSRQs() []*rq.SharedRunq {
	st := m.srq
	var out []*rq.SharedRunq
	seen := map[int]bool{}
	id := st.gen * 4096
	st.gen++
	for cpu := range m.rqs {
		llc := m.topo.LLC(cpu)
		if seen[llc] {
			continue
		}
		seen[llc] = true
		size := len(m.topo.LLCSpan(cpu))
		n := (size + st.cfg.ShardSize - 1) / st.cfg.ShardSize
		for len(out) <= llc {
			out = append(out, nil)
		}
		out[llc] = rq.NewSharedRunq(llc, n, id)
		id += n
	}
	return out
}

// homeShard is the v3 7/7 shard index: (cpu >> 1) % num_shards (the
// shift keeps SMT siblings together when they are numbered next to each
// other, which Linux's x86 numbering does not do: faithful anyway).
func (m *Machine) homeShard(qs []*rq.SharedRunq, cpu int) (*rq.SharedRunq, *rq.Shard) {
	q := qs[m.topo.LLC(cpu)]
	return q, q.Shards[(cpu>>1)%len(q.Shards)]
}

// srqNewidle is the SHARED_RUNQ part of newidle balance, after
// idle_stamp is set and before newidle's own rd->overloaded and avg_idle
// tests (v2/v3 pull first; v4 pulls after the rd->overloaded test, which
// it makes itself here). done: newidle is over and pulled is its result.
func (cp *CPU) srqNewidle() (done, pulled bool) {
	c, r, st := cp.c, cp.rq, cp.m.srq
	cfg := &st.cfg
	if !cfg.Enabled.Load() {
		return false, false
	}
	if (cfg.Hooks == rq.SRQHooksV4 || cfg.Bailouts&rq.BailOverload != 0) && !cp.m.rdOverloaded.Load() {
		// v4 pulls after newidle_balance's rd->overload test ("goto
		// out"); bailout (a) adds it to v2/v3.
		c.Inc(stats.SRQBailOverload)
		return true, false
	}
	if cfg.Bailouts&rq.BailAvgIdle != 0 && r.AvgIdle < cp.sd[0].maxCost {
		// (b): Prateek's idle_check, the early avg_idle exit (this_rq->sd:
		// the smallest domain's cost, as newidle's own test).
		c.Inc(stats.SRQBailAvgIdle)
		return true, false
	}
	t0 := c.Now
	ret := cp.srqPull()
	if cfg.Bailouts&rq.BailChargeCost != 0 {
		// (f): the pull's cost counts as the smallest domain's.
		cp.updateNewidleCost(&cp.sd[0], c.Now-t0)
		c.Inc(stats.SRQCostCharged)
	}
	if ret != 0 {
		if ret > 0 {
			r.IdleStamp = 0
		}
		return true, true
	}
	if (cfg.Hooks == rq.SRQHooksV4 || cfg.Bailouts&rq.BailTTWUPending != 0) && cp.wakeList.Load() != nil {
		// v4 / (d): a wakeup is on its way here; stop balancing.
		c.Inc(stats.SRQBailTTWUPending)
		return true, false
	}
	return false, false
}

// srqSkipSpan says whether newidle's domain walk skips span i: v4, and
// bailout (g), skip the domains the shared runqueue covers (<= LLC).
func (cp *CPU) srqSkipSpan(i int) bool {
	st := cp.m.srq
	if st == nil || !st.cfg.Enabled.Load() || i >= st.llcDepth[cp.id] {
		return false
	}
	if st.cfg.Hooks != rq.SRQHooksV4 && st.cfg.Bailouts&rq.BailSkipLLC == 0 {
		return false
	}
	cp.c.Inc(stats.SRQSkipLLC)
	return true
}

// srqPull is shared_runq_pick_next_task(): pop a task from this LLC's
// shards, home shard first, drop this rq's lock, take the task's
// (task_rq_lock), recheck, move it here. Returns 1 if it pulled, -1 if
// it dropped the lock without pulling (the caller must pick again; v3),
// 0 if it found nothing (v4 also returns 0 after a failed recheck and
// leaves newidle's exit checks to notice arrivals, unless an RT task
// arrived: -1). This rq's lock is held on entry and on return.
func (cp *CPU) srqPull() int {
	c, r, m := cp.c, cp.rq, cp.m
	cfg := &m.srq.cfg
	q, home := r.SRQ(c)
	if q == nil {
		return 0
	}
	c.Inc(stats.SRQPullAttempts)
	n := len(q.Shards)
	hi := 0
	for i, s := range q.Shards {
		if s == home {
			hi = i
		}
	}
	discard := cfg.Bailouts&rq.BailDiscard != 0
	pending := func() bool { return cp.wakeList.Load() != nil }
	var p *task.Task
	var from *rq.Shard
	empty := true
	for i := 0; i < n && p == nil; i++ {
		s := q.Shards[(hi+i)%n]
		if cfg.Bailouts&rq.BailShardOverload != 0 && !s.Overload.Load() {
			c.Inc(stats.SRQBailShardOverload)
			continue
		}
		if s.Len() != 0 {
			// the lockless peek saw entries: the pop takes the shard
			// lock (an attempt's cost; the peek alone is free)
			empty = false
			c.Now += m.cfg.NewidleCost
		}
		p = rq.Pop(c, s, r.CPU, discard, pending)
		from = s
		if p == nil && cfg.Bailouts&rq.BailShardOverload != 0 && s.Len() == 0 {
			s.Overload.Store(false) // found empty: clear the flag (3/3)
		}
	}
	if p == nil {
		if empty {
			c.Inc(stats.SRQShardEmpty)
		}
		return 0
	}
	c.Inc(stats.SRQPops)
	c.Emit(trace.EvSRQPop, int32(p.ID), int32(from.ID()), int32(p.CPU()), 0)
	pushedOn := p.CPU()
	// rq_unpin_lock; raw_spin_rq_unlock(this_rq): p is on no list now
	// and pinned by nothing this CPU holds.
	cp.srqPopped = p
	r.Unlock(c)
	c.Now += m.cfg.NewidleCost // task_rq_lock of a remote runqueue, the move
	p.PiLock.Lock(c.CPU)
	src := m.taskRQLock(c, p)
	cp.srqPopped = nil
	if src.CPU != pushedOn {
		c.Inc(stats.SRQRecheckMoved)
	}
	ret := -1
	if cfg.Hooks == rq.SRQHooksV4 {
		ret = 0
	}
	why := -1
	switch {
	case !p.Queued():
		why = trace.SRQRecheckDequeued
	case p.OnCPU() || p == src.Curr():
		why = trace.SRQRecheckOnCPU
	case cfg.Hooks == rq.SRQHooksV4 && !p.AllowedOn(r.CPU):
		why = trace.SRQRecheckNotAllowed
	case !c.Bug(bugs.SRQPullsDonor) && proxy.TaskIsBlocked(c, p):
		// proxysim's rule: a mutex-blocked donor moves only by proxy
		// migration (can_migrate_task's task_is_blocked upstream).
		why = trace.SRQRecheckBlocked
	case !c.Bug(bugs.SRQPullsDonor) && p == src.Donor(c):
		// task_current_donor(): off the tree, not on_cpu, but the
		// scheduling context its proxy runs on.
		why = trace.SRQRecheckDonor
	}
	if why >= 0 {
		c.Inc([...]stats.Counter{stats.SRQRecheckDequeued, stats.SRQRecheckOnCPU, stats.SRQRecheckNotAllowed, stats.SRQRecheckBlocked, stats.SRQRecheckDonor}[why])
		c.Emit(trace.EvSRQRecheck, int32(p.ID), int32(why), int32(src.CPU), 0)
		if src != r {
			src.Unlock(c)
			p.PiLock.Unlock(c.CPU)
			r.Lock(c)
		} else {
			p.PiLock.Unlock(c.CPU)
		}
	} else {
		c.Inc(stats.SRQPulls)
		if cfg.Hooks != rq.SRQHooksV4 && !p.AllowedOn(r.CPU) {
			// v2/v3 lack v4's is_cpu_allowed recheck: this move is
			// their known defect (invariant 49 or 2 follows).
			cp.srqDefects = append(cp.srqDefects, srqDefectHit{defect: 0, hooks: cfg.Hooks, task: p.ID,
				name: p.String(), from: src.CPU, to: r.CPU, pinned: p.PinnedCPU, at: c.Now})
		}
		if src != r {
			m.moveQueuedTaskLocked(c, src, p, r.CPU, trace.ReasonSharedRunq)
		}
		p.PiLock.Unlock(c.CPU)
		ret = 1
	}
	r.UpdateClock(c)
	if cfg.Hooks == rq.SRQHooksV4 && r.NrRT() > 0 {
		// this_rq->nr_running != this_rq->cfs.h_nr_running: an RT task
		// arrived while the lock was dropped.
		c.Inc(stats.SRQRTArrived)
		ret = -1
	}
	return ret
}

// SRQKnownDefect is a defect of a SHARED_RUNQ hook placement as posted
// that the model keeps (it is the series' code) and a later posting
// fixed. Its path records a hit each time the defective code does what
// the fix refuses; a violation of one of its invariants by a task it
// hit is that defect tripping.
type SRQKnownDefect struct {
	Name       string
	Hooks      []int // the placements that have it
	FixedIn    int   // the placement that fixed it
	Invariants []check.Invariant
	What       string
}

// SRQKnownDefects lists them (docs/kernel-map.md, shared_runq_pop_task).
var SRQKnownDefects = []SRQKnownDefect{{
	Name:       "no is_cpu_allowed recheck in the pull",
	Hooks:      []int{rq.SRQHooksV2, rq.SRQHooksV3},
	FixedIn:    rq.SRQHooksV4,
	Invariants: []check.Invariant{check.InvMigrateDisabled, check.InvAffinity, check.InvRunnableInMask},
	What: "shared_runq_pick_next_task pops a task is_cpu_allowed here, drops this rq lock, and moves it under task_rq_lock " +
		"without testing is_cpu_allowed again: a task that entered a migrate_disable() region or whose mask changed in between is moved anyway",
}}

// srqDefectHit is one pull that took a known defect's path.
type srqDefectHit struct {
	defect, hooks int // SRQKnownDefects index, the placement
	task          int
	name          string
	from, to      int
	pinned        int // the CPU a migrate-disabled task was pinned to (-1: none)
	at            int64
}

// SRQKnownDefect says which known defect of the run's SHARED_RUNQ hook
// placement broke v, if one did: "" when v is not one of a defect's
// invariants or no pull took the defect's path with v's task before v.
// fixedIn is the placement that fixed it. Call it once the machine has
// stopped.
func (m *Machine) SRQKnownDefect(v check.Violation) (what string, fixedIn int) {
	if m.srq == nil || m.Stuck {
		return "", 0
	}
	var last *srqDefectHit
	for _, cp := range m.cpus {
		for i := range cp.srqDefects {
			h := &cp.srqDefects[i]
			if h.task == v.Task && h.at <= v.Time && (last == nil || h.at > last.at) {
				last = h
			}
		}
	}
	if last == nil {
		return "", 0
	}
	d := SRQKnownDefects[last.defect]
	if !slices.Contains(d.Invariants, v.Invariant) {
		return "", 0
	}
	why := "its mask no longer allowed cpu" + fmt.Sprint(last.to)
	if last.pinned >= 0 {
		why = fmt.Sprintf("it was migrate-disabled, pinned to cpu%d", last.pinned)
	}
	return fmt.Sprintf("known defect of the SHARED_RUNQ v%d hooks (%s): the pull moved %s cpu%d->cpu%d at %.3fms although %s; %s",
		last.hooks, d.Name, last.name, last.from, last.to, float64(last.at)/1e6, why, d.What), d.FixedIn
}

// srqTick runs the stress injector: every ToggleEvery of busy time, a
// domain rebuild or a feature flip, alternately.
func (cp *CPU) srqTick() {
	st, m := cp.m.srq, cp.m
	cp.srqTicks++
	if k := max(m.cfg.SRQ.ToggleEvery/m.cfg.Tick, 1); cp.srqTicks < k {
		return
	}
	cp.srqTicks = 0
	if !st.rebuild.TryLock() {
		return
	}
	defer st.rebuild.Unlock()
	if cp.c.Rand.IntN(2) == 0 {
		cp.srqRebuild()
	} else {
		cp.srqToggle()
	}
}

// srqRebuild is update_domains_fair() -> shared_runq_reassign_domains()
// and the drain that follows: each runqueue gets its shard of a new
// shared runqueue under its lock (the series uses rq_lock, not
// rq_lock_irq: design note B8), then every old shard is drained.
func (cp *CPU) srqRebuild() {
	c, m, st := cp.c, cp.m, cp.m.srq
	if m.rebuildDomainsWith(c, func() {
		st.drain = st.queues
		st.queues = m.buildSRQs()
	}) {
		c.Inc(stats.SRQRebuilds)
	}
}

// srqToggle flips sched_feat(SHARED_RUNQ) (SCHED_FEAT_CALLBACK): off
// drains every shard (v4 keeps dequeues going meanwhile with the
// force-dequeue key), on simply starts pushing again.
func (cp *CPU) srqToggle() {
	st := cp.m.srq
	cfg := &st.cfg
	if !cfg.Enabled.Load() {
		cfg.Enabled.Store(true)
		cp.c.Inc(stats.SRQRebuilds)
		return
	}
	if cfg.Hooks == rq.SRQHooksV4 {
		cfg.ForceDequeue.Store(true)
	}
	cfg.Enabled.Store(false)
	cp.synchronizeSched()
	cp.m.srqDrainAll(cp.c, st.queues, 1)
	if cfg.Hooks == rq.SRQHooksV4 {
		cfg.ForceDequeue.Store(false)
	}
	cp.c.Inc(stats.SRQRebuilds)
}

// synchronizeSched is the toggle's synchronize_rcu(): every push, pop
// and remove runs under an rq lock (preemption off: an RCU-sched read
// side), so once every rq lock has been taken and released, no CPU is
// still inside one that saw the feature on.
func (cp *CPU) synchronizeSched() {
	for _, r := range cp.m.rqs {
		r.LockIrq(cp.c)
		r.UnlockIrq(cp.c)
	}
}

// srqDrainAll is __shared_runq_drain over every shard of qs, from process
// context. The series as posted takes the shard lock with IRQs on while
// the enqueue of a wake-up from an interrupt takes it in hard-IRQ
// context (design note B8); the model takes it with IRQs off, and
// --bug srq-drain-irqs-on restores the posted form.
func (m *Machine) srqDrainAll(c *percpu.Ctx, qs []*rq.SharedRunq, why int32) {
	irqsOn := c.Bug(bugs.SRQDrainIRQsOn)
	for _, q := range qs {
		if q == nil {
			continue
		}
		n := 0
		for _, s := range q.Shards {
			n += rq.Drain(c, s, irqsOn)
		}
		c.Add(stats.SRQDrained, uint64(n))
		c.Emit(trace.EvSRQDrain, 0, int32(q.LLC), int32(n), why)
	}
}

// checkDonorHere is invariant 16 at __schedule's entry: rq->donor is
// idle or a task whose task_cpu is this CPU. A donor moved away by a
// path that does not reset it first (a shared_runq pull without
// proxysim's rule) is a dangling reference this CPU would charge and
// preempt.
func (cp *CPU) checkDonorHere() {
	c, r := cp.c, cp.rq
	if d := r.Donor(c); d != r.Idle && d.CPU() != r.CPU {
		cp.m.Report(c, check.InvNoStaleRef, d, fmt.Sprintf("cpu%d's rq->donor %v is on cpu%d: moved away while it was the donor (dangling donor)", r.CPU, d, d.CPU()))
	}
}

// auditSRQ checks the shards with every CPU parked: each linked task is
// on exactly the list its node names, once, queued (fair, alive) on a
// runqueue whose LLC the shard serves, not sched_delayed, and not that
// runqueue's donor.
func (m *Machine) auditSRQ(report func(inv check.Invariant, cpu int, p *task.Task, msg string)) {
	st := m.srq
	seen := map[*task.Task]int{}
	for _, q := range st.queues {
		if q == nil {
			continue
		}
		for _, s := range q.Shards {
			list := s.Peek()
			if s.Len() != len(list) {
				report(check.InvOneQueue, -1, nil, fmt.Sprintf("shared_runq shard %d: length word %d, list %d", s.ID(), s.Len(), len(list)))
			}
			for _, p := range list {
				if prev, dup := seen[p]; dup {
					report(check.InvOneQueue, p.CPU(), p, fmt.Sprintf("%v linked on shard %d and shard %d", p, prev, s.ID()))
				}
				seen[p] = s.ID()
				if p.SRQ.Shard() != s.List() {
					report(check.InvOneQueue, p.CPU(), p, fmt.Sprintf("%v on shard %d's list but its node names another", p, s.ID()))
				}
				cpu := p.CPU()
				r := m.rqs[cpu]
				switch {
				case !p.Queued() || !p.SE.Queued || p.State() == task.Dead:
					report(check.InvQueuedHere, cpu, p, fmt.Sprintf("%v linked on shared_runq shard %d but not queued (on_rq %d, %v)", p, s.ID(), p.OnRQ(), p.State()))
				case !p.SE.Policy.Fair():
					report(check.InvQueuedHere, cpu, p, fmt.Sprintf("%v %v linked on shared_runq shard %d (only fair tasks are)", p.SE.Policy, p, s.ID()))
				case m.topo.LLC(cpu) != q.LLC:
					report(check.InvQueuedHere, cpu, p, fmt.Sprintf("%v on cpu%d (LLC %d) linked on shard %d of LLC %d", p, cpu, m.topo.LLC(cpu), s.ID(), q.LLC))
				case p.SE.Delayed:
					// proxysim's rule (docs/protocol.md rule 20): the
					// series predates delayed dequeue; a sleeper the fair
					// class keeps queued is not on a shard.
					report(check.InvQueuedHere, cpu, p, fmt.Sprintf("%v linked on shared_runq shard %d while sched_delayed (asleep)", p, s.ID()))
				case p == r.PeekDonor():
					report(check.InvQueuedHere, cpu, p, fmt.Sprintf("%v linked on shared_runq shard %d while rq->donor of cpu%d (set_next_entity must unlink it)", p, s.ID(), cpu))
				}
			}
		}
	}
	for _, p := range m.tasks {
		if p == nil {
			continue
		}
		if l := p.SRQ.Shard(); l != nil {
			if _, ok := seen[p]; !ok {
				report(check.InvOneQueue, p.CPU(), p, fmt.Sprintf("%v's node names shard %d, whose list does not hold it (stale node)", p, l.ID))
			}
		}
	}
}

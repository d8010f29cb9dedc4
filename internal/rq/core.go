// This file is the core-scheduling part of struct rq and kernel/sched/core.c's
// core helpers (CONFIG_SCHED_CORE, 5.14 form): rq->core, the core-wide
// sequence numbers, core_pick, the forced-idle state, min_vruntime_fi,
// __task_prio/prio_less/cfs_prio_less, sched_core_find and cookie_match.

package rq

import (
	"sync/atomic"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
)

// CoreState is the CONFIG_SCHED_CORE part of struct rq. Leader (rq->core)
// and Siblings are set before the machine starts (CPU hotplug, which
// re-elects leaders, is not modelled) and read-only afterwards; Leader is
// nil when core scheduling is off. Everything else is guarded by the core
// lock: with core scheduling on every sibling's rq_lockp() is the leader's
// lock (ShareLock), so "the rq lock of any sibling" is that lock.
type CoreState struct {
	Leader   *RQ   // rq->core
	Siblings []*RQ // cpu_smt_mask(cpu) in CPU order, this rq included
	// NoFITick leaves out task_tick_core (RFC v3 had no forced-idle
	// tick; it came with 8039e96fcc1d in 2021). Set before start.
	NoFITick bool
	// NoFIAcct leaves out forced-idle time accounting (it came with
	// 5.16-5.17; RFC v3's pick can force a sibling idle with no task
	// running on the core, which the accounting's WARN forbids). Set
	// before start.
	NoFIAcct bool

	// Per runqueue (core lock).
	Pick             *task.Task // rq->core_pick: the task a sibling's core pick chose for this CPU
	SchedSeq         uint64     // rq->core_sched_seq: the core_pick_seq this CPU last scheduled
	PickLeader       bool       // rq->core_pick_leader: this CPU's pick set the core cookie (max)
	PickBlockedDonor bool       // rq->core_pick_blocked_donor: redo the core pick with the donor's owner as max
	tree             *task.Task // rq->core_tree: the root (coretree.go)
	MinVruntimeFI    int64      // cfs_rq->min_vruntime_fi: min_vruntime snapshot for cross-CPU compares
	FISeq            uint64     // cfs_rq->forceidle_seq: the forced-idle episode MinVruntimeFI was taken in

	// Leader only (rq->core->...; core lock).
	TaskSeq        uint64 // core_task_seq: bumped by every enqueue, dequeue and core pick
	PickSeq        uint64 // core_pick_seq: the core_task_seq the last core pick was made on
	Cookie         uint64 // core_cookie: the cookie the core runs
	ForceidleCount int    // core_forceidle_count: siblings forced idle by the last core pick
	ForceidleSeq   uint64 // core_forceidle_seq: forced-idle episodes (a !fi -> fi edge)
	// ForceidleStart is core_forceidle_start: rq clock (ns) of the core
	// when forced-idle time was last accounted; 0: no episode to charge.
	ForceidleStart int64
	// ForceidleOccupation is core_forceidle_occupation: siblings running
	// a task at the core pick that forced the others idle.
	ForceidleOccupation int
	// fiShadowStart is the model's own clock of the forced-idle episode,
	// set at every core pick that forces a sibling idle whatever the
	// cookie: invariant 51 compares what the accounting charged with
	// core_forceidle_count x the time elapsed since (ns).
	fiShadowStart int64
	// FIExpected, FICharged and FIAllowed (ns) are invariant 51's books:
	// count x elapsed forced-idle time, what the accounting charged to
	// tasks, and the signed difference the kernel's arithmetic makes
	// (integer division, and running siblings that differ from the
	// occupation recorded at the pick): Expected - Charged == Allowed.
	FIExpected, FICharged, FIAllowed int64
}

// CoreEnabled is sched_core_enabled(rq): rq->core_enabled. Stable while
// a lock of this rq's core is held (the flip takes them all).
func (r *RQ) CoreEnabled() bool { return r.Core.Leader != nil && r.coreEnabled.Load() }

// EnableCore makes r a member of the core led by leader, with siblings
// sibs (this rq included), core scheduling enabled: r's rq_lockp()
// becomes the leader's lock. Before the machine starts (boot); at run
// time the flip (SetCoreEnabled under every sibling's own lock) switches
// it off and on.
func (r *RQ) EnableCore(leader *RQ, sibs []*RQ) {
	r.Core.Leader = leader
	r.Core.Siblings = sibs
	r.coreEnabled.Store(true)
}

// SchedCoreLock is sched_core_lock(): local_irq_save, then every SMT
// sibling's own __lock, in CPU order (lockdep subclasses 0, 1, ...).
// Whoever holds any sibling's rq_lockp() keeps it out, so the pointer is
// stable under that lock.
func SchedCoreLock(c *percpu.Ctx, sibs []*RQ) {
	c.IrqDisable()
	for _, r := range sibs {
		r.own.Lock(c.CPU)
	}
}

// SchedCoreUnlock is sched_core_unlock(): the locks, then
// local_irq_restore.
func SchedCoreUnlock(c *percpu.Ctx, sibs []*RQ) {
	for i := len(sibs) - 1; i >= 0; i-- {
		sibs[i].own.Unlock(c.CPU)
	}
	c.IrqEnable()
}

// CoreFlipLocked is one core's step of __sched_core_flip() under
// sched_core_lock: core_enabled set on each sibling and the leader's
// core_forceidle_start reset; and, unless --bug core-flip-stale-pick,
// every sibling's core_pick cleared (finding F8). sibs is cpu_smt_mask
// in CPU order.
func CoreFlipLocked(c *percpu.Ctx, sibs []*RQ, on bool) {
	for _, r := range sibs {
		r.SetCoreEnabled(c, on)
		if !c.Bug(bugs.CoreFlipStalePick) {
			// Finding F8's fix: no core_pick survives a flip (the
			// kernel resets it only for an offline CPU).
			r.Core.Pick = nil
		}
	}
	core := sibs[0].Core.Leader
	core.Core.ForceidleStart = 0
	core.Core.fiShadowStart = 0
	for _, r := range sibs {
		// sched_core_assert_empty(): no task holds a cookie at a flip.
		if r.Core.tree != nil {
			c.Warn(check.InvCoreTree, r.Core.tree.ID, r.Core.tree.String(), "__sched_core_flip(%v): cpu%d's core_tree is not empty (%v is linked): a cookie outlived sched_core_count", on, r.CPU, r.Core.tree)
		}
	}
}

// SchedCoreAccountForceidle is __sched_core_account_forceidle(rq) with
// rq_clock(rq->core) read as this CPU's clock (the caller holds the core
// lock; the model's clocks are per CPU). The time since
// core_forceidle_start, scaled by core_forceidle_count over
// core_forceidle_occupation, is charged to every sibling's non-idle
// core_pick ?: curr (a core_pick only while the core's pick sequence says
// it is still valid: finding F9). --bug core-forceidle-acct restores the pre-2022
// filter: only tasks with a cookie are charged. It returns what was
// charged.
func (r *RQ) SchedCoreAccountForceidle(c *percpu.Ctx) int64 {
	core := r.Core.Leader
	cs := &core.Core
	now := c.Now
	if r.Core.NoFIAcct {
		return 0
	}
	if cs.ForceidleCount == 0 {
		c.Warn(check.InvForceIdleAcct, -1, "", "sched_core_account_forceidle on cpu%d with core_forceidle_count 0 (WARN_ON_ONCE)", r.CPU)
		return 0
	}
	// The model's reference: count x elapsed, from its own episode clock.
	var want int64
	if cs.fiShadowStart != 0 && now > cs.fiShadowStart {
		want = int64(cs.ForceidleCount) * (now - cs.fiShadowStart)
		cs.fiShadowStart = now
		cs.FIExpected += want
		c.Add(stats.CoreForceIdleNs, uint64(want))
	}
	if cs.ForceidleStart == 0 {
		return 0
	}
	delta := now - cs.ForceidleStart
	if delta <= 0 {
		return 0
	}
	cs.ForceidleStart = now
	if cs.ForceidleOccupation == 0 {
		c.Warn(check.InvForceIdleAcct, -1, "", "core of cpu%d forced idle (count %d) with occupation 0 (WARN_ON_ONCE: can't be forced idle without a running task)", r.CPU, cs.ForceidleCount)
	} else if cs.ForceidleCount > 1 || cs.ForceidleOccupation > 1 {
		delta = delta * int64(cs.ForceidleCount) / int64(cs.ForceidleOccupation)
	}
	var charged int64
	running := 0
	for _, ri := range r.Core.Siblings {
		p := ri.Core.Pick
		if p != nil && cs.PickSeq != cs.TaskSeq && !c.Bug(bugs.CoreFIChargeStale) {
			// Finding F9's fix: an enqueue or dequeue since the core
			// pick voided the pick (the fast path would not take it);
			// the task may have left this core and be charged, under
			// another core's lock, there.
			p = nil
		}
		stale := p != nil
		if p == nil {
			p = ri.Curr()
		}
		if p == ri.Idle {
			continue
		}
		if stale && p.Freed() {
			// The kernel holds no reference on core_pick: a pick left
			// behind (the SM_IDLE fast path does not clear it) may
			// outlive its task's grace period.
			c.Warn(check.InvUseAfterFree, p.ID, p.String(), "sched_core_account_forceidle on cpu%d charges %v through cpu%d's core_pick after its last reference was dropped (exited and freed)", r.CPU, p, ri.CPU)
			continue
		}
		running++
		if c.Bug(bugs.CoreForceIdleAcct) && p.CoreCookie == 0 {
			continue
		}
		p.Stats.ForceidleSum += delta
		charged += delta
	}
	cs.FICharged += charged
	c.Add(stats.CoreForceIdleChargedNs, uint64(charged))
	cs.FIAllowed += want - delta*int64(running)
	return charged
}

// StartForceidle is the end of a core pick that left count siblings
// forced idle with occ running: core_forceidle_start and _occupation.
// --bug core-forceidle-acct starts an episode only under a core cookie
// (before b171501f2580). The model's own episode clock always starts.
func (r *RQ) StartForceidle(c *percpu.Ctx, occ int) {
	cs := &r.Core.Leader.Core
	if cs.ForceidleCount == 0 || r.Core.NoFIAcct {
		return
	}
	// rq_clock is never 0 in the kernel, where 0 means "no episode";
	// the model's clocks start at 0.
	now := max(c.Now, 1)
	if cs.Cookie != 0 || !c.Bug(bugs.CoreForceIdleAcct) {
		cs.ForceidleStart = now
	}
	cs.fiShadowStart = now
	cs.ForceidleOccupation = occ
}

// ResetForceidle is the pick's reset after accounting.
func (r *RQ) ResetForceidle() {
	cs := &r.Core.Leader.Core
	cs.ForceidleStart, cs.fiShadowStart, cs.ForceidleOccupation, cs.ForceidleCount = 0, 0, 0, 0
}

// coreDequeue is sched_core_dequeue(): bump core_task_seq and unlink p
// from core_tree (schedCoreDequeue); taking the last task off a
// forced-idle CPU reschedules it, for the forced-idle accounting edge.
// Called before the class dequeue, as the kernel does.
func (r *RQ) coreDequeue(c *percpu.Ctx, p *task.Task, flags int) {
	if !r.schedCoreDequeue(c, p) {
		return
	}
	core := r.Core.Leader
	if flags&DequeueSave == 0 && atomic.LoadInt32(r.nrRunning) == 1 && core.Core.ForceidleCount > 0 && r.curr.Load() == r.Idle {
		r.ReschedCurr(c)
	}
}

// TaskPrio is __task_prio(): RT 0..99, fair squashed to 120, idle 140
// (no stop or deadline class in the model).
func (r *RQ) TaskPrio(p *task.Task) int {
	switch {
	case p.Idle:
		return task.IdlePrio
	case p.SE.Policy.DL():
		return task.DLPrio
	case p.SE.Policy.RT():
		return p.SE.Prio
	}
	return task.DefaultPrio
}

// PrioLess is 5.14's prio_less(a, b, in_fi): a has strictly lower
// priority than b (ties are "not less"; the reference's deadline compare
// is not strict, finding F14: --bug core-dl-tie). ra and rb are the runqueues a
// and b are picked from. Fair tasks compare as cfs_prio_less() does at
// the root level (no cgroups): (a.v - b.v) + (fi(b) - fi(a)) > 0, with
// each runqueue's min_vruntime_fi, which is frozen while the core is
// forced idle (task_vruntime_update).
//
// --bug core-fi-vruntime compares with each runqueue's current
// min_vruntime instead (before c6047c2e3af6's snapshot, design note K2):
// with one task per CPU each side normalises to 0 and every cross-CPU
// compare ties.
func PrioLess(c *percpu.Ctx, a *task.Task, ra *RQ, b *task.Task, rb *RQ, inFI bool) bool {
	pa, pb := ra.TaskPrio(a), rb.TaskPrio(b)
	if pa != pb {
		return pa > pb
	}
	if pa == task.DLPrio {
		return dlPrioLess(c, a, b)
	}
	if pa != task.DefaultPrio {
		return false
	}
	fa, fb := ra.Core.MinVruntimeFI, rb.Core.MinVruntimeFI
	if c.Bug(bugs.CoreFIVruntime) {
		fa, fb = ra.minVruntime, rb.minVruntime
	}
	delta := (a.SE.Vruntime - b.SE.Vruntime) + (fb - fa)
	return delta > 0
}

// PrioLessV3 is v3's prio_less(a, b) (RFC v3, 2019), deadline tasks
// compared strictly unless --bug core-dl-tie (finding F14): across CPUs b's
// vruntime is shifted into a's base with the runqueues' current
// min_vruntime; a is less if a.v - shifted b > 0. With one task per CPU
// each vruntime is its runqueue's min_vruntime and every comparison ties
// (design note K2).
func PrioLessV3(c *percpu.Ctx, a *task.Task, ra *RQ, b *task.Task, rb *RQ) bool {
	pa, pb := ra.TaskPrio(a), rb.TaskPrio(b)
	if pa != pb {
		return pa > pb
	}
	if pa == task.DLPrio {
		return dlPrioLess(c, a, b)
	}
	if pa != task.DefaultPrio {
		return false
	}
	bv := b.SE.Vruntime
	if ra != rb {
		bv = bv - rb.minVruntime + ra.minVruntime
	}
	return a.SE.Vruntime-bv > 0
}

// dlPrioLess is prio_less()'s deadline branch, shared by 5.14's and v3's
// compare. --bug core-dl-tie keeps the reference's compare: a tie is
// "less" both ways, so 5.14 hands the core to the other CPU's task and
// v3's restart loop, a "linear max-filter" only under a strict order,
// never ends on two tied deadline tasks of different cookies. Finding
// F14's fix is a strictly later deadline, so that a tie stays with the
// CPU that picks, as for the other classes.
func dlPrioLess(c *percpu.Ctx, a, b *task.Task) bool {
	if c.Bug(bugs.CoreDLTie) {
		return !dlTimeBefore(a.SE.DL.Deadline, b.SE.DL.Deadline)
	}
	return dlTimeBefore(b.SE.DL.Deadline, a.SE.DL.Deadline)
}

// TaskVruntimeUpdate is task_vruntime_update() / se_fi_update(): refresh
// this runqueue's min_vruntime_fi for a fair pick p, once per forced-idle
// episode when inFI. The core lock is held.
func (r *RQ) TaskVruntimeUpdate(c *percpu.Ctx, p *task.Task, inFI bool) {
	r.AssertHeld(c)
	if p.Idle || p.SE.Policy.RT() || p.SE.Policy.DL() {
		return
	}
	if inFI {
		seq := r.Core.Leader.Core.ForceidleSeq
		if r.Core.FISeq == seq {
			return
		}
		r.Core.FISeq = seq
	}
	r.Core.MinVruntimeFI = r.minVruntime
}

// PickClass is class->pick_task(rq) for v3's per-class loop: the best
// queued task of the RT (rt true) or fair class, or nil. The RT pass
// takes a queued DL task first (the model's loop has two passes; DL is
// the class above RT).
func (r *RQ) PickClass(c *percpu.Ctx, rt bool) *task.Task {
	if !rt {
		return r.PickTaskOf(c, ClassFair)
	}
	if p := r.PickTaskOf(c, ClassDL); p != nil {
		return p
	}
	return r.PickTaskOf(c, ClassRT)
}

// SchedClass names a scheduling class of the per-class core-wide picks,
// in for_each_class order (the idle class is the callers' fill-in).
type SchedClass uint8

// The classes with tasks to pick, highest first.
const (
	ClassDL SchedClass = iota
	ClassRT
	ClassFair
)

// PickTaskOf is class->pick_task(rq) of one class: the best queued task
// of that class, or nil (pick_task_dl, pick_task_rt, pick_task_fair; the
// fair pick may dequeue delayed entities on its way).
func (r *RQ) PickTaskOf(c *percpu.Ctx, cls SchedClass) *task.Task {
	r.AssertHeld(c)
	switch cls {
	case ClassDL:
		if len(r.dl) == 0 {
			return nil
		}
		return r.pickNextDLEntity()
	case ClassFair:
		return r.pickTaskFair(c)
	}
	if len(r.rt) == 0 {
		return nil
	}
	best := r.rt[0]
	for _, t := range r.rt[1:] {
		if better(t, best) {
			best = t
		}
	}
	return best
}

// CookieEquals is cookie_equals(a, cookie): a is its runqueue's idle
// task or carries the cookie.
func CookieEquals(a *task.Task, cookie uint64) bool { return a.Idle || a.CoreCookie == cookie }

// CookieMatch is cookie_match(a, b): either is idle, or the cookies agree.
func CookieMatch(a, b *task.Task) bool { return a.Idle || b.Idle || a.CoreCookie == b.CoreCookie }

// CPUCookieMatch is sched_cpu_cookie_match(rq, p): core scheduling off,
// or p carries the core's cookie.
func (r *RQ) CPUCookieMatch(p *task.Task) bool {
	if !r.CoreEnabled() {
		return true
	}
	return r.Core.Leader.Core.Cookie == p.CoreCookie
}

// coreTickForceIdle is task_tick_core(): the core is forced idle, this
// runqueue has one fair task and it used more than half its slice
// (MIN_NR_TASKS_DURING_FORCEIDLE = 2): reschedule, so that the core pick
// runs again and the starved sibling gets its turn.
func (r *RQ) coreTickForceIdle(se *task.SchedEntity) bool {
	if !r.CoreEnabled() || r.Core.NoFITick || r.Core.Leader.Core.ForceidleCount == 0 || len(r.fair) != 1 {
		return false
	}
	// __entity_slice_used(se, 2): the runtime since set_next_entity is
	// more than half the request.
	return (se.SumExecRuntime-se.PrevSumExec)*2 > se.Slice
}

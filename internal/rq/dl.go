// This file is the SCHED_DEADLINE class of kernel/sched/deadline.c as the
// proxy-execution series has it: the dl tree (EDF by absolute deadline),
// the CBS rules (update_dl_entity, dl_entity_overflow, replenish_dl_entity),
// update_curr_dl charging the donor and throttling it, the dl_timer's
// replenishment half, wakeup_preempt_dl, and cpudl's per-CPU earliest
// deadline. Push, pull and find_later_rq are in internal/cpu/dl.go; the
// root domain's bandwidth (admission control) is DLBandwidth below.

package rq

import (
	"sync/atomic"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// dlScale is DL_SCALE: dl_entity_overflow compares at ~1 us granularity.
const dlScale = 10

// dlTimeBefore is dl_time_before(a, b).
func dlTimeBefore(a, b int64) bool { return a-b < 0 }

// DLTimeBefore is dl_time_before(a, b), for the cpu package.
func DLTimeBefore(a, b int64) bool { return dlTimeBefore(a, b) }

// dlLess orders the dl tree (__dl_less): earlier deadline first; equal
// deadlines in insertion order (rb_add_cached puts an equal key right of
// the existing ones).
func dlLess(a, b *task.Task) bool {
	if a.SE.DL.Deadline != b.SE.DL.Deadline {
		return dlTimeBefore(a.SE.DL.Deadline, b.SE.DL.Deadline)
	}
	return a.SE.QueueSeq < b.SE.QueueSeq
}

// NrDL returns dl_nr_running (READ_ONCE).
func (r *RQ) NrDL() int { return int(r.nrDL.Load()) }

// EarliestDL is this CPU's cpudl entry: the earliest deadline queued
// here, 0 if no DL task is (READ_ONCE; cpudl's heap is read under its own
// lock in the kernel, see docs/kernel-map.md).
func (r *RQ) EarliestDL() int64 { return r.earliestDL.Load() }

// DLTasks returns the dl tree, earliest deadline first; the rq lock must
// be held (pushable-list walks).
func (r *RQ) DLTasks(c *percpu.Ctx) []*task.Task {
	r.AssertHeld(c)
	out := append([]*task.Task(nil), r.dl...)
	for i := 1; i < len(out); i++ { // insertion sort: short lists
		for j := i; j > 0 && dlLess(out[j], out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// pickNextDLEntity is pick_next_dl_entity(): the leftmost of the dl tree.
func (r *RQ) pickNextDLEntity() *task.Task {
	best := r.dl[0]
	for _, t := range r.dl[1:] {
		if dlLess(t, best) {
			best = t
		}
	}
	return best
}

// updateEarliest is inc_dl_deadline / dec_dl_deadline: recompute the
// leftmost deadline and publish it to cpudl (cpudl_set, cpudl_clear).
func (r *RQ) updateEarliest() {
	if len(r.dl) == 0 {
		r.earliestDL.Store(0)
		return
	}
	r.earliestDL.Store(r.pickNextDLEntity().SE.DL.Deadline)
}

// enqueueDLEntity is __enqueue_dl_entity(): into the tree, counted in
// nr_running and dl_nr_running.
func (r *RQ) enqueueDLEntity(p *task.Task) {
	remove(&r.dlThrottled, p)
	r.seq++
	p.SE.QueueSeq = r.seq
	p.SE.DL.OnDLRQ = true
	r.dl = append(r.dl, p)
	if atomic.AddInt32(r.nrRunning, 1) == 2 {
		r.setRDOverloaded() // add_nr_running
	}
	if r.nrDL.Add(1) == 2 && r.DLO != nil {
		r.DLO.Add(1)
	}
	r.updateEarliest()
}

// dequeueDLEntity is __dequeue_dl_entity(): out of the tree if in it.
func (r *RQ) dequeueDLEntity(p *task.Task) {
	if !p.SE.DL.OnDLRQ {
		return
	}
	remove(&r.dl, p)
	p.SE.DL.OnDLRQ = false
	atomic.AddInt32(r.nrRunning, -1)
	if r.nrDL.Add(-1) == 1 && r.DLO != nil {
		r.DLO.Add(-1)
	}
	r.updateEarliest()
}

// replenishDLNewPeriod is replenish_dl_new_period(): a fresh instance
// from now.
func (r *RQ) replenishDLNewPeriod(c *percpu.Ctx, p *task.Task) {
	dl := &p.SE.DL
	dl.Deadline = r.Clock + dl.DLParams.Deadline
	dl.Runtime = dl.DLParams.Runtime
	c.Inc(stats.DLReplenishments)
	c.Emit(trace.EvDLReplenish, int32(p.ID), int32(dl.Runtime/1000), int32((dl.Deadline-r.Clock)/1000), 0)
}

// replenishDLEntity is replenish_dl_entity(): push the deadline a period
// at a time until the budget is positive (an overrun of any size is paid
// back), start a new period if that still leaves the deadline behind the
// clock, and unthrottle.
func (r *RQ) replenishDLEntity(c *percpu.Ctx, p *task.Task) {
	dl := &p.SE.DL
	if dl.Yielded && dl.Runtime > 0 {
		dl.Runtime = 0
	}
	for dl.Runtime <= 0 {
		dl.Deadline += dl.Period
		dl.Runtime += dl.DLParams.Runtime
	}
	if dlTimeBefore(dl.Deadline, r.Clock) {
		r.replenishDLNewPeriod(c, p) // "DL replenish lagged too much"
	} else {
		c.Inc(stats.DLReplenishments)
		c.Emit(trace.EvDLReplenish, int32(p.ID), int32(dl.Runtime/1000), int32((dl.Deadline-r.Clock)/1000), 0)
	}
	dl.Yielded = false
	if dl.Throttled {
		p.WatchWrite(trace.FieldDLThrottled, 0)
	}
	dl.Throttled = false
}

// dlEntityOverflow is dl_entity_overflow(): would the remaining budget
// over the time left to the deadline exceed the reserved density? Both
// sides scaled down by DL_SCALE, as the kernel does.
func dlEntityOverflow(dl *task.DLEntity, t int64) bool {
	left := (dl.DLParams.Deadline >> dlScale) * (dl.Runtime >> dlScale)
	right := ((dl.Deadline - t) >> dlScale) * (dl.DLParams.Runtime >> dlScale)
	return dlTimeBefore(right, left)
}

// updateDLEntity is update_dl_entity(), the CBS wakeup rule: a deadline
// in the past, or a budget that would overflow the bandwidth, gets a new
// period; a constrained-deadline task (deadline < period) woken before its
// deadline gets the revised rule (runtime cut to density x laxity).
func (r *RQ) updateDLEntity(c *percpu.Ctx, p *task.Task) {
	dl := &p.SE.DL
	now := r.Clock
	if dlTimeBefore(dl.Deadline, now) || dlEntityOverflow(dl, now) {
		implicit := dl.DLParams.Deadline == dl.Period
		if !implicit && !dlTimeBefore(dl.Deadline, now) {
			dl.Runtime = (dl.Density * (dl.Deadline - now)) >> task.BWShift // update_dl_revised_wakeup
			return
		}
		r.replenishDLNewPeriod(c, p)
	}
}

// dlNextPeriod is dl_next_period(): the start of the next instance.
func dlNextPeriod(dl *task.DLEntity) int64 {
	return dl.Deadline - dl.DLParams.Deadline + dl.Period
}

// startDLTimer is start_dl_timer(): arm the replenishment timer at the
// next period; false if that instant has already passed (the caller then
// replenishes at once).
func (r *RQ) startDLTimer(c *percpu.Ctx, p *task.Task) bool {
	r.AssertHeld(c)
	dl := &p.SE.DL
	act := dlNextPeriod(dl)
	if act < r.Clock {
		return false
	}
	if !dl.TimerQueued {
		dl.TimerQueued = true
		dl.TimerCPU = c.ID
		if r.StartDLTimer != nil {
			dl.TimerID = r.StartDLTimer(c, p, act)
		}
	}
	return true
}

// dlCheckConstrainedDL is dl_check_constrained_dl(): a constrained task
// activated after its deadline but before its next period is throttled
// until that period.
func (r *RQ) dlCheckConstrainedDL(c *percpu.Ctx, p *task.Task) {
	dl := &p.SE.DL
	if dlTimeBefore(dl.Deadline, r.Clock) && dlTimeBefore(r.Clock, dlNextPeriod(dl)) {
		if !r.startDLTimer(c, p) {
			return
		}
		dl.Throttled = true
		p.WatchWrite(trace.FieldDLThrottled, 1)
		c.Inc(stats.DLThrottles)
		c.Emit(trace.EvDLThrottle, int32(p.ID), int32(dl.Runtime/1000), 1, 0)
		if dl.Runtime > 0 {
			dl.Runtime = 0
		}
	}
}

// enqueueTaskDL is enqueue_task_dl() / enqueue_dl_entity() for a task
// (no dl_server, no PI boosting: rt_mutexes are not modelled). A
// throttled task stays off the tree unless this is its replenishment; a
// wakeup applies the CBS rule; a change of policy (RESTORE, the model's
// ENQUEUE_MOVE) or a first enqueue starts a new instance if the deadline
// is behind the clock. The pushable list is not kept: push and pull read
// the test (not task_is_blocked, not current, not throttled, more than
// one CPU allowed) at the time they look, as the RT side does.
func (r *RQ) enqueueTaskDL(c *percpu.Ctx, p *task.Task, flags int) {
	dl := &p.SE.DL
	r.UpdateClock(c)
	if !dl.Throttled && dl.DLParams.Deadline != dl.Period && dl.Deadline != 0 {
		r.dlCheckConstrainedDL(c, p)
	}
	if dl.Throttled && flags&EnqueueReplenish == 0 {
		r.dlThrottled = append(r.dlThrottled, p)
		return
	}
	switch {
	case dl.Deadline == 0 && flags&EnqueueReplenish == 0:
		// No instance yet (the model's clocks start at 0, where the
		// kernel's "deadline 0 is in the past" does not hold).
		r.replenishDLNewPeriod(c, p)
	case flags&EnqueueWakeup != 0:
		r.updateDLEntity(c, p)
	case flags&EnqueueReplenish != 0:
		r.replenishDLEntity(c, p)
	case (flags&EnqueueRestore != 0 || dl.Deadline == 0) && dlTimeBefore(dl.Deadline, r.Clock):
		r.replenishDLNewPeriod(c, p) // setup_new_dl_entity
	}
	r.enqueueDLEntity(p)
}

// dequeueTaskDL is dequeue_task_dl(): out of the tree (a throttled task
// is not in it and keeps its timer: dl_task_timer then only replenishes).
// The kernel's update_curr_dl at the head is done by the model's callers
// (__schedule and sched_setscheduler update the donor before dequeueing).
func (r *RQ) dequeueTaskDL(c *percpu.Ctx, p *task.Task) {
	if p == r.donor {
		r.settleDLOwed(c) // dequeue_task_dl's update_curr_dl
	}
	r.dequeueDLEntity(p)
	remove(&r.dlThrottled, p)
}

// ThrottledDL returns the throttled queued DL tasks without the lock:
// only for audits and reports with every CPU parked.
func (r *RQ) ThrottledDL() []*task.Task { return r.dlThrottled }

// updateCurrDL is update_curr_dl() / update_curr_dl_se() for the donor's
// entity se: the budget pays for the time, whoever executed it (the
// proxy series charges rq->donor's dl_se). An exhausted budget throttles:
// off the tree, the dl_timer armed for the next period (or an immediate
// replenishment if that has passed), and a reschedule unless the task is
// still leftmost.
func (r *RQ) updateCurrDL(c *percpu.Ctx, se *task.SchedEntity, delta int64) {
	dl := &se.DL
	if !dl.OnDLRQ {
		return
	}
	dl.Runtime -= delta
	if mutantDLNoThrottle() {
		return // the mistake: the budget runs out and nothing throttles
	}
	if dl.Runtime > 0 && !dl.Yielded {
		return
	}
	p := r.donor
	if &p.SE != se {
		p = r.curr.Load() // the charge-curr mutant's entity
	}
	r.throttleDL(c, p)
}

// throttleDL is update_curr_dl_se()'s throttle branch.
func (r *RQ) throttleDL(c *percpu.Ctx, p *task.Task) {
	dl := &p.SE.DL
	dl.Throttled = true
	p.WatchWrite(trace.FieldDLThrottled, 1)
	c.Inc(stats.DLThrottles)
	c.Emit(trace.EvDLThrottle, int32(p.ID), int32(dl.Runtime/1000), 0, 0)
	r.dequeueDLEntity(p)
	if r.CoreEnabled() && !c.Bug(bugs.CoreThrottleStalePick) {
		// Finding F17's fix (F16's mirror): the task stays in core_tree
		// (only its dl entity leaves), so no sched_core_dequeue moves
		// core_task_seq; without this, a sibling's core-wide selection
		// of this donor stays valid for the fast path, which then picks
		// it throttled and runs its proxy on a context with no budget.
		r.Core.Leader.Core.TaskSeq++
	}
	if r.startDLTimer(c, p) {
		r.dlThrottled = append(r.dlThrottled, p)
	} else {
		r.replenishDLEntity(c, p)
		r.enqueueDLEntity(p)
	}
	if len(r.dl) == 0 || r.pickNextDLEntity() != p {
		r.ReschedCurr(c)
	}
}

// yieldTaskDL is yield_task_dl(): give up the rest of this instance.
func (r *RQ) yieldTaskDL(c *percpu.Ctx, p *task.Task) {
	p.SE.DL.Yielded = true
	if p == r.donor {
		r.UpdateCurr(c)
		if p.SE.DL.OnDLRQ && p.SE.DL.Yielded {
			r.throttleDL(c, p)
		}
	}
}

// DLTimerFire is dl_task_timer()'s body once task_rq_lock(p) is held:
// nothing if p left SCHED_DEADLINE or is no longer throttled (a spurious
// or stale timer); a throttled p that is not queued only gets its budget
// back (its wakeup will enqueue it); a queued one is replenished back
// into the tree and may preempt. It returns true when p was put back in
// the tree (the caller then tries __push_dl_task). cpu and id name the
// timer that fired: one that is no longer p's armed timer (left behind
// when p left SCHED_DEADLINE) does nothing.
func (r *RQ) DLTimerFire(c *percpu.Ctx, p *task.Task, cpu int, id uint64) bool {
	r.AssertHeld(c)
	dl := &p.SE.DL
	if !dl.TimerQueued || dl.TimerCPU != cpu || dl.TimerID != id {
		return false
	}
	dl.TimerQueued = false
	if !p.DLTask() || !dl.Throttled {
		return false
	}
	r.UpdateClock(c)
	if !p.Queued() || !p.SE.Queued {
		r.replenishDLEntity(c, p)
		return false
	}
	r.replenishDLEntity(c, p)
	r.enqueueDLEntity(p)
	if r.CoreEnabled() && !c.Bug(bugs.CoreReplenishStalePick) {
		// Finding F16's fix: the task was in core_tree all along
		// (throttling dequeues the dl entity only), so no
		// sched_core_enqueue moves core_task_seq; without this, a
		// sibling's core-wide selection made while it was throttled
		// stays valid for the fast path, and a re-pick that takes it
		// idles with this task queued.
		r.Core.Leader.Core.TaskSeq++
	}
	if r.donor.DLTask() {
		r.wakeupPreemptDL(c, p, r.donor)
	} else {
		r.ReschedCurr(c)
	}
	return true
}

// wakeupPreemptDL is wakeup_preempt() for a DL task or a DL donor: a DL
// task preempts any other class; between two DL tasks the earlier
// deadline wins (dl_entity_preempt), and an equal one reschedules when
// check_preempt_equal_dl says so (the donor could move and p could not,
// PreemptEqualDL), unless need_resched is already set.
func (r *RQ) wakeupPreemptDL(c *percpu.Ctx, p, donor *task.Task) {
	switch {
	case !p.DLTask():
		// a lower class never preempts a DL donor
	case !donor.DLTask():
		r.ReschedCurr(c)
	case dlTimeBefore(p.SE.DL.Deadline, donor.SE.DL.Deadline):
		r.ReschedCurr(c)
	case p.SE.DL.Deadline == donor.SE.DL.Deadline && !r.NeedResched() && r.PreemptEqualDL != nil && r.PreemptEqualDL(c, r, p):
		c.Inc(stats.DLEqualPreempts)
		r.ReschedCurr(c)
	}
}

// DLBandwidth is the root domain's dl_bw (one root domain: no cpusets):
// bw is the per-CPU limit (sched_rt_runtime_us / sched_rt_period_us, 95%
// by default) and TotalBW the sum of the admitted tasks' dl_bw. Guarded
// by its own lock (dl_b->lock), taken inside p's pi_lock and rq lock.
type DLBandwidth struct {
	lock    spinlock.Lock
	bw      int64 // dl_b->bw
	cpus    int   // dl_bw_cpus(): every CPU (no hotplug, one root domain)
	totalBW int64 // dl_b->total_bw: protected by lock
}

// DefaultDLBW is to_ratio(1 s, 950 ms): the default global RT/DL limit.
var DefaultDLBW = task.ToRatio(1_000_000_000, 950_000_000)

// NewDLBandwidth returns the root domain's bandwidth for cpus CPUs.
func NewDLBandwidth(cpus int) *DLBandwidth {
	b := &DLBandwidth{bw: DefaultDLBW, cpus: cpus}
	b.lock.Init(spinlock.ClassOther, 1<<20)
	return b
}

// DLOverflow is __dl_overflow() with dl_bw_capacity() of cpus full-size
// CPUs: cap_scale(bw, cpus << SCHED_CAPACITY_SHIFT) < total - old + new.
func DLOverflow(bw int64, cpus int, total, oldBW, newBW int64) bool {
	return bw*int64(cpus) < total-oldBW+newBW
}

// SchedDLOverflow is sched_dl_overflow(): admit p's change from its
// current policy to policy with parameters a, updating total_bw, or
// refuse it (-EBUSY: false). Leaving SCHED_DEADLINE frees the bandwidth
// at once (the kernel waits for the 0-lag time: no inactive timer here).
func (b *DLBandwidth) SchedDLOverflow(c *percpu.Ctx, p *task.Task, policy task.Policy, a task.DLParams) bool {
	period := a.Period
	if period == 0 {
		period = a.Deadline
	}
	var newBW int64
	if policy.DL() {
		newBW = task.ToRatio(period, a.Runtime)
	}
	if newBW == p.SE.DL.BW && p.DLTask() {
		return true
	}
	b.lock.Lock(c.CPU)
	defer b.lock.Unlock(c.CPU)
	switch {
	case policy.DL() && !p.DLTask():
		if DLOverflow(b.bw, b.cpus, b.totalBW, 0, newBW) {
			return false
		}
		b.totalBW += newBW
	case policy.DL() && p.DLTask():
		if DLOverflow(b.bw, b.cpus, b.totalBW, p.SE.DL.BW, newBW) {
			return false
		}
		b.totalBW += newBW - p.SE.DL.BW
	case !policy.DL() && p.DLTask():
		b.totalBW -= p.SE.DL.BW
	}
	return true
}

// Release frees an exiting DL task's bandwidth (task_non_contending on
// TASK_DEAD, without the 0-lag wait).
func (b *DLBandwidth) Release(c *percpu.Ctx, p *task.Task) {
	b.lock.Lock(c.CPU)
	b.totalBW -= p.SE.DL.BW
	b.lock.Unlock(c.CPU)
}

// PeekTotal returns total_bw without the lock (reports, stopped machine).
func (b *DLBandwidth) PeekTotal() int64 { return b.totalBW }

// This file holds the scheduling-policy checks of the classes' order
// (invariant 65): a queued RT or deadline task that pick_next_task would
// take before rq->donor gets the CPU, or at least a reschedule.

package rq

import (
	"fmt"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/task"
)

// Outranks reports whether p, queued on a runqueue whose rq->donor is d,
// comes strictly before d in the order pick_next_task follows between
// the RT and deadline classes: a deadline task (in the dl tree) before
// any other class, the earlier deadline between two (dl_entity_preempt);
// an RT task before a fair or idle donor, the smaller prio between two.
// Equal ranks never outrank (wakeup_preempt_rt and dl_entity_preempt are
// strict). A fair p never outranks here: EEVDF is not a ranking. The
// comparison is with the donor, never with the execution context: the
// kernel judges a proxy by its scheduling context (wakeup_preempt and
// sched_tick read rq->donor), and an owner running for an RT donor is
// itself of any class. idle is the runqueue's idle task, which every RT
// or DL task outranks.
func Outranks(p, d, idle *task.Task) bool {
	switch {
	case p == d:
		return false
	case p.SE.Policy.DL():
		if !p.SE.DL.OnDLRQ {
			return false // throttled: off the tree until its dl_timer
		}
		return d == idle || !d.SE.Policy.DL() || dlTimeBefore(p.SE.DL.Deadline, d.SE.DL.Deadline)
	case p.SE.Policy.RT():
		if d == idle {
			return true
		}
		if d.SE.Policy.DL() {
			return false
		}
		return !d.SE.Policy.RT() || p.SE.Prio < d.SE.Prio
	}
	return false
}

// BestHiClass returns the queued task the RT and deadline classes would
// pick first (the leftmost of the dl tree, else the best RT task), or
// nil when both are empty. Caller holds the rq lock.
func (r *RQ) BestHiClass(c *percpu.Ctx) *task.Task {
	r.AssertHeld(c)
	return r.PeekBestHiClass()
}

// PeekBestHiClass is BestHiClass without the lock: for the audit, which
// runs with every CPU parked.
func (r *RQ) PeekBestHiClass() *task.Task {
	if len(r.dl) > 0 {
		return r.pickNextDLEntity()
	}
	var best *task.Task
	for _, t := range r.rt {
		if best == nil || better(t, best) {
			best = t
		}
	}
	return best
}

// checkWakeupPreempt is invariant 65 right after wakeup_preempt (rq lock
// held): p, just enqueued here, outranks the donor only if the donor's
// execution context has TIF_NEED_RESCHED now. The kernel's promise is
// immediate: wakeup_preempt (C ≈L2190) calls resched_curr when p's class
// is above the donor's, wakeup_preempt_rt when p->prio < donor->prio,
// wakeup_preempt_dl when dl_entity_preempt(p, donor). A throttled DL
// task is not required to preempt (it is off the tree).
func (r *RQ) checkWakeupPreempt(c *percpu.Ctx, p *task.Task) {
	d := r.donor
	if !p.SE.Queued || p.SE.QueueCPU != r.CPU || !Outranks(p, d, r.Idle) || r.NeedResched() {
		return
	}
	c.Warn(check.InvDonorOutranked, p.ID, p.String(),
		"wakeup_preempt on cpu%d left %v (%s) queued behind donor %v (%s) without need_resched: the higher-ranked task waits until something else reschedules",
		r.CPU, p, RankString(p), d, RankString(d))
}

// RankString says a task's class rank, for messages.
func RankString(p *task.Task) string {
	switch {
	case p.SE.Policy.DL():
		return fmt.Sprintf("deadline, abs deadline %d", p.SE.DL.Deadline)
	case p.SE.Policy.RT():
		return fmt.Sprintf("rt, prio %d", p.SE.Prio)
	case p.SE.Policy.Fair():
		return "fair"
	}
	return "idle"
}

// This file holds the scheduling-policy checks that follow the CPU's own
// ticks and picks: invariant 65 (donor-outranked) at the tick.

package cpu

import (
	"fmt"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/rq"
)

// checkDonorOutranked is invariant 65 at the tick, under the rq lock the
// tick holds: a queued RT or deadline task that outranks rq->donor
// (rq.Outranks: class, RT prio, deadline; the donor, not the execution
// context, is the judge, as in wakeup_preempt) may go without
// TIF_NEED_RESCHED on rq->curr for less than a tick. wakeup_preempt's
// immediate promise is checked where it runs (rq.CheckPreemptCurr);
// this catches every other way a task gets queued here or the donor
// loses rank: a push or pull, a migration, a replenishment, a priority
// change, a path that forgets wakeup_preempt or resched_curr.
//
// The time starts at the first tick that sees the donor outranked with
// no reschedule pending (cp.outrankedSince) and is reset by every pick
// (__schedule gives the best task the donor's place) and by every tick
// that finds need_resched set or nobody outranking the donor; the next
// tick a full tick later reports. Cases the kernel allows:
//   - the stopper is queued (cp.stopWork): stop_sched_class is above
//     every class and the idle task stands in for it as the donor;
//   - core scheduling: a task whose cookie is not the core's may wait
//     behind its sibling's choice (sched_core_find in pick_next_task
//     takes the best task with the core cookie, or idles);
//   - a throttled deadline task is off the dl tree (rq.Outranks).
//
// An idle CPU does not tick (NOHZ); a wake-up onto it is covered by
// wakeup_preempt's check (every RT or DL task outranks the idle donor).
func (cp *CPU) checkDonorOutranked() {
	c, r := cp.c, cp.rq
	d := r.Donor(c)
	q := r.BestHiClass(c)
	if q == nil || len(cp.stopWork) != 0 || !rq.Outranks(q, d, r.Idle) || r.NeedResched() ||
		(r.CoreEnabled() && !r.CPUCookieMatch(q)) {
		cp.outrankedSince = -1
		return
	}
	if cp.outrankedSince < 0 {
		cp.outrankedSince = c.Now
		return
	}
	if c.Now-cp.outrankedSince < cp.m.cfg.Tick {
		return
	}
	cp.m.Report(c, check.InvDonorOutranked, q, fmt.Sprintf("%v (%s) has been queued on cpu%d since t=%d ns (a tick or more) behind donor %v (%s), curr %v, with no need_resched and no __schedule: nothing will run it until something else reschedules",
		q, rq.RankString(q), r.CPU, cp.outrankedSince, d, rq.RankString(d), r.Curr()))
	cp.outrankedSince = -1
}

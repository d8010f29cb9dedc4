// This file is the per-class core-wide selection of pick_next_task()
// (CONFIG_SCHED_CORE) in its two older forms: RFC v3's (2019,
// --core-sched=v3) and the merged 5.14 series' before 7afbba119f0d
// ("sched: Fix priority inversion of cookied task with sibling",
// --bug core-rt-forceidle, design note K5); and the invariant that
// catches the latter (61, core-class).

package cpu

import (
	"fmt"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/task"
)

// corePickPerClass is the per-class core-wide selection: class by class,
// sibling by sibling from this CPU, pick_task(rq_i, class, max), starting
// over whenever a higher-priority incompatible max appears. When this
// CPU has no task of a class and need_sync is false, the class is
// skipped for every sibling ("if there weren't no cookies; we don't need
// to bother with the other siblings"), and an untagged first pick here
// ends the selection at once. Both forms predate proxy execution: the
// re-pick for a blocked donor's owner (sched_core_proxy_pick) takes the
// reference's restart_multi in corePickNextTask instead (the model's
// choice).
//
// Under --core-sched=v3 it is RFC v3's: two passes (the model's RT pass
// takes a queued DL task first), v3's prio_less and CORESCHED_STALL_FIX.
// Under --bug core-rt-forceidle it is 5.14's before 7afbba119f0d
// (LKML 20201117232003.3580179-11, -tip 10/32, whose minus side shows the
// loop; without Joel's interim "class == &fair_sched_class" test, which
// 10/32 also removes): for_each_class (DL, RT, fair), the merged prio_less
// with min_vruntime_fi (in_fi = fi_before), the original comparison in
// pick_task's cookie-0 branch (the stall fix was never merged). The skip
// is K5: with this CPU's RT class empty, a sibling's untagged RT task is
// never looked at, a tagged CFS task here becomes max and the RT sibling
// is forced idle.
func (cp *CPU) corePickPerClass(needSync, fiBefore bool) *task.Task {
	c, r := cp.c, cp.rq
	v3 := cp.m.cfg.CoreSched == CoreV3
	less := func(a *task.Task, ra *rq.RQ, b *task.Task, rb *rq.RQ) bool {
		return rq.PrioLess(c, a, ra, b, rb, fiBefore)
	}
	classes := []func(ri *rq.RQ) *task.Task{
		func(ri *rq.RQ) *task.Task { return ri.PickTaskOf(c, rq.ClassDL) },
		func(ri *rq.RQ) *task.Task { return ri.PickTaskOf(c, rq.ClassRT) },
		func(ri *rq.RQ) *task.Task { return ri.PickTaskOf(c, rq.ClassFair) },
	}
	stallFix := false
	if v3 {
		less = func(a *task.Task, ra *rq.RQ, b *task.Task, rb *rq.RQ) bool {
			return rq.PrioLessV3(c, a, ra, b, rb)
		}
		classes = []func(ri *rq.RQ) *task.Task{
			func(ri *rq.RQ) *task.Task { return ri.PickClass(c, true) },
			func(ri *rq.RQ) *task.Task { return ri.PickClass(c, false) },
		}
		stallFix = cp.stallFix()
	}
	core := r.Core.Leader
	sibs := r.Core.Siblings
	start := 0
	for k, ri := range sibs {
		ri.Core.Pick = nil
		if ri == r {
			start = k
		}
	}
	var max, first *task.Task
	var rqMax, rqFirst *rq.RQ
	// The loop is "a linear max-filter ... bounded in execution time":
	// every restart takes a strictly higher max. Under a compare that is
	// not a strict order (deadline ties as the kernel compares them,
	// --bug core-dl-tie: finding F14) two siblings' tasks outrank each
	// other and the kernel's loop never ends, holding the core lock; the
	// model reports it instead.
	restarts, maxRestarts := 0, 4*len(sibs)+8
classes:
	for _, class := range classes {
	again:
		for k := range sibs {
			ri := sibs[(start+k)%len(sibs)]
			if ri.Core.Pick != nil {
				continue
			}
			p := cp.pickTaskPerClass(ri, class(ri), max, rqMax, less, stallFix)
			if p == nil {
				if ri == r && !needSync {
					break // next class
				}
				continue
			}
			if ri == r && !needSync && p.CoreCookie == 0 {
				// No task_vruntime_update here: 7afbba119f0d added it to
				// the unconstrained pick "for robustness" (inferred: the
				// pre-fix fast exit did none).
				r.Core.PickLeader = true
				return p
			}
			ri.Core.Pick = p
			if first == nil && !p.Idle {
				first, rqFirst = p, ri
			}
			if max == nil || !rq.CookieMatch(max, p) {
				old := max
				core.Core.Cookie = p.CoreCookie
				max, rqMax = p, ri
				if old != nil {
					if restarts++; restarts > maxRestarts {
						cp.m.Report(c, check.InvCoreTieMax, p, fmt.Sprintf("%s core pick on cpu%d restarted %d times: %v (cpu%d, cookie %d) and %v (cookie %d) each outrank the other (prio_less holds both ways): the max-filter never ends", map[bool]string{true: "v3", false: "per-class (5.14 before 7afbba119f0d)"}[v3], r.CPU, restarts, p, ri.CPU, p.CoreCookie, old, old.CoreCookie))
						break classes
					}
					for _, rj := range sibs {
						if rj != ri {
							rj.Core.Pick = nil
						}
					}
					goto again
				}
				needSync = true
			}
		}
	}
	if !needSync {
		// The idle class (for_each_class ends with it): this CPU had
		// nothing in any class and need_sync is still false, so its
		// pick_task gives the idle task, untagged, and the early exit
		// takes it: no sibling was looked at (nobody has a pick). Before
		// this exit the model forced busy siblings idle here.
		r.Core.PickLeader = true
		return r.Idle
	}
	// The idle class: whatever sibling is still without a pick idles.
	occ := 0
	for _, ri := range sibs {
		if ri.Core.Pick == nil {
			ri.Core.Pick = ri.Idle
		}
		ri.Core.PickLeader = ri.Core.Pick == max
		if cp.countForcedIdle(core, ri, fiBefore) {
			occ++
		}
	}
	if !v3 {
		// 5.14 counted occupation and forced idle inside the loop (a
		// restart reset them); the count over the final picks is the
		// same. Invariant 52 is not checked: this pick_task gives ties
		// to the tagged candidate (v3's original comparison, K1's).
		if max != nil {
			cp.checkCoreClass(max)
		}
		return cp.endCorePick(core, occ, fiBefore, core.Core.Cookie, true)
	}
	if first != nil && max != nil {
		cp.checkTieMax(first, rqFirst, max, rqMax, rq.PrioLessV3(c, first, rqFirst, max, rqMax))
	}
	// v3 has no min_vruntime_fi: siblings are rescheduled as if forced
	// idle had been on before. Invariant 61 is not checked: v3's loop
	// has K5's skip (the fix is 2021's).
	return cp.endCorePick(core, occ, true, core.Core.Cookie, true)
}

// pickTaskPerClass is pick_task(rq, class, max[, in_fi]) of v3 and 5.14
// with classPick = class->pick_task(rq) (nil: nothing to pick in this
// class) and less the form's prio_less. stallFix is v3's
// CORESCHED_STALL_FIX.
func (cp *CPU) pickTaskPerClass(ri *rq.RQ, classPick, max *task.Task, rqMax *rq.RQ, less func(a *task.Task, ra *rq.RQ, b *task.Task, rb *rq.RQ) bool, stallFix bool) *task.Task {
	if classPick == nil {
		return nil
	}
	c, r := cp.c, cp.rq
	cookie := r.Core.Leader.Core.Cookie
	if cookie == 0 {
		// If class_pick is tagged, return it only if it has higher
		// priority than max.
		var maxIsHigher bool
		if stallFix {
			maxIsHigher = max != nil && !less(max, rqMax, classPick, ri)
		} else {
			maxIsHigher = max != nil && less(classPick, ri, max, rqMax)
		}
		if classPick.CoreCookie != 0 && maxIsHigher {
			return ri.Idle
		}
		return classPick
	}
	if rq.CookieEquals(classPick, cookie) {
		return classPick
	}
	cookiePick := ri.SchedCoreFind(c, cookie)
	if cookiePick == nil {
		cookiePick = ri.Idle
	}
	// class_pick beats max and the cookie pick: it is the core's highest
	// priority so far and must be selected.
	if less(cookiePick, ri, classPick, ri) && (max == nil || less(max, rqMax, classPick, ri)) {
		return classPick
	}
	return cookiePick
}

// checkCoreClass is invariant 61, after a core-wide selection whose max
// (the task the selection ranked highest) is max: no sibling the pick
// left forced idle (idle with tasks queued) has a pickable task of a
// higher class than max. The kernel's selection ranks each sibling's
// best task against max (prio_less orders the classes first), so a
// higher class is max, or ties it, or shares its cookie and runs; only a
// selection that never looked at a sibling's class can leave one
// behind (K5). On two threads a core this is "no CPU of the core is
// given a task of a lower class than a task left queued on a forced-idle
// sibling"; on more, a sibling may run a lower class that matches the
// max's cookie while another sibling's task, below max, waits: that is
// the kernel's rule, so the check ranks against max.
func (cp *CPU) checkCoreClass(max *task.Task) {
	r := cp.rq
	top := prioClass(r.TaskPrio(max))
	for _, ri := range r.Core.Siblings {
		if ri.Core.Pick != ri.Idle || ri.NrRunning() == 0 {
			continue
		}
		// DL and RT: a fair task can outrank only an idle max, which a
		// selection never makes while a sibling has a task to pick; and
		// the fair pick may dequeue delayed entities, which a check
		// must not do.
		for _, cls := range [2]rq.SchedClass{rq.ClassDL, rq.ClassRT} {
			p := ri.PickTaskOf(cp.c, cls)
			if p == nil || prioClass(ri.TaskPrio(p)) >= top {
				continue
			}
			cp.m.Report(cp.c, check.InvCoreClass, p, fmt.Sprintf("core pick on cpu%d: %v (cookie %d, prio %d) left queued on forced-idle cpu%d while the core's max is %v (cpu%d, cookie %d, prio %d), of a lower class", r.CPU, p, p.CoreCookie, ri.TaskPrio(p), ri.CPU, max, max.CPU(), max.CoreCookie, r.TaskPrio(max)))
			return
		}
	}
}

// prioClass ranks a __task_prio by class: deadline, RT, fair, idle.
func prioClass(prio int) int {
	switch {
	case prio < 0:
		return 0
	case prio < task.MaxRTPrio:
		return 1
	case prio < task.IdlePrio:
		return 2
	}
	return 3
}

// This file mirrors kernel/sched/core.c's core scheduling (CONFIG_SCHED_CORE):
// the core-wide pick_next_task() in the reference's form (5.14's selection
// plus the proxy-execution hooks sched_core_proxy_pick, sched_core_swap_pick
// and sched_core_retain_donor) and RFC v3's, forced idle, the sibling IPIs,
// sched_core_update_cookie(); and the cookie invariants.

package cpu

import (
	"fmt"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/proxy"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// CoreMode selects core scheduling and its pick.
type CoreMode uint8

// Core-scheduling modes.
const (
	CoreOff CoreMode = iota // no core scheduling (the default)
	Core514                 // the merged core-wide pick (5.14; the reference's, with its proxy hooks)
	CoreV3                  // RFC v3's pick_task / pick_next_task (2019), CORESCHED_STALL_FIX as a feature
)

func (m CoreMode) String() string {
	switch m {
	case Core514:
		return "5.14"
	case CoreV3:
		return "v3"
	}
	return "off"
}

// ParseCoreMode reads --core-sched: off, on (= 5.14), 5.14, v3.
func ParseCoreMode(s string) (CoreMode, error) {
	switch s {
	case "off", "":
		return CoreOff, nil
	case "on", "5.14", "true":
		return Core514, nil
	case "v3":
		return CoreV3, nil
	}
	return CoreOff, fmt.Errorf("core scheduling %q: want off, on, 5.14 or v3", s)
}

// enableCoreSched makes every SMT sibling share its core leader's rq lock
// (rq_lockp() returning &rq->core->__lock) and sets rq->core. At boot,
// before any CPU runs: the lock order key stays (core, CPU), so the shared
// lock orders by its core.
func (m *Machine) enableCoreSched() {
	for i, r := range m.rqs {
		sib := m.topo.Siblings(i)
		sibs := make([]*rq.RQ, len(sib))
		for k, j := range sib {
			sibs[k] = m.rqs[j]
		}
		r.EnableCore(m.rqs[m.topo.CoreLeader(i)], sibs)
		r.Core.NoFITick = m.cfg.CoreSched == CoreV3
		r.Core.NoFIAcct = m.cfg.CoreSched == CoreV3
	}
}

// schedCoreFlip is __sched_core_flip(on): core by core, in the order of
// their first CPU, under sched_core_lock. The caller holds
// sched_core_mutex (coreFlipMu) and no rq lock. No cookie is held when
// it runs (the first get flips on before its cookie is installed, the
// last put's work flips off after every cookie is gone), so every
// core_tree is empty (sched_core_assert_empty, in CoreFlipLocked).
func (m *Machine) schedCoreFlip(c *percpu.Ctx, on bool) {
	for i, r := range m.rqs {
		sibs := r.Core.Siblings
		if len(sibs) == 0 || sibs[0].CPU != i {
			continue
		}
		rq.SchedCoreLock(c, sibs)
		rq.CoreFlipLocked(c, sibs, on)
		if !on && !c.Bug(bugs.CoreOffForcedIdle) {
			// The proposed fix (--bug core-off-forced-idle restores
			// the reference, which kicks nobody): a sibling the last
			// core-wide pick left forced idle, tasks queued, picks
			// again, the plain way.
			for _, r := range sibs {
				if r.Curr() == r.Idle && r.NrRunning() > 0 {
					r.ReschedCurr(c)
				}
			}
		}
		rq.SchedCoreUnlock(c, sibs)
		c.Inc(stats.CoreFlips)
	}
	x := int32(0)
	if on {
		x = 1
	}
	c.Emit(trace.EvCoreFlip, x, 0, 0, 0)
}

// lockCoreMutex is mutex_lock(&sched_core_mutex): a CPU that finds it
// held waits (cpu_relax, so that a serial run hands the turn on).
func (m *Machine) lockCoreMutex(c *percpu.Ctx) {
	for !m.coreFlipMu.TryLock() {
		c.Relax()
	}
}

// schedCoreGet is sched_core_get(): a new cookie reference. The fast
// path increments sched_core_count unless it is 0; the first reference
// takes sched_core_mutex and enables core scheduling
// (__sched_core_enable) before the count moves. It reports whether it
// flipped.
func (m *Machine) schedCoreGet(c *percpu.Ctx) bool {
	for {
		n := m.coreCount.Load()
		if n == 0 {
			break
		}
		if m.coreCount.CompareAndSwap(n, n+1) {
			return false // atomic_inc_not_zero
		}
	}
	m.lockCoreMutex(c)
	defer m.coreFlipMu.Unlock()
	flipped := false
	if m.coreCount.Load() == 0 && !m.coreOn {
		m.coreOn = true
		m.schedCoreFlip(c, true)
		flipped = true
	}
	m.coreCount.Add(1)
	return flipped
}

// schedCorePut is sched_core_put(): drop a cookie reference. It
// decrements sched_core_count unless that would take it to 0
// (atomic_add_unless); the last reference is left to the put work
// (schedule_work of __sched_core_put), which corePutWork runs.
func (m *Machine) schedCorePut() {
	for {
		n := m.coreCount.Load()
		if n == 1 {
			m.corePutQueued.Store(true)
			return
		}
		if m.coreCount.CompareAndSwap(n, n-1) {
			return
		}
	}
}

// corePutWork is __sched_core_put, sched_core_put's work:
// atomic_dec_and_mutex_lock, and __sched_core_disable when the count
// reaches 0 (a get that came since keeps it above). Run from a CPU's
// tick, with no lock held. It reports whether it flipped.
func (m *Machine) corePutWork(c *percpu.Ctx) bool {
	if !m.corePutQueued.CompareAndSwap(true, false) {
		return false
	}
	m.lockCoreMutex(c)
	defer m.coreFlipMu.Unlock()
	if m.coreCount.Add(-1) != 0 || !m.coreOn {
		return false
	}
	m.coreOn = false
	m.schedCoreFlip(c, false)
	return true
}

// coreTagRound is one round of the stress toggler, a user-space process
// with prctl(PR_SCHED_CORE): untag takes every task's cookie away
// (sched_core_update_cookie to 0, whose put frees the cookie when its
// last task drops it; the last put's work then switches core scheduling
// off), and the next round gives the cookies back (the first get
// switches it on again). The harness's coreflip runs one round; so does
// the injector, once per --core-sched-toggle-interval. It reports
// whether the round ran (another round in progress: no).
func (m *Machine) coreTagRound(c *percpu.Ctx, untag bool) bool {
	if !m.coreTagMu.TryLock() {
		return false
	}
	defer m.coreTagMu.Unlock()
	if m.coreUntagged == untag {
		return false
	}
	m.coreUntagged = untag
	if len(m.coreDropped) < len(m.tasks) {
		m.coreDropped = append(m.coreDropped, make([]uint64, len(m.tasks)-len(m.coreDropped))...)
	}
	for id := 1; id < len(m.tasks); id++ {
		p := m.tasks[id]
		if untag {
			if !p.TryGetTaskStruct() {
				continue // released: its cookie went with it
			}
			if old := m.setCookie(c, p, 0); old != 0 {
				m.coreDropped[id] = old
			}
			p.PutTaskStruct()
			continue
		}
		ck := m.coreDropped[id]
		m.coreDropped[id] = 0
		if ck == 0 || !p.TryGetTaskStruct() {
			continue
		}
		m.setCookie(c, p, ck)
		p.PutTaskStruct()
	}
	c.Inc(stats.CoreTagRounds)
	return true
}

// coreToggle is the harness's coreflip: one toggler round (untag for
// off), then, for off, the put work at once, as if the kworker ran
// right away. It reports whether core scheduling was flipped.
func (m *Machine) coreToggle(c *percpu.Ctx, on bool) bool {
	m.lockCoreMutex(c)
	was := m.coreOn
	m.coreFlipMu.Unlock()
	m.coreTagRound(c, !on)
	if !on {
		m.corePutWork(c)
	}
	m.lockCoreMutex(c)
	defer m.coreFlipMu.Unlock()
	return m.coreOn != was
}

// maybeCoreToggle runs a toggler round once per CoreToggleEvery of
// virtual time (stress --core-sched-toggle-interval), from the tick path
// of whichever CPU first passes the due time, holding no lock: rounds
// alternate between taking every cookie away and giving them back.
func (cp *CPU) maybeCoreToggle() {
	m, c := cp.m, cp.c
	due := m.coreFlipDue.Load()
	if c.Now < due || !m.coreFlipDue.CompareAndSwap(due, c.Now+m.cfg.CoreToggleEvery) {
		return
	}
	if !m.coreTagMu.TryLock() {
		return
	}
	untag := !m.coreUntagged
	m.coreTagMu.Unlock()
	m.coreTagRound(c, untag)
}

// CoreSched reports the core-scheduling mode.
func (m *Machine) CoreSched() CoreMode { return m.cfg.CoreSched }

// stallFix is sched_feat(CORESCHED_STALL_FIX), unless --bug
// coresched-stall restores v3's original comparison.
func (cp *CPU) stallFix() bool {
	return cp.m.cfg.CoreStallFix && !cp.c.Bug(bugs.CoreschedStall)
}

// corePickNextTask is pick_next_task() with sched_core_enabled(rq): the
// fast path takes the pick a sibling made for this CPU; otherwise this
// CPU picks for the whole core. The rq (= core) lock is held.
func (cp *CPU) corePickNextTask(pick int) *task.Task {
	c, r, m := cp.c, cp.rq, cp.m
	core := r.Core.Leader
	// Fast path: no {en,de}queue since a sibling picked for us, and we
	// have not scheduled that pick yet.
	if core.Core.PickSeq == core.Core.TaskSeq && core.Core.PickSeq != r.Core.SchedSeq && r.Core.Pick != nil {
		r.Core.SchedSeq = core.Core.PickSeq
		next := r.Core.Pick
		r.Core.Pick = nil
		c.Inc(stats.CoreFastPicks)
		if core.Core.ForceidleCount > 0 && next == r.Idle {
			cp.queueCoreBalance()
		}
		return next
	}
	// prev_balance: the model's newidle pass when this rq is empty.
	if r.NrRunning() == 0 && pick < 4 {
		cp.newidleBalance()
		if cp.coreFlippedOff() {
			return r.PickNextTask(c)
		}
	}
	c.Inc(stats.CorePicks)
	needSync := core.Core.Cookie != 0
	core.Core.Cookie = 0
	fiBefore := false
	if core.Core.ForceidleCount > 0 {
		// sched_core_account_forceidle, then the reset.
		r.SchedCoreAccountForceidle(c)
		r.ResetForceidle()
		needSync, fiBefore = true, true
	}
	core.Core.TaskSeq++

	var owner *task.Task
	donor := r.Donor(c)
	if c.Proxy && r.Core.PickBlockedDonor {
		// sched_core_proxy_pick(): the last core pick resolved to a
		// blocked donor whose owner mismatched the core cookie.
		if !donor.IsBlocked() {
			m.Report(c, check.InvCurrDonor, donor, fmt.Sprintf("core re-pick on cpu%d for donor %v, which is not is_blocked (WARN_ON_ONCE)", r.CPU, donor))
		}
		donor.SetBlockedDonor(nil)
		owner = proxy.FindProxyTask(c, m, r, donor)
		if cp.coreFlippedOff() {
			r.Core.PickBlockedDonor = false
			return r.PickNextTask(c)
		}
		if owner == nil || owner == r.Idle {
			// Something changed in the chain (the lock may have been
			// dropped): pick as usual.
			r.Core.PickBlockedDonor = false
			core.Core.TaskSeq++
			owner = nil
			donor = r.Donor(c)
		}
	}
	if owner == nil && (m.cfg.CoreSched == CoreV3 || c.Bug(bugs.CoreRTForceidle)) {
		return cp.corePickPerClass(needSync, fiBefore)
	}
	if owner == nil && !needSync {
		next := r.PickNextTask(c)
		if next.CoreCookie == 0 {
			r.Core.Pick = nil
			r.Core.PickLeader = true
			r.TaskVruntimeUpdate(c, next, false)
			return next
		}
	}

	// restart_multi: each sibling's own best task; the max leads.
	sibs := r.Core.Siblings
	start := 0
	for k, ri := range sibs {
		if ri == r {
			start = k
		}
	}
	var max *task.Task
	var rqMax *rq.RQ
	for k := range sibs {
		ri := sibs[(start+k)%len(sibs)]
		p := ri.PickNextTask(c)
		ri.Core.Pick = p
		ri.Core.PickLeader = false
		if max == nil || rq.PrioLess(c, max, rqMax, p, ri, fiBefore) {
			max, rqMax = p, ri
		}
	}
	rqMax.Core.PickLeader = true
	sel := max // what the selection ranked highest (a proxy re-pick puts the owner in its place)
	if first := r.Core.Pick; !first.Idle {
		cp.checkTieMax(first, r, max, rqMax, rq.PrioLess(c, first, r, max, rqMax, fiBefore))
	}
	if owner != nil {
		if r.Core.PickLeader && r.Core.Pick == donor {
			// The same leader and donor as last time: the owner, which
			// executes, takes the donor's place and its cookie governs.
			rqMax.Core.Pick = owner
			max = owner
		} else {
			if rqMax != r && r.Core.Pick == donor {
				cp.checkRepickMax(donor, max, rqMax, fiBefore)
			}
			r.Core.PickBlockedDonor = false
		}
	}
	cookie := max.CoreCookie
	core.Core.Cookie = cookie

	occ := 0
	for _, ri := range sibs {
		p := ri.Core.Pick
		if !rq.CookieEquals(p, cookie) {
			p = nil
			if cookie != 0 {
				p = ri.SchedCoreFind(c, cookie)
			}
			if p == nil {
				p = ri.Idle
			}
		}
		ri.Core.Pick = p
		if cp.countForcedIdle(core, ri, fiBefore) {
			occ++
		}
	}
	cp.checkCoreClass(sel)
	return cp.endCorePick(core, occ, fiBefore, cookie, !r.Core.PickBlockedDonor)
}

// coreFlippedOff is the re-check proposed by finding F7 (docs/findings.md):
// pick_next_task tested sched_core_enabled(rq) on entry, but prev_balance
// (newidle balancing) and the proxy re-pick drop the rq lock, and a
// __sched_core_flip(false) in that window leaves this CPU holding its own
// __lock while the rest of the core-wide pick reads and writes its
// siblings' runqueues and the core's state. With the re-check the pick
// goes the plain way (__pick_next_task); --bug core-flip-repick restores
// the reference, which carries on.
func (cp *CPU) coreFlippedOff() bool {
	if cp.rq.CoreEnabled() || cp.c.Bug(bugs.CoreFlipRepick) {
		return false
	}
	cp.c.Inc(stats.CoreFlipRepicks)
	return true
}

// checkTieMax is invariant 52, after a core-wide selection: the first
// task the pick took (this CPU's own best, or v3's first max) is
// untagged, the max the core ended with is tagged, so the untagged one is
// forced idle or swapped out for a tagged one; that takes a max of
// strictly higher priority (firstLess: prio_less(first, max)). v3's
// pick_task says so in its comment ("return it only if it has higher
// priority than max"); without CORESCHED_STALL_FIX its test gives ties to
// the tagged candidate (K1, --bug coresched-stall).
func (cp *CPU) checkTieMax(first *task.Task, rqFirst *rq.RQ, max *task.Task, rqMax *rq.RQ, firstLess bool) {
	if first.CoreCookie != 0 || max.CoreCookie == 0 || firstLess {
		return
	}
	cp.m.Report(cp.c, check.InvCoreTieMax, first, fmt.Sprintf("core pick on cpu%d: untagged %v (cpu%d), chosen first, lost the core to tagged %v (cpu%d, cookie %d), which does not have higher priority (prio_less(%v, %v) is false)", cp.rq.CPU, first, rqFirst.CPU, max, rqMax.CPU, max.CoreCookie, first, max))
}

// checkRepickMax is invariant 52 for the proxy re-pick
// (sched_core_proxy_pick): this CPU still picks its retained donor, but
// restart_multi's max went to a sibling's task, so the owner swap is
// dropped and this CPU will be forced idle behind the owner's cookie.
// That is right only if max outranks the donor; a max that the donor
// ties or beats (prio_less(max, donor) holds as well) means the compare
// is not a strict order, and the re-pick can resolve differently on each
// sibling (the reference's deadline tie, finding F14: --bug core-dl-tie).
func (cp *CPU) checkRepickMax(donor, max *task.Task, rqMax *rq.RQ, fiBefore bool) {
	if !rq.PrioLess(cp.c, max, rqMax, donor, cp.rq, fiBefore) {
		return
	}
	cp.m.Report(cp.c, check.InvCoreTieMax, donor, fmt.Sprintf("proxy re-pick on cpu%d for donor %v: the core's max went to %v on cpu%d, which does not outrank the donor (prio_less(%v, %v) holds too): the owner swap is dropped and cpu%d is forced idle behind a task that does not beat its donor", cp.rq.CPU, donor, max, rqMax.CPU, max, donor, cp.rq.CPU))
}

// coreReschedSiblings is the end of the core pick: refresh the
// min_vruntime_fi snapshots, record occupation, and IPI every sibling
// whose pick differs from what it runs.
func (cp *CPU) coreReschedSiblings(next *task.Task, occ int, fiBefore bool) {
	c, r, m := cp.c, cp.rq, cp.m
	core := r.Core.Leader
	fi := core.Core.ForceidleCount > 0
	for _, ri := range r.Core.Siblings {
		p := ri.Core.Pick
		if p == nil {
			continue
		}
		if !(fiBefore && fi) {
			ri.TaskVruntimeUpdate(c, p, fi)
		}
		p.CoreOccupation = occ
		if ri == r {
			ri.Core.Pick = nil
			continue
		}
		if !rq.CookieMatch(next, p) {
			m.Report(c, check.InvCoreCookie, p, fmt.Sprintf("core pick on cpu%d chose %v (cookie %d) for cpu%d beside %v (cookie %d) (the kernel's L1TF WARN)", r.CPU, p, p.CoreCookie, ri.CPU, next, next.CoreCookie))
		}
		if ri.Curr() == p {
			ri.Core.Pick = nil
			continue
		}
		ri.ReschedCurr(c)
		c.Inc(stats.CoreSiblingIPIs)
	}
}

// countForcedIdle accounts sibling ri's pick: a CPU left idle with tasks
// queued is forced idle (counted, and a new forced-idle sequence begins
// unless one was running). It reports whether ri runs a task.
func (cp *CPU) countForcedIdle(core, ri *rq.RQ, fiBefore bool) bool {
	if ri.Core.Pick != ri.Idle {
		return true
	}
	if ri.NrRunning() > 0 {
		core.Core.ForceidleCount++
		if !fiBefore {
			core.Core.ForceidleSeq++
		}
		cp.c.Inc(stats.CoreForcedIdle)
	}
	return false
}

// endCorePick ends a core-wide pick: the core's pick sequence, this CPU's
// pick, the siblings' reschedules, the trace event, and the forced-idle
// balancer when this CPU idles with forced idle on the core (balance:
// not while a proxy re-pick is pending).
func (cp *CPU) endCorePick(core *rq.RQ, occ int, fiBefore bool, cookie uint64, balance bool) *task.Task {
	r := cp.rq
	core.Core.PickSeq = core.Core.TaskSeq
	next := r.Core.Pick
	r.Core.SchedSeq = core.Core.PickSeq
	cp.coreReschedSiblings(next, occ, fiBefore)
	r.StartForceidle(cp.c, occ)
	cp.c.Emit(trace.EvCorePick, int32(next.ID), int32(cookie), int32(core.Core.ForceidleCount), 0)
	if balance && core.Core.ForceidleCount > 0 && next == r.Idle {
		cp.queueCoreBalance()
	}
	return next
}

// coreSwapPick is sched_core_swap_pick(): the execution context found by
// find_proxy_task does not carry the core cookie. A CPU whose pick did
// not set the cookie idles (forced idle); the leader redoes the core
// pick with the owner in the donor's place (RETRY_TASK: nil).
func (cp *CPU) coreSwapPick() *task.Task {
	c, r := cp.c, cp.rq
	core := r.Core.Leader
	c.Inc(stats.CoreCookieSwaps)
	if !r.Core.PickLeader {
		if core.Core.ForceidleCount == 0 {
			core.Core.ForceidleSeq++
		}
		core.Core.ForceidleCount++
		c.Inc(stats.CoreForcedIdle)
		idle := proxy.ReschedIdle(c, r)
		cp.queueCoreBalance()
		return idle
	}
	r.Core.PickBlockedDonor = true
	return nil
}

// queueCoreBalance is queue_core_balance(): a CPU forced idle under a
// core cookie, with tasks queued, looks for a task with that cookie to
// steal once the pick is done (sched_core_balance as a balance callback).
func (cp *CPU) queueCoreBalance() {
	r := cp.rq
	if !r.CoreEnabled() || r.Core.Leader.Core.Cookie == 0 || r.NrRunning() == 0 {
		return
	}
	r.QueueBalanceCallback(cp.c, rq.BalanceCallback{Name: "sched_core_balance", Fn: cp.m.schedCoreBalance})
}

// schedCoreBalance is sched_core_balance(): drop this rq's lock and, domain
// by domain from the smallest, try to steal a task with the core cookie
// from another CPU, until one is stolen or a reschedule is pending.
func (m *Machine) schedCoreBalance(c *percpu.Ctx, r *rq.RQ) {
	cpu := r.CPU
	r.Unlock(c)
	for _, span := range m.spans(cpu) {
		if r.NeedResched() || m.stealCookieTask(c, cpu, span) {
			break
		}
	}
	r.Lock(c)
}

// stealCookieTask is steal_cookie_task(): the CPUs of span from cpu+1 on,
// wrapping.
func (m *Machine) stealCookieTask(c *percpu.Ctx, cpu int, span []int) bool {
	start := 0
	for k, i := range span {
		if i > cpu {
			start = k
			break
		}
	}
	for k := range span {
		i := span[(start+k)%len(span)]
		if i == cpu {
			continue
		}
		if m.rqs[cpu].NeedResched() {
			break
		}
		if m.tryStealCookie(c, cpu, i) {
			return true
		}
	}
	return false
}

// tryStealCookie is try_steal_cookie(this, that): under double_rq_lock,
// if this CPU still idles under a core cookie, move the best task of
// that CPU with the cookie that is not its core_pick, curr or donor, not
// mutex-blocked, allowed here and not from a busier core
// (core_occupation), with move_queued_task_locked, and reschedule here.
func (m *Machine) tryStealCookie(c *percpu.Ctx, this, that int) bool {
	dst, src := m.rqs[this], m.rqs[that]
	rq.DoubleLock(c, dst, src)
	defer rq.DoubleUnlock(c, dst, src)
	cookie := dst.Core.Leader.Core.Cookie
	if cookie == 0 || dst.Curr() != dst.Idle {
		return false
	}
	for p := src.SchedCoreFind(c, cookie); p != nil; p = src.SchedCoreNext(c, p, cookie) {
		if p == src.Core.Pick || p == src.Curr() {
			continue
		}
		if !c.Bug(bugs.CoreStealDonor) && (p == src.Donor(c) || proxy.TaskIsBlocked(c, p)) {
			continue
		}
		if !m.isCPUAllowed(p, this) || p.CoreOccupation > dst.Idle.CoreOccupation {
			continue
		}
		reschedBrokenChain(c, src, p) // F2's fix, as for the load balancer
		src.DeactivateTask(c, p, rq.DequeueMigrating)
		rq.SetTaskCPU(c, p, this, false, trace.ReasonLoadBalance)
		dst.ActivateTask(c, p, rq.EnqueueMigrated)
		dst.ReschedCurr(c)
		c.Inc(stats.CoreSteals)
		c.Emit(trace.EvLoadBalance, int32(p.ID), int32(that), int32(this), 0)
		return true
	}
	return false
}

// coreRetainDonor is sched_core_retain_donor(): after a core re-pick that
// swapped in the owner, rq->donor stays the blocked donor.
func (cp *CPU) coreRetainDonor() bool {
	r := cp.rq
	if !r.CoreEnabled() {
		return false
	}
	retain := r.Core.PickBlockedDonor
	r.Core.PickBlockedDonor = false
	return retain
}

// checkCoreCookie is the inline half of invariant 44: next is about to
// execute here; no sibling may execute a task of another cookie, unless
// a reschedule is pending there (the IPI that takes it out of user mode
// is on its way) or the sibling is inside __schedule, which may have
// dropped the core lock mid-pick (find_proxy_task) with its prev still
// rq->curr: it runs the scheduler, not prev's code. The core lock is
// held.
func (cp *CPU) checkCoreCookie(next *task.Task) {
	r := cp.rq
	for _, ri := range r.Core.Siblings {
		if ri == r {
			continue
		}
		if cur := ri.Curr(); !rq.CookieMatch(cur, next) && !ri.NeedResched() && !cp.m.cpus[ri.CPU].inSchedule {
			cp.m.Report(cp.c, check.InvCoreCookie, next, fmt.Sprintf("%v (cookie %d) switched in on cpu%d while sibling cpu%d executes %v (cookie %d), no reschedule pending", next, next.CoreCookie, r.CPU, ri.CPU, cur, cur.CoreCookie))
			return
		}
	}
}

// auditCore is the audit's half of invariants 44 and 45, with every CPU
// parked: siblings' execution contexts share a cookie (or idle, or a
// reschedule is pending); a runnable task on a forced-idle CPU waits at
// most CoreStarveBound (under v3, whose K2/K3 starve the tagged side by
// design, untagged tasks only).
func (m *Machine) auditCore(now int64) {
	if m.auditCoreTree() {
		return
	}
	for i, r := range m.rqs {
		if r.Core.Leader != r || !r.CoreEnabled() {
			continue
		}
		var first *task.Task
		for _, ri := range r.Core.Siblings {
			cur := ri.Curr()
			if cur == ri.Idle || ri.NeedResched() {
				continue
			}
			if first != nil && !rq.CookieMatch(first, cur) {
				m.warn(nil, check.InvCoreCookie, cur.ID, cur.String(), fmt.Sprintf("core of cpu%d: %v (cookie %d) and %v (cookie %d) execute on SMT siblings at once", i, first, first.CoreCookie, cur, cur.CoreCookie))
				return
			}
			if first == nil {
				first = cur
			}
		}
	}
	for i, r := range m.rqs {
		if r.Core.Leader != r {
			continue
		}
		// Invariant 47: what the forced-idle accounting charged to tasks
		// is count x elapsed forced-idle time, up to the kernel's own
		// arithmetic (scaling by occupation, integer division).
		cs := &r.Core
		if d := cs.FIExpected - cs.FICharged; d != cs.FIAllowed {
			m.warn(nil, check.InvForceIdleAcct, -1, "", fmt.Sprintf("core of cpu%d: forced idle %d ns (count x elapsed), charged to tasks %d ns: %d ns short, the accounting's arithmetic explains %d ns", i, cs.FIExpected, cs.FICharged, d, cs.FIAllowed))
			return
		}
	}
	if m.cfg.CoreStarveBound <= 0 {
		return
	}
	for _, r := range m.rqs {
		if !r.CoreEnabled() || r.Curr() != r.Idle || r.NrRunning() == 0 {
			continue
		}
		for _, t := range r.Tasks() {
			if (t.CoreCookie != 0 && m.cfg.CoreSched == CoreV3) || t.IsBlocked() || t.State() != task.Running {
				continue
			}
			if w := now - t.SE.Runnable; w > m.cfg.CoreStarveBound {
				m.warn(nil, check.InvCoreStarve, t.ID, t.String(), fmt.Sprintf("%v (cookie %d) runnable on forced-idle cpu%d for %.1f ms (bound %.1f ms); core cookie %d", t, t.CoreCookie, r.CPU, float64(w)/1e6, float64(m.cfg.CoreStarveBound)/1e6, r.Core.Leader.Core.Cookie))
				return
			}
		}
	}
}

// setCookie is prctl(PR_SCHED_CORE)'s cookie change of p: a reference to
// the new cookie (sched_core_get, which switches core scheduling on for
// the first), sched_core_update_cookie() under task_rq_lock (the task
// leaves the core tree, takes the cookie and re-enters it; a task on a
// CPU reschedules), then the old cookie's reference is put
// (sched_core_put: the last one's work switches core scheduling off).
// It returns the old cookie (0 when nothing changed).
func (m *Machine) setCookie(c *percpu.Ctx, p *task.Task, cookie uint64) uint64 {
	if cookie != 0 {
		m.schedCoreGet(c)
	}
	p.PiLock.Lock(c.CPU)
	r := m.taskRQLock(c, p)
	var old uint64
	changed := false
	if p.State() != task.Dead && p.CoreCookie != cookie {
		old, changed = p.CoreCookie, true
		if !r.CoreEnabled() {
			// "we must have core scheduling enabled here"
			c.Warn(check.InvCoreTree, p.ID, p.String(), "sched_core_update_cookie of %v (cookie %d -> %d) on cpu%d with core scheduling disabled (WARN_ON_ONCE): a cookie reference was not counted", p, old, cookie, r.CPU)
		}
		r.SchedCoreUpdateCookie(c, p, cookie)
		if r.Curr() == p {
			r.ReschedCurr(c)
			c.Inc(stats.CoreCookieSetsRunning)
		}
		c.Inc(stats.CoreCookieSets)
		c.Emit(trace.EvCookie, int32(p.ID), int32(cookie), 0, 0)
	}
	r.Unlock(c)
	p.PiLock.Unlock(c.CPU)
	switch {
	case !changed && cookie != 0:
		m.schedCorePut() // the new cookie's reference was not taken up
	case changed && old != 0:
		m.schedCorePut()
	}
	return old
}

// opCookie is prctl(PR_SCHED_CORE, PR_SCHED_CORE_CREATE/SHARE_TO) of p
// or of the target: the cookie is Op.Prio (0: untagged).
func (cp *CPU) opCookie(p *task.Task, op *task.Op) {
	t := cp.opTarget(p, op)
	p.Exec.PC++
	if t != nil {
		cp.m.setCookie(cp.c, t, uint64(op.Prio))
	}
}

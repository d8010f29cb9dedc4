package proxy

import (
	"fmt"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// Machine is what proxy execution needs from the rest of the scheduler.
type Machine interface {
	// RQ returns cpu_rq(cpu).
	RQ(cpu int) *rq.RQ
	// WakeUpProcess is wake_up_process(): try_to_wake_up(p, TASK_NORMAL).
	WakeUpProcess(c *percpu.Ctx, p *task.Task) bool
	// Report records an invariant violation.
	Report(c *percpu.Ctx, inv check.Invariant, p *task.Task, msg string)
	// SleepingOwners says whether the [full] sleeping-owner parking is
	// built in; without it a donor of a sleeping owner is deactivated.
	SleepingOwners() bool
}

// MaxChain bounds the blocked_on walk. Plain mutexes have no cycle
// detection in the kernel (an AB-BA is a kernel bug and the walk would
// spin); proxysim bounds it and reports the cycle as a deadlock.
const MaxChain = 64

// TaskIsBlocked is task_is_blocked(): proxy execution on and blocked_on
// set, read without a lock as the kernel does. The kernel's read is plain
// (--bug blocked-on-plain-read, a data race: finding F5); the default is
// the proposed READ_ONCE.
func TaskIsBlocked(c *percpu.Ctx, p *task.Task) bool {
	if !c.Proxy {
		return false
	}
	if c.Bug(bugs.BlockedOnPlainRead) {
		return p.IsBlockedOnPlain()
	}
	return p.IsBlockedOnOnce()
}

type action int

const (
	actNone action = iota
	actActivate
	actMigrate
	actDeactivate
	actDeactivateDonor
)

// FindProxyTask is find_proxy_task(): follow donor's blocked_on chain,
// while its links are is_blocked, to a task that can run here on donor's
// behalf. It returns that task (possibly rq.curr: then only the donor
// changes), rq.Idle (when the right move is to let something land or
// resolve: proxy_resched_idle), or nil when the caller must pick again
// (the chain changed, or a migration, deactivation or activation dropped
// or changed the runqueue). The rq lock is held on entry and on return.
func FindProxyTask(c *percpu.Ctx, mach Machine, r *rq.RQ, donor *task.Task) *task.Task {
	r.AssertHeld(c)
	c.Inc(stats.FindProxyTaskCalls)
	this := r.CPU
	curr := r.Curr()
	currInChain := false
	act := actNone
	var owner *task.Task
	ownerCPU := -1
	var p *task.Task
	links := uint64(0)
	done := func(ret *task.Task) *task.Task {
		c.Stats.FindProxyTaskDone(links, ret != nil)
		if ret == nil {
			c.Inc(stats.FindProxyTaskRetries)
		}
		return ret
	}
	for p = donor; p.IsBlocked(); p = owner {
		links++
		c.Inc(stats.FindProxyTaskSpins)
		c.Charge(c.ProxyCosts.Link)
		c.YieldPoint()
		if links > MaxChain {
			mach.Report(c, check.InvChainAcyclic, donor, fmt.Sprintf("blocked_on chain from %v longer than %d links: deadlock (mutex cycle)", donor, MaxChain))
			return done(ReschedIdle(c, r))
		}
		// Snapshot p->blocked_on under its blocked_lock.
		p.BlockedLock.Lock(c.CPU)
		m := p.BlockedOn(c.CPU)
		p.BlockedLock.Unlock(c.CPU)
		if m == nil {
			// Woken: the unlocker handed p the lock (or a wake-up
			// cleared it). clear_task_blocked_on(p, NULL) has nothing
			// left to clear here.
			if p == curr {
				runLink(c, p)
				return done(p)
			}
			if c.Bug(bugs.SkippedWaking) {
				// Bug 2 (v13..v22 wake paths): the woken link is run
				// where it is queued, not left to its wake-up to place.
				runLink(c, p)
				break
			}
			act = actDeactivate
			goto out
		}
		wl := m.WaitLock()
		wl.Lock(c.CPU)
		p.BlockedLock.Lock(c.CPU)
		if p.BlockedOn(c.CPU) != m {
			p.BlockedLock.Unlock(c.CPU)
			wl.Unlock(c.CPU)
			return done(nil)
		}
		if p == curr {
			currInChain = true
		}
		owner = m.OwnerTask()
		if owner == nil {
			// The lock is free or being handed over: p may take it.
			p.ClearBlockedOn(c, nil, true)
			if p == curr || atHome(c, p, this) {
				// Run p here (its __state is still the sleep state; it
				// goes round its wait loop).
				runLink(c, p)
				p.BlockedLock.Unlock(c.CPU)
				wl.Unlock(c.CPU)
				break
			}
			act = actActivate
			p.BlockedLock.Unlock(c.CPU)
			wl.Unlock(c.CPU)
			goto out
		}
		if c.Bug(bugs.CPUBeforeOnRQ) {
			// Bug 3 (before v18): task_cpu(owner) is tested first, so a
			// sleeping owner on another CPU draws a needless migration.
			if oc := owner.CPU(); oc != this && !currInChain {
				ownerCPU = oc
				if owner.OnRQ() == task.OnRQNone {
					mach.Report(c, check.InvProxyMigrate, p, fmt.Sprintf("proxy migration of %v to cpu%d chosen for owner %v, which is asleep (on_rq 0)", p, oc, owner))
				}
				act = actMigrate
				p.BlockedLock.Unlock(c.CPU)
				wl.Unlock(c.CPU)
				goto out
			}
		}
		onRQ := owner.OnRQ() // READ_ONCE (v18: every use reads it anew)
		// A yield point between the on_rq test and the task_cpu read:
		// nothing in the kernel waits here, but the window between the two
		// loads is real, and stress jitter widens it.
		c.YieldPoint()
		delayed := onRQ != task.OnRQNone && ownerDelayed(c, owner)
		if delayed {
			c.Inc(stats.FPTDelayedOwners)
			c.Emit(trace.EvDelayed, int32(owner.ID), int32(owner.CPU()), 2, 0)
		}
		if onRQ == task.OnRQNone || delayed {
			// Sleeping owner (tested before task_cpu, v18), or one that
			// is asleep but still queued, sched_delayed (DELAY_DEQUEUE):
			// the reference treats both alike.
			if currInChain {
				p.BlockedLock.Unlock(c.CPU)
				wl.Unlock(c.CPU)
				return done(ReschedIdle(c, r))
			}
			if !mach.SleepingOwners() {
				act = actDeactivateDonor
				p.BlockedLock.Unlock(c.CPU)
				wl.Unlock(c.CPU)
				goto out
			}
			// [full]: park p, the last link before the owner, on the
			// owner's list. Switch from p's blocked_lock to the owner's.
			p.BlockedLock.Unlock(c.CPU)
			park := p
			if c.Bug(bugs.ParkDonorNotLink) && donor != p {
				// Bug 19 (before v14): the donor, not the last link, is
				// parked; the tree no longer mirrors the chain.
				park = donor
			}
			if c.Bug(bugs.BlockTaskNotLast) {
				// Bug 18 (before v14): block_task first, then look at the
				// owner again and link: the waiter is off the runqueue
				// before the owner's sleep is confirmed under its
				// blocked_lock, and is linked even if the owner woke.
				wl.Unlock(c.CPU)
				ReschedIdle(c, r)
				r.BlockTask(c, park, park.State())
				owner.BlockedLock.Lock(c.CPU)
				park.LinkSleepingOwner(owner)
				park.ParkedBatch = 0
				owner.BlockedHead = append(owner.BlockedHead, park)
				owner.WatchWrite(trace.FieldBlockedHead, int64(park.ID))
				owner.BlockedLock.Unlock(c.CPU)
				c.Inc(stats.SleepingOwnerEnqueues)
				c.Emit(trace.EvParkOnOwner, int32(park.ID), int32(owner.ID), 0, 0)
				return done(nil)
			}
			owner.BlockedLock.Lock(c.CPU)
			if owner.OnRQ() == task.OnRQNone || ownerDelayed(c, owner) {
				EnqueueOnOwner(c, r, owner, park)
			}
			owner.BlockedLock.Unlock(c.CPU)
			wl.Unlock(c.CPU)
			return done(nil)
		}
		if c.Bug(bugs.OwnerCPUReadTwice) {
			// Bug 15 (before v11): task_cpu(owner) is read once for the
			// test and again for the target.
			if owner.CPU() != this && !currInChain {
				c.YieldPoint()
				ownerCPU = owner.CPU()
				act = actMigrate
				p.BlockedLock.Unlock(c.CPU)
				wl.Unlock(c.CPU)
				goto out
			}
		}
		ownerCPU = owner.CPU()
		if ownerCPU != this {
			if currInChain {
				p.BlockedLock.Unlock(c.CPU)
				wl.Unlock(c.CPU)
				return done(ReschedIdle(c, r))
			}
			if c.CPUActive != nil && !c.CPUActive(ownerCPU) && !c.Bug(bugs.ProxyMigrateOffline) {
				// Finding F12's fix: an owner queued on a CPU that is
				// not active is on its way off it (balance_push) or, if
				// the CPU is already offline, a throttled DL task that
				// cannot run before its dl_timer moves it
				// (dl_task_offline_migration). Migrating the donor
				// there would strand it (or leave sched_cpu_dying a
				// task to find), and waiting would spin for up to a
				// period: the donor is deactivated instead, as
				// upstream's single-rq form does for every remote
				// owner, and the hand-off wakes it. (The kernel's
				// proxy_deactivate warns on a donor whose blocked_on is
				// set, so the fix needs its deactivation without that
				// warning, which is what Deactivate(woken=false) is.)
				act = actDeactivateDonor
				p.BlockedLock.Unlock(c.CPU)
				wl.Unlock(c.CPU)
				goto out
			}
			act = actMigrate
			if c.ProxySingleRQ { // --proxy-exec single-rq: upstream does not migrate; proxy_deactivate(rq, donor)
				act = actDeactivateDonor
			}
			p.BlockedLock.Unlock(c.CPU)
			wl.Unlock(c.CPU)
			goto out
		}
		if c.Bug(bugs.FusedOnRQLoads) {
			// Bug 4 (before v18): the compiler fused the on_rq loads; the
			// value read above stands in for the checks below.
			if onRQ == task.OnRQQueued {
				goto link
			}
		}
		if c.Bug(bugs.OwnerMidReturn) {
			// Bug 5 (before v9): a stale task_cpu is trusted; an owner in
			// the middle of a move is taken as queued here.
			goto link
		}
		if owner.Migrating() {
			// Arriving here (or leaving): let it land.
			p.BlockedLock.Unlock(c.CPU)
			wl.Unlock(c.CPU)
			return done(ReschedIdle(c, r))
		}
		if !owner.Queued() || owner.CPU() != this {
			// Raced with a move: retry.
			p.BlockedLock.Unlock(c.CPU)
			wl.Unlock(c.CPU)
			return done(nil)
		}
		if owner == p {
			// The lock was handed to p (tested last, as in the kernel);
			// let ttwu_runnable finish it.
			p.BlockedLock.Unlock(c.CPU)
			wl.Unlock(c.CPU)
			return done(ReschedIdle(c, r))
		}
	link:
		// owner is queued on this rq: the rq lock pins it. Record who
		// donates to it (read by its unlock for the hand-off), with the
		// rq lock held, as the kernel does.
		owner.SetBlockedDonor(p)
		p.BlockedLock.Unlock(c.CPU)
		wl.Unlock(c.CPU)
	}
	// p runs on donor's behalf.
	if p != donor {
		c.Inc(stats.ProxyPickSameRQ)
		c.Emit(trace.EvProxyPick, int32(p.ID), int32(donor.ID), int32(links), 0)
	}
	return done(p)

out:
	switch act {
	case actDeactivateDonor:
		Deactivate(c, mach, r, donor, false)
	case actDeactivate:
		Deactivate(c, mach, r, p, true)
	case actActivate:
		Activate(c, mach, r, p)
	case actMigrate:
		MigrateTask(c, mach, r, p, ownerCPU)
	}
	return done(nil)
}

// ownerDelayed is find_proxy_task's owner->se.sched_delayed, read without
// the owner's rq lock. The kernel reads the plain byte (--bug
// delayed-plain-read, finding F11: a data race the race detector reports);
// the model's fix reads the atomic mirror (READ_ONCE/WRITE_ONCE).
func ownerDelayed(c *percpu.Ctx, owner *task.Task) bool {
	if c.Bug(bugs.DelayedPlainRead) {
		return owner.SE.Delayed
	}
	return owner.SchedDelayed()
}

// runLink clears is_blocked of a chain link find_proxy_task lets run.
func runLink(c *percpu.Ctx, p *task.Task) {
	p.SetIsBlocked(false)
	c.Emit(trace.EvIsBlocked, int32(p.ID), 0, 0, 0)
}

// ReschedIdle is proxy_resched_idle(): make the idle task the donor (and
// the next task), and set_tsk_need_resched(rq->idle): the flag is the
// idle task's, so a CPU that switches to idle comes straight back to pick
// again, while a pick_again that chooses another task leaves it set on
// the idle task (harmless: the next switch to idle re-picks once).
// Returns rq.Idle.
func ReschedIdle(c *percpu.Ctx, r *rq.RQ) *task.Task {
	r.AssertHeld(c)
	if d := r.Donor(c); d != r.Idle {
		r.UpdateCurr(c)
		c.Emit(trace.EvReschedIdle, 0, int32(d.ID), 0, 0)
	}
	r.SetDonor(c, r.Idle)
	r.Idle.SetTskNeedResched()
	c.Inc(stats.ProxyReschedIdle)
	return r.Idle
}

// Deactivate is proxy_deactivate(): take p off the runqueue as a
// sleeper; whoever woke it (the unlocker that cleared its blocked_on)
// places it with a full wake-up. The idle task becomes the donor first:
// nothing on this rq may point at p once its on_rq is 0. woken says p's
// blocked_on was found cleared (the reference's only caller; it WARNs on
// a blocked_on still set); without [full]'s sleeping-owner parking the
// donor of a sleeping owner is deactivated too, still blocked.
func Deactivate(c *percpu.Ctx, mach Machine, r *rq.RQ, p *task.Task, woken bool) {
	st := p.State()
	if st == task.Running {
		c.Warn(check.InvRunningNotBlocked, p.ID, p.String(), "proxy_deactivate: %v is TASK_RUNNING with is_blocked set", p)
	}
	if woken {
		p.BlockedLock.Lock(c.CPU)
		if m := p.BlockedOn(c.CPU); m != nil {
			c.Warn(check.InvMutexMisuse, p.ID, p.String(), "proxy_deactivate: %v still blocked on %v", p, m)
		}
		p.BlockedLock.Unlock(c.CPU)
	}
	ReschedIdle(c, r)
	r.BlockTask(c, p, st)
	c.Inc(stats.ProxyDeactivations)
	c.Emit(trace.EvBlock, int32(p.ID), int32(st), 1, 0)
}

// Activate is proxy_activate(): p is blocked on a free lock but away
// from home. Make idle the donor, drop the rq lock and wake p: the
// wake-up (ttwu_runnable, proxy_needs_return) takes it off this rq and
// places it on an allowed CPU.
func Activate(c *percpu.Ctx, mach Machine, r *rq.RQ, p *task.Task) {
	r.AssertHeld(c)
	ReschedIdle(c, r)
	r.ZapBalanceCallbacks(c)
	c.Inc(stats.ProxyActivates)
	checkLockDrop(c, mach, r, []*task.Task{p})
	r.Unlock(c)
	mach.WakeUpProcess(c, p)
	r.Lock(c)
	r.UpdateClock(c)
}

// MigrateTask is proxy_migrate_task(): move p, and every task that donates
// to it along blocked_donor, to the owner's CPU. The rq lock is dropped in
// the middle; nothing else is ever held with it on this path.
func MigrateTask(c *percpu.Ctx, mach Machine, r *rq.RQ, p *task.Task, target int) {
	r.AssertHeld(c)
	if target == r.CPU {
		mach.Report(c, check.InvProxyMigrate, p, fmt.Sprintf("proxy migration of %v from cpu%d to itself (owner cpu read twice?)", p, r.CPU))
		ReschedIdle(c, r)
		return
	}
	if c.Bug(bugs.DanglingDonor) {
		// Bug 8: rq.donor keeps pointing at a task that is about to move.
	} else {
		ReschedIdle(c, r)
	}
	if p == r.Curr() {
		panic(fmt.Sprintf("proxy_migrate_task: %v is rq%d's curr", p, r.CPU))
	}
	var moved [MaxChain]*task.Task
	n := 0
	for t := p; t != nil && n < MaxChain; {
		if t == r.Curr() || !t.Queued() || t.CPU() != r.CPU {
			// The kernel WARNs on curr and would dequeue a task that is
			// not queued here; the walk find_proxy_task just made cannot
			// lead there.
			mach.Report(c, check.InvProxyMigrate, t, fmt.Sprintf("proxy_migrate_task: chain link %v of %v is curr or not queued on cpu%d (queued=%v cpu%d)", t, p, r.CPU, t.Queued(), t.CPU()))
			break
		}
		r.DeactivateTask(c, t, rq.DequeueMigrating)
		if t.MigrationDisabled > 0 {
			// proxy_set_task_cpu has no WARN: the scheduling context
			// of a migrate-disabled donor moves, its execution context
			// returns through the wake-up (set_task_cpu's exemption).
			c.Inc(stats.MigrateDisabledProxy)
		}
		rq.SetTaskCPU(c, t, target, true, reasonFor(n))
		moved[n] = t
		n++
		t = t.BlockedDonor() // the rq lock pins the chain; the kernel leaves the links set
	}
	c.Inc(stats.ProxyMigrations)
	c.Charge(c.ProxyCosts.Migrate)
	if !c.Bug(bugs.StaleBalanceCallbacks) {
		r.ZapBalanceCallbacks(c)
	}
	checkLockDrop(c, mach, r, moved[:n])
	r.Unlock(c)

	tr := mach.RQ(target)
	tr.Lock(c)
	for i := n - 1; i >= 0; i-- {
		// __attach_tasks walks the list proxy_migrate_task built with
		// list_add: the last link detached is attached first.
		tr.ActivateTask(c, moved[i], rq.EnqueueMigrated)
		tr.CheckPreemptCurr(c, moved[i])
	}
	tr.Unlock(c)

	r.Lock(c)
	r.UpdateClock(c)
}

// checkLockDrop holds invariants 16 and 17 where __schedule drops the rq
// lock in the middle of a pick: no reference from the rq (the donor) to a
// task that is leaving may survive the drop, and no balance callback of
// the abandoned pick may be left queued.
func checkLockDrop(c *percpu.Ctx, mach Machine, r *rq.RQ, leaving []*task.Task) {
	d := r.Donor(c)
	for _, t := range leaving {
		if d == t {
			mach.Report(c, check.InvNoStaleRef, t, fmt.Sprintf("cpu%d drops its rq lock with rq.donor still %v, which is being moved away", r.CPU, t))
		}
	}
	if n := r.BalanceCallbacks(); n != 0 {
		mach.Report(c, check.InvBalanceCallbacks, nil, fmt.Sprintf("cpu%d drops its rq lock mid-pick with %d balance callbacks queued", r.CPU, n))
	}
}

func reasonFor(i int) trace.MigrateReason {
	if i == 0 {
		return trace.ReasonProxy
	}
	return trace.ReasonChain
}

// atHome is the reference's "p is at home" test, p->wake_cpu ==
// task_cpu(p) (cpu is task_cpu(p)), which lets a woken link run where it
// is queued. wake_cpu is not kept inside the mask: affine_move_task
// leaves it alone unless it moves the task (the exempt blocked rq->donor,
// a donor proxy-migrated onto an allowed CPU whose home the new mask
// excludes, then migrated back there). Finding F13's complete fix also
// requires the CPU to be allowed (cpus_ptr); --bug donor-affinity-exempt
// restores the reference's test of wake_cpu alone.
func atHome(c *percpu.Ctx, p *task.Task, cpu int) bool {
	return p.WakeCPUOf() == cpu && (p.AllowedOn(cpu) || c.Bug(bugs.DonorAffinityExempt))
}

// NeedsReturn is proxy_needs_return(), called by ttwu_runnable for an
// is_blocked p with its pi_lock and the rq lock held. At home (atHome)
// nothing happens: the caller makes p RUNNING in place.
// Away from home p's blocked_on is cleared; if it is rq->curr it just
// goes on running; if it is rq->donor, curr becomes its own donor
// (proxy_reset_donor); then p is dequeued as a TASK_WAKING sleeper and
// the caller goes on with the full wake-up, whose select_task_rq places
// it on an allowed CPU.
func NeedsReturn(c *percpu.Ctx, r *rq.RQ, p *task.Task) bool {
	r.AssertHeld(c)
	if atHome(c, p, p.CPU()) {
		return false
	}
	p.BlockedLock.Lock(c.CPU)
	p.ClearBlockedOn(c, nil, true)
	p.BlockedLock.Unlock(c.CPU)
	if p == r.Curr() {
		return false
	}
	if p == r.Donor(c) {
		resetDonor(c, r)
	}
	if c.Bug(bugs.WakelistMigrating) {
		// Bug (v22/v23): the return dequeue is a migration
		// (deactivate_task, on_rq MIGRATING), and the wake-up that
		// follows may hand the still-MIGRATING task to a remote wake
		// list.
		r.DeactivateTask(c, p, rq.DequeueMigrating)
		p.ContributesToLoad = false
	} else {
		// block_task(rq, p, TASK_WAKING): TASK_WAKING is a special
		// state, so the dequeue is DEQUEUE_SPECIAL and never delayed
		// (the caller enqueues p elsewhere next).
		r.BlockTask(c, p, task.Waking)
	}
	c.Inc(stats.ReturnMigrations)
	c.Charge(c.ProxyCosts.Return)
	return true
}

// resetDonor is proxy_reset_donor(): rq->donor is leaving; curr (which
// ran for it) becomes its own donor, and the CPU re-picks.
func resetDonor(c *percpu.Ctx, r *rq.RQ) {
	curr := r.Curr()
	if r.Donor(c) == curr {
		c.Warn(check.InvCurrDonor, curr.ID, curr.String(), "proxy_reset_donor: cpu%d's donor is curr %v", r.CPU, curr)
	}
	r.UpdateCurr(c)
	r.SetDonor(c, curr)
	r.ZapBalanceCallbacks(c)
	r.ReschedCurr(c)
}

// EnqueueOnOwner is proxy_enqueue_on_owner() [full]: with the rq lock and
// the owner's blocked_lock held and the owner seen asleep, park p at the
// head of the owner's blocked_head and take it off the runqueue. block_task comes last
// (v14): once p is off the runqueue and linked, the owner's waker may
// activate it on another CPU at once.
func EnqueueOnOwner(c *percpu.Ctx, r *rq.RQ, owner, p *task.Task) {
	r.AssertHeld(c)
	owner.BlockedLock.AssertHeld(c.CPU)
	p.LinkSleepingOwner(owner)
	p.ParkedBatch = 0
	// list_add: at the head, as the kernel does.
	owner.BlockedHead = append(owner.BlockedHead, nil)
	copy(owner.BlockedHead[1:], owner.BlockedHead)
	owner.BlockedHead[0] = p
	owner.WatchWrite(trace.FieldBlockedHead, int64(p.ID))
	ReschedIdle(c, r)
	r.BlockTask(c, p, p.State())
	c.Inc(stats.SleepingOwnerEnqueues)
	c.Charge(c.ProxyCosts.Park)
	c.Emit(trace.EvParkOnOwner, int32(p.ID), int32(owner.ID), 0, 0)
}

// ActivateBlockedWaiters is activate_blocked_waiters() [full], run at the
// end of every wakeup of owner, after its pi_lock is dropped: re-activate
// the donors parked on it (and, transitively, those parked on them) on
// target's runqueue. Each owner's list is detached as one finite batch
// (v9): donors that re-park meanwhile wait for the next wakeup.
func ActivateBlockedWaiters(c *percpu.Ctx, mach Machine, target int, owner *task.Task) {
	owner.BlockedLock.Lock(c.CPU)
	owner.WatchRead(trace.FieldBlockedHead, int64(len(owner.BlockedHead)))
	if owner.OnActivationList || len(owner.BlockedHead) == 0 {
		owner.BlockedLock.Unlock(c.CPU)
		return
	}
	owner.OnActivationList = true
	owner.BlockedLock.Unlock(c.CPU)

	work := []*task.Task{owner}
	rounds := 0
	for len(work) > 0 {
		o := work[len(work)-1]
		work = work[:len(work)-1]
		if c.Bug(bugs.ActivationLivelock) {
			// Bug 6 (before v9): drain the list one waiter at a time until
			// it is empty; donors that re-park keep it non-empty.
			for {
				rounds++
				o.BlockedLock.Lock(c.CPU)
				if len(o.BlockedHead) == 0 {
					o.OnActivationList = false
					o.BlockedLock.Unlock(c.CPU)
					break
				}
				w := o.BlockedHead[0]
				o.BlockedHead = o.BlockedHead[1:]
				o.WatchWrite(trace.FieldBlockedHead, -int64(w.ID))
				old := w.UnlinkSleepingOwner()
				o.BlockedLock.Unlock(c.CPU)
				task.PutSleepingOwner(old) // o's: never its last reference, o is being woken
				doActivateBlockedWaiter(c, mach, target, o, w)
				c.YieldPoint()
			}
			continue
		}
		o.BlockedLock.Lock(c.CPU)
		batch := o.BlockedHead
		o.BlockedHead = nil
		for _, w := range batch {
			o.WatchWrite(trace.FieldBlockedHead, -int64(w.ID))
		}
		o.OnActivationList = false
		o.BatchSeq++
		gen := o.BatchSeq
		for _, w := range batch {
			w.ParkedBatch = gen
		}
		for _, w := range batch {
			// One waiter at a time, juggling the owner's blocked_lock: it
			// leaves the batch, then is activated without the lock. A
			// waiter that left the batch meanwhile (woken and unlinked,
			// perhaps parked again, even on this same owner) is skipped.
			if !c.Bug(bugs.LateActivationOnCPU) && (w.ReadSleepingOwner() != o || w.ParkedBatch != gen) {
				continue
			}
			w.ParkedBatch = 0
			// With the fix the link is to o (never o's last reference:
			// o is being woken); the v18 bug's late activation may find
			// w unlinked already, or parked on another owner, whose
			// link it then drops.
			old := w.UnlinkSleepingOwner()
			o.BlockedLock.Unlock(c.CPU)
			task.PutSleepingOwner(old)
			doActivateBlockedWaiter(c, mach, target, o, w)
			w.BlockedLock.Lock(c.CPU)
			w.WatchRead(trace.FieldBlockedHead, int64(len(w.BlockedHead)))
			has := len(w.BlockedHead) > 0 && !w.OnActivationList
			if has {
				w.OnActivationList = true
			}
			w.BlockedLock.Unlock(c.CPU)
			if has {
				work = append(work, w)
			}
			o.BlockedLock.Lock(c.CPU)
		}
		o.BlockedLock.Unlock(c.CPU)
	}
}

// doActivateBlockedWaiter is do_activate_blocked_waiter(): under w's
// pi_lock, put a parked waiter on target's runqueue, unless it is no
// longer is_blocked, has been woken (WAKING: ttwu owns it), is already
// queued, or is still on_cpu somewhere (v18: it was woken, ran, blocked
// again and is switching out). Then, as C: proxy_set_task_cpu (wake_cpu
// kept) before the target's lock, the load count taken back, the
// activation (which unlinks w from any owner it was parked on again
// since its batch was detached) and resched_curr of the target.
func doActivateBlockedWaiter(c *percpu.Ctx, mach Machine, target int, owner, w *task.Task) {
	w.PiLock.Lock(c.CPU)
	defer w.PiLock.Unlock(c.CPU)
	var blocked bool
	if c.Bug(bugs.IsBlockedPlainRead) {
		// Finding F4: the kernel's plain read of is_blocked, with only
		// w's pi_lock held; its writers hold w's rq lock.
		blocked = w.IsBlocked()
	} else {
		blocked = w.IsBlockedOnce() // READ_ONCE: the proposed fix
	}
	st := w.State()
	if !blocked || st == task.Waking || w.OnRQ() != task.OnRQNone {
		return
	}
	if st == task.Dead && !c.Bug(bugs.ActivateExited) {
		// Finding F15's fix: between its unlink from owner's list and
		// this pi_lock, w was woken, ran and exited; its last __schedule
		// set is_blocked again. TASK_DEAD is stored under pi_lock
		// (set_special_state), so the test is stable here.
		c.Inc(stats.BlockedWaiterDeadSkips)
		return
	}
	if c.Bug(bugs.LateActivationOnCPU) {
		// Bug 1 (before v18): a waiter from a stale batch is activated
		// even if, since it was detached, it was woken, ran and blocked
		// again and is still on_cpu where it ran.
	} else if w.OnCPU() {
		// Still switching out where it ran: that CPU's __schedule owns
		// it.
		return
	}
	tr := mach.RQ(target)
	rq.SetTaskCPU(c, w, target, true, trace.ReasonActivation)
	tr.Lock(c)
	if w.ContributesToLoad {
		tr.NrUninterruptible--
	}
	tr.UpdateClock(c)
	tr.ActivateTask(c, w, rq.EnqueueWakeup|rq.EnqueueMigrated)
	if st == task.Dead {
		// --bug activate-exited: the reference's tests let it through.
		c.Warn(check.InvExitedDead, w.ID, w.String(), "do_activate_blocked_waiter on cpu%d: %v has exited (TASK_DEAD, is_blocked from its last __schedule) and is enqueued with no reference held: it was woken, ran and exited after activate_blocked_waiters unlinked it from %v", target, w, owner)
	}
	tr.ReschedCurr(c)
	tr.Unlock(c)
	c.Inc(stats.BlockedWaiterActivations)
	c.Charge(c.ProxyCosts.Park)
	c.Emit(trace.EvActivate, int32(w.ID), int32(owner.ID), int32(target), 0)
}

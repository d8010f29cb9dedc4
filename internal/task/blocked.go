package task

import (
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/trace"
)

// The blocked state of the reference series (johnstultz-work/linux-dev
// core.c@014c4be7, include/linux/sched.h@05fab071): two fields.
//
//   - blocked_on: the lock p waits for, or nil. Written under
//     p.BlockedLock only (by p itself in the mutex slow path, with the
//     mutex's wait_lock held too; by the unlocker that picks p, with the
//     wait_lock held; by ttwu of current, proxy_needs_return and
//     find_proxy_task, with only p's blocked_lock). A hand-off clears it:
//     there is no "waking" state any more.
//   - is_blocked: p went to sleep (try_to_block_task) and nothing has made
//     it runnable since. Cleared with TASK_RUNNING by ttwu_do_wakeup, and
//     by find_proxy_task for a link it lets run. __schedule enters
//     find_proxy_task on it and the chain walk continues while it is set.
//
// So a task can be RUNNING with blocked_on set (a waiter woken without a
// hand-off, back in its wait loop) and is_blocked with blocked_on nil (a
// donor whose lock was handed over, not run yet); never RUNNING and
// is_blocked (invariant 31).

// SetBlockedOn is __set_task_blocked_on(): p waits for m from now on.
// p.BlockedLock must be held by c (and, in the mutex, m's wait_lock). A
// task blocked on another lock is a kernel WARN.
func (p *Task) SetBlockedOn(c *percpu.Ctx, m Lock) {
	p.BlockedLock.AssertHeld(c.CPU)
	if p.blockedOn != nil && p.blockedOn != m {
		c.Warn(check.InvMutexMisuse, p.ID, p.String(), "__set_task_blocked_on: %v blocked on %v, set to %v", p, p.blockedOn, m)
	}
	p.blockedOn = m
	p.WatchWrite(trace.FieldBlockedOn, lockID(m))
	if v := m != nil; p.blockedOnOnce.Load() != v {
		p.blockedOnOnce.Store(v)
	}
}

// IsBlockedOnOnce is task_is_blocked()'s read of blocked_on with
// READ_ONCE, for readers that hold no blocked_lock (the load balancer,
// RT push and pull, __schedule on prev, the core balancer): finding F5's
// fix. IsBlockedOnPlain is the reference kernel's plain read.
func (p *Task) IsBlockedOnOnce() bool {
	v := p.blockedOnOnce.Load()
	if p.Watch != nil {
		p.WatchRead(trace.FieldBlockedOn, b2i(v))
	}
	return v
}

// lockID is a lock's value in a watched blocked_on: its id + 1, 0 for none.
func lockID(m Lock) int64 {
	if m == nil {
		return 0
	}
	return int64(m.ID()) + 1
}

// IsBlockedOnPlain is the reference's task_is_blocked(): a plain read of
// blocked_on with no lock, concurrent with writers that hold only
// blocked_lock. The race detector reports it (--bug blocked-on-plain-read,
// finding F5).
func (p *Task) IsBlockedOnPlain() bool {
	p.WatchRead(trace.FieldBlockedOn, lockID(p.blockedOn))
	return p.blockedOn != nil
}

// ClearBlockedOn is __clear_task_blocked_on(p, m): p waits for nothing
// from now on. m == nil clears whatever is set; with m given, a task
// blocked on another lock is a kernel WARN (and is cleared anyway, as the
// kernel does). p.BlockedLock must be held. A clear by another task or
// path (hand-off, wake-up, find_proxy_task) is traced; the task's own
// clear on acquisition is the mutex's lock event.
func (p *Task) ClearBlockedOn(c *percpu.Ctx, m Lock, traced bool) {
	p.BlockedLock.AssertHeld(c.CPU)
	old := p.blockedOn
	if m != nil && old != nil && old != m {
		c.Warn(check.InvMutexMisuse, p.ID, p.String(), "__clear_task_blocked_on: %v blocked on %v, cleared for %v", p, old, m)
	}
	if old == nil {
		return
	}
	p.blockedOn = nil
	p.WatchWrite(trace.FieldBlockedOn, 0)
	p.blockedOnOnce.Store(false)
	p.UnblockedAt = c.Now
	if traced {
		c.Emit(trace.EvBlockedOnClear, int32(p.ID), int32(old.ID()), 0, 0)
	}
}

// IsBlocked returns p->is_blocked. The caller holds the rq lock of
// task_cpu(p), or is p (current).
func (p *Task) IsBlocked() bool {
	if p.Watch != nil {
		p.WatchRead(trace.FieldIsBlocked, p.isBlocked)
	}
	return p.isBlocked != 0
}

// IsBlockedOnce is READ_ONCE(p->is_blocked), for a reader that holds
// neither (do_activate_blocked_waiter, under p's pi_lock alone): finding
// F4's fix. The kernel's plain read is IsBlocked (--bug
// is-blocked-plain-read), which the race detector reports.
func (p *Task) IsBlockedOnce() bool {
	if p.Watch != nil {
		return p.watchedIsBlockedOnce()
	}
	return p.isBlockedOnce.Load()
}

//go:noinline
func (p *Task) watchedIsBlockedOnce() bool {
	v := p.isBlockedOnce.Load()
	p.WatchRead(trace.FieldIsBlocked, b2i(v))
	return v
}

// SetIsBlocked writes p->is_blocked (with WRITE_ONCE's mirror for
// IsBlockedOnce), with the rq lock of task_cpu(p) held
// (try_to_block_task, ttwu_do_wakeup, find_proxy_task). Not traced: the
// sleep, donor-keep and wake events imply it; find_proxy_task traces the
// clears it makes itself.
//
// A store that would not change the value is skipped. The kernel stores
// unconditionally (ttwu_do_wakeup's is_blocked = 0), and a remote
// ttwu_runnable's store of 0 over 0 meets current's own lockless read in
// try_to_wake_up's WARN; KCSAN, by default, reports only races that
// change the value, and so does the model (docs/findings.md, "Looked at").
func (p *Task) SetIsBlocked(v bool) {
	if (p.isBlocked != 0) == v {
		return
	}
	p.isBlocked = 0
	if v {
		p.isBlocked = 1
	}
	p.WatchWrite(trace.FieldIsBlocked, p.isBlocked)
	p.isBlockedOnce.Store(v)
}

package mutex

// This file is kernel/locking/ww_mutex.h (the !WW_RT half) with the
// reference series' blocked_on handling: wound/wait and wait/die
// deadlock avoidance for ww_mutexes (Documentation/locking/ww-mutex-design).
// The slow-path hooks (__ww_mutex_add_waiter, __ww_mutex_check_kill,
// __ww_mutex_check_waiters) are called from mutex.go where
// __mutex_lock_common calls them.

import (
	"fmt"
	"sync/atomic"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/relaxed"
	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// WWClass is struct ww_class: the stamp counter and the algorithm of a
// family of ww_mutexes (a wait list never mixes wait-die and wound-wait).
type WWClass struct {
	Name    string
	WaitDie bool
	// stamp is ww_class->stamp, taken by atomic_long_inc_return_relaxed:
	// it orders nothing, so under the race detector it goes through
	// package relaxed, not a sync/atomic Add (an edge between every two
	// ww_acquire_init calls of the class).
	stamp atomic.Uint64
}

// NewWWClass returns a class; waitDie selects Wait-Die, else Wound-Wait.
func NewWWClass(name string, waitDie bool) *WWClass {
	return &WWClass{Name: name, WaitDie: waitDie}
}

// AcquireInit is ww_acquire_init(): a new context for p with the next stamp.
func (k *WWClass) AcquireInit(p *task.Task) *task.WWCtx {
	return &task.WWCtx{Task: p, Stamp: relaxed.AddUint64(&k.stamp, 1), WaitDie: k.WaitDie, Contended: -1}
}

// SetWW makes m a ww_mutex of class k. Only before the machine starts.
func (m *Mutex) SetWW(k *WWClass) { m.class = k }

// WW returns m's ww_class, or nil for a plain mutex.
func (m *Mutex) WW() *WWClass { return m.class }

// Ctx is READ_ONCE(ww->ctx): the context m was acquired under, or nil.
func (m *Mutex) Ctx() *task.WWCtx { return m.ctx.Load() }

// ctxLess is __ww_ctx_less(a, b): a is the younger transaction (the
// !WW_RT form: stamps only, bigger is younger).
func ctxLess(a, b *task.WWCtx) bool { return int64(a.Stamp-b.Stamp) > 0 }

// lockAcquired is ww_mutex_lock_acquired(): the context now holds one
// more lock, and m records it. By the acquiring task.
func (m *Mutex) lockAcquired(c *percpu.Ctx, p *task.Task, ctx *task.WWCtx) {
	if ctx.Contended >= 0 {
		// DEBUG_WW_MUTEXES: after -EDEADLK the next lock must be the
		// contended one, with nothing else held.
		if ctx.Contended != m.id || ctx.Acquired > 0 {
			c.Warn(check.InvMutexMisuse, p.ID, p.String(), "ww_mutex_lock_acquired: %v takes %v after -EDEADLK on m%d with %d held", p, m, ctx.Contended, ctx.Acquired)
		}
		ctx.Contended = -1
	}
	ctx.Acquired++
	m.ctx.Store(ctx)
}

// wwUnlock is __ww_mutex_unlock(): forget the context before the unlock.
func (m *Mutex) wwUnlock() {
	if ctx := m.ctx.Load(); ctx != nil {
		if ctx.Acquired > 0 {
			ctx.Acquired--
		}
		m.ctx.Store(nil)
	}
}

// WWUnlock is ww_mutex_unlock(): __ww_mutex_unlock, then mutex_unlock.
func (m *Mutex) WWUnlock(c *percpu.Ctx, p *task.Task, wq *WakeQ) {
	m.wwUnlock()
	m.Unlock(c, p, wq)
}

// clearForWake clears blocked_on of a task a die or a wound is about to
// wake, under its blocked_lock (clear_task_blocked_on): the reference
// takes it with no blocked_lock held (v21 moved the die/wound calls out
// from under current's blocked_lock). With the v21 bug (current's
// blocked_lock held) it is taken nested, as the older code did: t plays
// role for the mutex (the owner a wound hits, or a waiter a die kills),
// current the waiter.
func clearForWake(c *percpu.Ctx, t *task.Task, m *Mutex, nested bool, role spinlock.Role) {
	if c.Bug(bugs.WWNoClearBlockedOn) {
		// v16 bug: the die/wound only wakes, leaving blocked_on in place.
		return
	}
	if nested {
		t.BlockedLock.LockNestedRoles(c.CPU, spinlock.RoleWaiter, role)
	} else {
		t.BlockedLock.Lock(c.CPU)
	}
	if m != nil {
		t.ClearBlockedOn(c, m, true)
	} else {
		t.ClearBlockedOn(c, nil, true)
	}
	t.BlockedLock.Unlock(c.CPU)
}

// die is __ww_mutex_die(): Wait-Die; wake waiter i (a younger context
// that holds locks) so that it dies. Reports whether the algorithm is
// Wait-Die (the caller's loop stops at the first context then).
// wait_lock held.
func (m *Mutex) die(c *percpu.Ctx, i int, ctx *task.WWCtx, wq *WakeQ, nested bool) bool {
	if !ctx.WaitDie {
		return false
	}
	w, wctx := m.waiters[i], m.wctx[i]
	if wctx.Acquired > 0 && ctxLess(wctx, ctx) {
		clearForWake(c, w, m, nested, spinlock.RoleWaiter)
		wq.Add(w)
		c.Inc(stats.WWDies)
		c.Emit(trace.EvWWDie, int32(w.ID), int32(m.id), int32(ctx.Task.ID), 0)
	}
	return true
}

// wound is __ww_mutex_wound(): Wound-Wait; wound the holder's context
// if it is younger than ctx (which holds locks), and wake the owner
// unless it is us. The owner may be blocked on another mutex, so its
// blocked_on is cleared whatever it is (6.17-rc2's fix: NULL, not m).
// wait_lock held.
func (m *Mutex) wound(c *percpu.Ctx, p *task.Task, ctx, hold *task.WWCtx, wq *WakeQ, nested bool) bool {
	owner := m.OwnerTask()
	if hold == nil || owner == nil {
		return false
	}
	if ctx.Acquired > 0 && ctxLess(hold, ctx) {
		hold.SetWounded(true)
		c.Inc(stats.WWWounds)
		c.Emit(trace.EvWWWound, int32(owner.ID), int32(m.id), int32(ctx.Task.ID), 0)
		if owner != p {
			var which *Mutex
			if c.Bug(bugs.WWWoundWrongLock) {
				which = m // before 6.17-rc2: __clear_task_blocked_on(owner, lock)
			}
			clearForWake(c, owner, which, nested, spinlock.RoleOwner)
			wq.Add(owner)
		}
		return true
	}
	return false
}

// checkWaiters is __ww_mutex_check_waiters(): we just took m under ctx;
// younger waiters that hold locks must die (Wait-Die), or an older one
// wounds us (Wound-Wait). wait_lock held.
func (m *Mutex) checkWaiters(c *percpu.Ctx, p *task.Task, ctx *task.WWCtx, wq *WakeQ, nested bool) {
	for i := 0; i < len(m.waiters); i++ {
		wctx := m.wctx[i]
		if wctx == nil {
			continue
		}
		if m.die(c, i, ctx, wq, nested) || m.wound(c, p, wctx, ctx, wq, nested) {
			break
		}
	}
}

// SetContextFastpath is ww_mutex_set_context_fastpath(): after a lock
// taken without wait_lock (fast path, trylock, spin), record the context
// and, if waiters raced in, check them under wait_lock. The wake-ups are
// left on wq for the caller.
func (m *Mutex) SetContextFastpath(c *percpu.Ctx, p *task.Task, ctx *task.WWCtx, wq *WakeQ) {
	m.lockAcquired(c, p, ctx)
	// smp_mb(): [W] ww->ctx, [R] WAITERS pairs with add_waiter's
	// [W] WAITERS, [R] ww->ctx (both sequentially consistent here).
	if m.owner.Load()&FlagWaiters == 0 {
		return
	}
	m.waitLock.Lock(c.CPU)
	m.checkWaiters(c, p, ctx, wq, false)
	m.waitLock.Unlock(c.CPU)
}

// kill is __ww_mutex_kill(): -EDEADLK if ctx holds anything.
func kill(ctx *task.WWCtx) bool { return ctx.Acquired > 0 }

// checkKill is __ww_mutex_check_kill() for p at index i of the wait
// list: Wound-Wait dies if wounded; Wait-Die dies if the holder or any
// context waiting ahead of it is older. wait_lock held.
func (m *Mutex) checkKill(p *task.Task, ctx *task.WWCtx) bool {
	hold := m.ctx.Load()
	if ctx.Acquired == 0 {
		return false
	}
	if !ctx.WaitDie {
		return ctx.Wounded() && kill(ctx)
	}
	if hold != nil && ctxLess(ctx, hold) {
		return kill(ctx)
	}
	for i, w := range m.waiters {
		if w == p {
			break
		}
		if m.wctx[i] != nil {
			return kill(ctx)
		}
	}
	return false
}

// addWaiterWW is __ww_mutex_add_waiter(): queue p in stamp order (waiters
// without a context keep their FIFO places), Wait-Die: dying at once
// behind an older context and waking younger ones to die; Wound-Wait:
// wounding a younger holder. true is -EDEADLK (p is not queued).
// wait_lock held.
func (m *Mutex) addWaiterWW(c *percpu.Ctx, p *task.Task, ctx *task.WWCtx, wq *WakeQ, nested bool) bool {
	pos := -1
	for i := len(m.waiters) - 1; i >= 0; i-- {
		wctx := m.wctx[i]
		if wctx == nil {
			continue
		}
		if ctxLess(ctx, wctx) {
			if ctx.WaitDie && kill(ctx) {
				return true
			}
			break
		}
		pos = i
		m.die(c, i, ctx, wq, nested)
	}
	m.addWaiter(p, ctx, pos)
	if !ctx.WaitDie {
		// smp_mb(): see SetContextFastpath.
		m.wound(c, p, ctx, m.ctx.Load(), wq, nested)
	}
	return false
}

// SpinOK is ww_mutex_spin_on_owner(): whether a ww spinner may go on.
// With locks held and a context on m, deadlock detection is due: stop; a
// spinner not yet queued stops when there are waiters (an older stamp
// may be among them); a waiter-spinner stops when no longer first.
func (m *Mutex) SpinOK(p *task.Task, ctx *task.WWCtx, waiter bool) bool {
	if ctx == nil {
		return true
	}
	if ctx.Acquired > 0 && m.ctx.Load() != nil {
		return false
	}
	if !waiter && m.owner.Load()&FlagWaiters != 0 {
		return false
	}
	if waiter && m.first.Load() != p {
		return false
	}
	return true
}

func (m *Mutex) wwString() string {
	if m.class == nil {
		return ""
	}
	return fmt.Sprintf(" ww:%s", m.class.Name)
}

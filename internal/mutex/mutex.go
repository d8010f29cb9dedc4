package mutex

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// Owner-word flags (MUTEX_FLAG_*).
const (
	FlagWaiters = 0x1 // the wait list is not empty: unlock must take the slow path
	FlagHandoff = 0x2 // the first waiter asks for the lock to be handed to it
	FlagPickup  = 0x4 // handed off: only the named owner may pick it up
	flagMask    = 0x7
)

// Mutex is struct mutex.
type Mutex struct {
	id   int
	name string
	// owner is the owner word: task id << 3 | flags. Read and written
	// without lock (atomic_long_*).
	owner atomic.Uint64
	// waitLock guards waiters.
	waitLock spinlock.Lock
	// waiters is the FIFO wait list. Protected by waitLock.
	waiters []*task.Task
	// first mirrors waiters[0] for the wait loop's lockless
	// __mutex_waiter_is_first() (a racy read in the kernel, READ_ONCE
	// here). Written under waitLock.
	first atomic.Pointer[task.Task]
	// wctx holds each waiter's ww_acquire_ctx (mutex_waiter.ww_ctx), nil
	// for a waiter without one, parallel to waiters. Protected by
	// waitLock.
	wctx []*task.WWCtx
	// class is the ww_class of a ww_mutex, nil for a plain mutex.
	// Read-only once the machine starts.
	class *WWClass
	// ctx is ww->ctx: the context the lock was taken under. Written by
	// the owner, with or without wait_lock (the fast path sets it after
	// the acquisition, __ww_mutex_unlock clears it before the release);
	// read under wait_lock by lockers and with READ_ONCE by
	// __ww_mutex_check_kill and the spinners.
	ctx atomic.Pointer[task.WWCtx]
	// task resolves an owner id. Read-only.
	task func(id int) *task.Task
	// Watch, when an explanation replay runs, records the changes of the
	// owner word and the wait list (trace.Watch); nil otherwise. Set
	// before the machine runs, read-only after.
	Watch *trace.Watch
	// traced: acquisitions and releases are logged in the tasks' stats
	// (TaskStats.MarkMutex). Read-only once the machine starts.
	traced bool
}

// SetTraced logs the mutex's slow-path acquisitions and its releases in
// the tasks' stats (a scenario's chain). Only before the machine starts.
func (m *Mutex) SetTraced() { m.traced = true }

// Traced reports SetTraced.
func (m *Mutex) Traced() bool { return m.traced }

// New returns an unlocked mutex. resolve maps task ids (>= 1) to tasks.
func New(id int, name string, resolve func(int) *task.Task) *Mutex {
	m := &Mutex{id: id, name: name, task: resolve}
	m.waitLock.Init(spinlock.ClassWaitLock, id)
	return m
}

// ID returns the mutex's index.
func (m *Mutex) ID() int { return m.id }

func (m *Mutex) String() string { return fmt.Sprintf("%s/m%d%s", m.name, m.id, m.wwString()) }

// WaitLock returns the wait_lock.
func (m *Mutex) WaitLock() *spinlock.Lock { return &m.waitLock }

// casOwner is atomic_long_try_cmpxchg on the owner word (every writer of
// the word goes through it, so the explanation replay sees each change).
func (m *Mutex) casOwner(old, nw uint64) bool {
	if m.Watch != nil {
		return m.watchedCAS(old, nw)
	}
	return m.owner.CompareAndSwap(old, nw)
}

//go:noinline
func (m *Mutex) watchedCAS(old, nw uint64) bool {
	if !m.owner.CompareAndSwap(old, nw) {
		return false
	}
	m.Watch.Write(trace.ObjMutex, int32(m.id), trace.FieldOwner, WatchOwner(nw))
	return true
}

// WatchOwner is an owner word's value in a watched mutex->owner: the
// owner's id in the low 32 bits, the MUTEX_FLAG_* bits above.
func WatchOwner(word uint64) int64 { return int64(word>>3) | int64(word&flagMask)<<32 }

// OwnerTask is __mutex_owner(): the owner task read without lock, or nil.
func (m *Mutex) OwnerTask() *task.Task {
	w := m.owner.Load()
	if m.Watch != nil {
		m.Watch.Read(trace.ObjMutex, int32(m.id), trace.FieldOwner, WatchOwner(w))
	}
	id := w >> 3
	if id == 0 {
		return nil
	}
	return m.task(int(id))
}

// Waiters returns the wait list; wait_lock must be held (or the machine
// stopped, with c nil).
func (m *Mutex) Waiters(c *percpu.Ctx) []*task.Task {
	if c != nil {
		m.waitLock.AssertHeld(c.CPU)
	}
	return m.waiters
}

// TryLockFast is the lock fast path: take a free mutex with no flags.
func (m *Mutex) TryLockFast(c *percpu.Ctx, p *task.Task) bool {
	if m.casOwner(0, uint64(p.ID)<<3) {
		c.Inc(stats.MutexAcquires)
		p.Stats.Acquires++
		c.Emit(trace.EvLock, int32(p.ID), int32(m.id), 0, 0)
		return true
	}
	return false
}

// trylock is __mutex_trylock_common(): take a free lock, or pick up a
// lock handed to p; with handoff, ask the owner to hand it over.
func (m *Mutex) trylock(p *task.Task, handoff bool) bool {
	me := uint64(p.ID)
	for {
		old := m.owner.Load()
		flags := old & flagMask
		owner := old >> 3
		var nw uint64
		got := true
		switch {
		case owner != 0 && flags&FlagPickup != 0:
			if owner != me {
				return false
			}
			nw = old &^ FlagPickup
		case owner != 0:
			if !handoff || flags&FlagHandoff != 0 {
				return false
			}
			nw, got = old|FlagHandoff, false
		default:
			nw = me<<3 | flags&FlagWaiters
		}
		if m.casOwner(old, nw) {
			return got
		}
	}
}

// LockResult is how a call into the slow path ended.
type LockResult uint8

const (
	// LockWait: p is on the wait list, blocked_on set, in its sleep
	// state; the caller must schedule() and then call LockSlowResume.
	LockWait LockResult = iota
	// LockAcquired: the lock is p's.
	LockAcquired
	// LockEINTR: a signal ended the wait (mutex_lock_interruptible or
	// _killable returned -EINTR): p is off the wait list, RUNNING, with
	// blocked_on clear, and does not hold the lock.
	LockEINTR
	// LockSpin: p is the first waiter and, the lock still owned, is to
	// spin on the owner (mutex_optimistic_spin with a waiter): its
	// blocked_on is cleared, wait_lock and blocked_lock are dropped, it is
	// still on the wait list in its sleep state. The caller spins
	// (SpinOnOwner) and then calls SpinEnd.
	LockSpin
	// LockEDEADLK: a ww_mutex wait died or was wounded (-EDEADLK): as
	// for LockEINTR, p is off the wait list, RUNNING, blocked_on clear,
	// without the lock; the caller must back off (release every lock of
	// its context and take this one with ww_mutex_lock_slow).
	LockEDEADLK
)

// LockSlowStart is the first half of __mutex_lock_common(): under
// wait_lock, try once more, else join the wait list and, under p's
// blocked_lock, set blocked_on and the sleep state st (UNINTERRUPTIBLE,
// INTERRUPTIBLE or KILLABLE); then the top of the kernel's wait loop: try
// again with both locks held (an unlock that released the word locklessly
// after the first try, before WAITERS was set, is caught here), drop
// blocked_lock and, still under wait_lock, check for a signal
// (signal_pending_state: -EINTR) and, with a ww_acquire_ctx, for a kill
// (__ww_mutex_check_kill: -EDEADLK). LockWait means the caller must
// schedule() and then call LockSlowResume.
//
// ctx is the ww_acquire_ctx of a ww_mutex_lock (nil for mutex_lock): the
// waiter joins the list in stamp order through __ww_mutex_add_waiter,
// which may die at once (-EDEADLK before queueing: err_early_kill), wake
// younger waiters to die, or wound the holder. The wake-ups that die and
// wound queue are left on wq; the caller issues them once this returns
// (raw_spin_unlock_irqrestore_wake), before it schedules.
func (m *Mutex) LockSlowStart(c *percpu.Ctx, p *task.Task, st task.State, ctx *task.WWCtx, wq *WakeQ) LockResult {
	m.waitLock.Lock(c.CPU)
	// v21 bug (--bug ww-nested-blocked-lock): the older lock path took
	// current's blocked_lock right after wait_lock and held it across the
	// ww hooks, which then nested the victim's blocked_lock in it.
	nest := ctx != nil && c.Bug(bugs.WWNestedBlockedLock)
	if nest {
		p.BlockedLock.Lock(c.CPU)
	}
	if m.trylock(p, false) {
		if ctx != nil {
			m.checkWaiters(c, p, ctx, wq, nest)
			m.lockAcquired(c, p, ctx)
		}
		if nest {
			p.BlockedLock.Unlock(c.CPU)
		}
		m.waitLock.Unlock(c.CPU)
		m.acquired(c, p, false)
		return LockAcquired
	}
	if ctx == nil {
		m.addWaiter(p, nil, -1)
	} else if m.addWaiterWW(c, p, ctx, wq, nest) {
		// err_early_kill: never queued, blocked_on never set.
		if !nest {
			p.BlockedLock.Lock(c.CPU)
		}
		if b := p.BlockedOn(c.CPU); b != nil {
			c.Warn(check.InvMutexMisuse, p.ID, p.String(), "__mutex_lock_common err_early_kill: %v still blocked on %v", p, b)
		}
		p.BlockedLock.Unlock(c.CPU)
		c.Inc(stats.WWEDEADLK)
		c.Emit(trace.EvWWBackoff, int32(p.ID), int32(m.id), 0, 0)
		m.waitLock.Unlock(c.CPU)
		return LockEDEADLK
	}
	if !nest {
		p.BlockedLock.Lock(c.CPU)
	}
	p.SetBlockedOn(c, m)
	p.SetState(st) // set_current_state, under wait_lock and blocked_lock
	p.Stats.Contended++
	c.Inc(stats.MutexContentions)
	c.Emit(trace.EvContend, int32(p.ID), int32(m.id), int32(m.owner.Load()>>3), 0)
	return m.loopTop(c, p, st, false, ctx, wq, nest)
}

// LockSlowResume is one turn of the wait loop after schedule() returned:
// whether p is the first waiter is read before wait_lock (the kernel reads
// it without the lock), then under wait_lock and blocked_lock blocked_on
// and the sleep state st are set again (the unlock that chose p, or a
// wake-up of p, cleared blocked_on), and p tries to take the lock, the first
// waiter also asking for a hand-off; back at the loop's top it tries once
// more, drops blocked_lock and checks for a signal (and a ww kill) under
// wait_lock.
func (m *Mutex) LockSlowResume(c *percpu.Ctx, p *task.Task, st task.State, spin bool, ctx *task.WWCtx, wq *WakeQ) LockResult {
	first := m.first.Load() == p
	m.waitLock.Lock(c.CPU)
	p.BlockedLock.Lock(c.CPU)
	nest := ctx != nil && c.Bug(bugs.WWNestedBlockedLock)
	late := mutantLateBlockedOn()
	if !late {
		p.SetBlockedOn(c, m)
		p.SetState(st)
	}
	if m.trylock(p, first) {
		return m.gotItLocked(c, p, ctx, wq, nest)
	}
	if first && spin && !late {
		// "mutex_optimistic_spin() can call schedule(), so we need to
		// release these locks before calling it, and clear blocked on so
		// we don't become unselectable to run." (M) p stays on the wait
		// list, in its sleep state.
		p.ClearBlockedOn(c, m, false)
		p.BlockedLock.Unlock(c.CPU)
		m.waitLock.Unlock(c.CPU)
		c.Inc(stats.MutexWaiterSpins)
		return LockSpin
	}
	return m.loopTop(c, p, st, late, ctx, wq, nest)
}

// loopTop is the top of the wait loop, wait_lock and blocked_lock held:
// trylock (a hand-off is picked up here), blocked_lock dropped, the signal
// check and the ww kill check under wait_lock, wait_lock dropped
// (LockWait: schedule()). With nest (the v21 bug) blocked_lock is held
// across the checks, as the older code did.
func (m *Mutex) loopTop(c *percpu.Ctx, p *task.Task, st task.State, late bool, ctx *task.WWCtx, wq *WakeQ, nest bool) LockResult {
	if m.trylock(p, false) {
		return m.gotItLocked(c, p, ctx, wq, nest)
	}
	if late {
		// The mistake (mutants builds only): re-armed after wait_lock is
		// dropped, so an unlock in between hands the lock to a waiter
		// that then goes to sleep.
		p.BlockedLock.Unlock(c.CPU)
		m.waitLock.Unlock(c.CPU)
		p.BlockedLock.Lock(c.CPU)
		p.SetBlockedOn(c, m)
		p.SetState(st)
		p.BlockedLock.Unlock(c.CPU)
		return LockWait
	}
	if !nest {
		p.BlockedLock.Unlock(c.CPU)
	}
	// "Check for signals and kill conditions while holding wait_lock.
	// This ensures the lock cancellation is ordered against
	// mutex_unlock() and wake-ups do not go missing." (M)
	if p.SignalPendingState(st) {
		m.errOut(c, p, LockEINTR, nest)
		return LockEINTR
	}
	if ctx != nil && m.checkKill(p, ctx) {
		m.errOut(c, p, LockEDEADLK, nest)
		return LockEDEADLK
	}
	if nest {
		p.BlockedLock.Unlock(c.CPU)
	}
	m.waitLock.Unlock(c.CPU)
	return LockWait
}

// SpinEnd is the wait loop after the first waiter's spin: wait_lock and
// blocked_lock are taken again, blocked_on and the sleep state set again;
// if the spin took the lock p leaves the loop with it, else it goes on at
// the loop's top.
func (m *Mutex) SpinEnd(c *percpu.Ctx, p *task.Task, st task.State, acquired bool, ctx *task.WWCtx, wq *WakeQ) LockResult {
	m.waitLock.Lock(c.CPU)
	p.BlockedLock.Lock(c.CPU)
	nest := ctx != nil && c.Bug(bugs.WWNestedBlockedLock)
	p.SetBlockedOn(c, m)
	p.SetState(st)
	if acquired {
		return m.gotItLocked(c, p, ctx, wq, nest)
	}
	return m.loopTop(c, p, st, false, ctx, wq, nest)
}

// TryLock is __mutex_trylock() without wait_lock (the lock slow path tries
// once before spinning).
func (m *Mutex) TryLock(c *percpu.Ctx, p *task.Task) bool {
	if m.trylock(p, false) {
		m.acquired(c, p, false)
		return true
	}
	return false
}

// CanSpinOnOwner is mutex_can_spin_on_owner(): no reschedule pending, and
// the owner (read without a lock) running on a CPU, or no owner.
func (m *Mutex) CanSpinOnOwner(needResched bool) bool {
	if needResched {
		return false
	}
	if o := m.OwnerTask(); o != nil {
		return o.OnCPU() // owner_on_cpu: READ_ONCE(owner->on_cpu)
	}
	return true
}

// SpinResult is one turn of a spin on the owner.
type SpinResult uint8

const (
	SpinAgain    SpinResult = iota // the owner runs: spin on
	SpinAcquired                   // __mutex_trylock_or_owner took the lock
	SpinFail                       // the owner is not on a CPU, or a reschedule is due: stop spinning
)

// SpinOnOwner is one turn of mutex_optimistic_spin's loop:
// __mutex_trylock_or_owner, then mutex_spin_on_owner's tests (owner still
// on a CPU, no need_resched). waiter says whether p is the waiter-spinner
// (on the wait list: a lock acquired here is p's with p still listed, and
// SpinEnd takes it off). Lock-free, as in the kernel.
func (m *Mutex) SpinOnOwner(c *percpu.Ctx, p *task.Task, waiter, needResched bool) SpinResult {
	if m.trylock(p, false) {
		c.Inc(stats.MutexSpinAcquires)
		if !waiter {
			m.acquired(c, p, false)
		}
		return SpinAcquired
	}
	o := m.OwnerTask()
	if o != nil && (!o.OnCPU() || needResched) {
		return SpinFail
	}
	if o == nil && needResched {
		return SpinFail
	}
	return SpinAgain
}

// errOut is the err: path of __mutex_lock_common() (-EINTR for a
// signal, -EDEADLK for a ww kill), with wait_lock held (dropped on
// return): clear_task_blocked_on (which takes p's blocked_lock),
// TASK_RUNNING, off the wait list; then err_early_kill's WARN that
// blocked_on is clear (get_task_blocked_on takes blocked_lock too). No
// hand-off is lost: an unlock hands over and picks its waiter under
// wait_lock, and p's trylock at the loop top, under the same wait_lock
// hold as this check, picks a hand-off up first. A blocked_donor link
// pointing at p stays, as in the kernel: the owner's unlock hands over
// only to a donor whose blocked_on is still this lock. With nest (the v21
// bug) p's blocked_lock is already held.
func (m *Mutex) errOut(c *percpu.Ctx, p *task.Task, res LockResult, nest bool) {
	if !nest {
		p.BlockedLock.Lock(c.CPU)
	}
	p.ClearBlockedOn(c, m, false)
	if !nest {
		p.BlockedLock.Unlock(c.CPU)
	}
	p.SetState(task.Running)
	m.removeWaiter(p)
	if !nest {
		p.BlockedLock.Lock(c.CPU)
	}
	if b := p.BlockedOn(c.CPU); b != nil {
		c.Warn(check.InvMutexMisuse, p.ID, p.String(), "__mutex_lock_common err: %v still blocked on %v after leaving the wait for %v", p, b, m)
	}
	p.BlockedLock.Unlock(c.CPU)
	if res == LockEDEADLK {
		c.Inc(stats.WWEDEADLK)
		c.Emit(trace.EvWWBackoff, int32(p.ID), int32(m.id), 1, 0)
	} else {
		c.Inc(stats.MutexEINTR)
		c.Emit(trace.EvLockEINTR, int32(p.ID), int32(m.id), 0, 0)
	}
	m.waitLock.Unlock(c.CPU)
}

// gotItLocked ends a wait that took the lock: wait_lock and p's
// blocked_lock are held on entry and dropped on return. p leaves the wait
// list, blocked_on is cleared, p is RUNNING; blocked_lock is dropped,
// then (Wound-Wait, a waiter that was not first: it stole the lock) the
// waiters are checked for an older one that must wound us, and the
// context records the lock (ww_mutex_lock_acquired) before wait_lock is
// dropped. The kernel removes the waiter after the ww check; here it
// leaves first (whether it was first is read before): the ww check
// skips p's own entry either way, and nobody sees the list without
// wait_lock.
func (m *Mutex) gotItLocked(c *percpu.Ctx, p *task.Task, ctx *task.WWCtx, wq *WakeQ, nest bool) LockResult {
	first := m.first.Load() == p
	m.removeWaiter(p)
	p.ClearBlockedOn(c, m, false)
	p.SetState(task.Running)
	if !nest {
		p.BlockedLock.Unlock(c.CPU)
	}
	if ctx != nil {
		if !ctx.WaitDie && !first {
			m.checkWaiters(c, p, ctx, wq, nest)
		}
		m.lockAcquired(c, p, ctx)
	}
	if nest {
		p.BlockedLock.Unlock(c.CPU)
	}
	m.waitLock.Unlock(c.CPU)
	m.acquired(c, p, true)
	return LockAcquired
}

// addWaiter is __mutex_add_waiter() (through __ww_waiter_add): insert p
// before the waiter at pos, or at the tail for pos < 0, with its
// context; set WAITERS. wait_lock held.
func (m *Mutex) addWaiter(p *task.Task, ctx *task.WWCtx, pos int) {
	if pos < 0 {
		pos = len(m.waiters)
	}
	m.waiters = slices.Insert(m.waiters, pos, p)
	m.wctx = slices.Insert(m.wctx, pos, ctx)
	if m.Watch != nil {
		m.Watch.Write(trace.ObjMutex, int32(m.id), trace.FieldWaiters, int64(p.ID))
	}
	m.first.Store(m.waiters[0])
	m.setFlag(FlagWaiters)
}

// removeWaiter is __mutex_remove_waiter(): the last waiter leaving clears
// every flag. wait_lock held.
func (m *Mutex) removeWaiter(p *task.Task) {
	for i, w := range m.waiters {
		if w == p {
			m.waiters = append(m.waiters[:i], m.waiters[i+1:]...)
			m.wctx = append(m.wctx[:i], m.wctx[i+1:]...)
			if m.Watch != nil {
				m.Watch.Write(trace.ObjMutex, int32(m.id), trace.FieldWaiters, -int64(p.ID))
			}
			break
		}
	}
	if len(m.waiters) == 0 {
		m.first.Store(nil)
		m.clearFlag(flagMask)
		return
	}
	m.first.Store(m.waiters[0])
}

// ContentionBegin is trace_contention_begin() at the top of
// __mutex_lock_common: the lock fast path failed, and p's wait (its
// optimistic spin, then its time on the wait list) starts now.
func ContentionBegin(c *percpu.Ctx, p *task.Task) {
	p.Exec.WaitStart = c.Now
}

// acquired is the slow path's lock_acquired() and trace_contention_end():
// the wait since ContentionBegin (a spin, a sleep on the wait list, or
// nothing) is p's mutex wait, as `perf lock contention` measures it;
// waited says p was queued on the wait list (a contention that ends).
func (m *Mutex) acquired(c *percpu.Ctx, p *task.Task, waited bool) {
	c.Inc(stats.MutexAcquires)
	p.Stats.Acquires++
	p.Stats.MutexWait.Add(c.Now - p.Exec.WaitStart)
	if m.traced {
		p.Stats.MarkMutex(m.id, p.Exec.WaitStart, c.Now)
	}
	if waited {
		c.Inc(stats.MutexWaitsDone)
	}
	c.Emit(trace.EvLock, int32(p.ID), int32(m.id), 0, 0)
}

func (m *Mutex) setFlag(f uint64) {
	for {
		old := m.owner.Load()
		if old&f != 0 || m.casOwner(old, old|f) {
			return
		}
	}
}

func (m *Mutex) clearFlag(f uint64) {
	for {
		old := m.owner.Load()
		if old&f == 0 || m.casOwner(old, old&^f) {
			return
		}
	}
}

// WakeQ collects tasks to wake once wait_lock is dropped (wake_q_head).
// Owned by one CPU.
type WakeQ struct {
	Tasks []*task.Task
}

// Add is wake_q_add(): it takes a reference on p (get_task_struct), which
// wake_up_q drops after the wake-up, so that a task that exits meanwhile
// is not freed under the waker.
func (q *WakeQ) Add(p *task.Task) {
	if !mutantWakeQNoRef() {
		p.GetTaskStruct()
	}
	q.Tasks = append(q.Tasks, p)
}

// WakeQTakesRefs says whether wake_q entries hold a reference (false only
// in the mutants build with wakeq-no-ref switched on).
func WakeQTakesRefs() bool { return !mutantWakeQNoRef() }

// Unlock is mutex_unlock() by p: the fast path, else
// __mutex_unlock_slowpath() in the kernel's order. First a release loop
// on the owner word with no lock held: a blocked donor (read without a
// lock, as the kernel does with preemption off) forces a hand-off and
// leaves the word alone; a HANDOFF request does too; otherwise the word is
// released (the lock is free from here on, before wait_lock is taken) and
// without waiters that is all. Then wait_lock and p's blocked_lock: the
// donor, if it still waits for this lock, or else the first waiter is
// chosen and its blocked_on cleared under its own blocked_lock (nested), the
// lock is handed to it if the release loop decided so, and it is queued
// on wq for the caller to wake once both locks are dropped.
func (m *Mutex) Unlock(c *percpu.Ctx, p *task.Task, wq *WakeQ) {
	me := uint64(p.ID)
	if m.casOwner(me<<3, 0) {
		c.Emit(trace.EvUnlock, int32(p.ID), int32(m.id), 0, 0)
		return
	}
	forced := false
	var old uint64
	for {
		old = m.owner.Load()
		if old>>3 != me {
			// MUTEX_WARN(__owner_task(owner) != current)
			c.Warn(check.InvMutexMisuse, p.ID, p.String(), "mutex_unlock: %v unlocks %v owned by %d", p, m, old>>3)
			return
		}
		if c.Proxy && p.BlockedDonor() != nil {
			// A blocked donor forces hand-off mode: the lock goes straight
			// to the donor the scheduler ranked highest, and no spinner
			// can steal it. The owner word stays ours until the hand-off.
			forced = true
			break
		}
		if old&FlagHandoff != 0 {
			break // the first waiter asked for it: hand it over below
		}
		if m.casOwner(old, old&flagMask) {
			if old&FlagWaiters == 0 {
				c.Emit(trace.EvUnlock, int32(p.ID), int32(m.id), 0, 0)
				return
			}
			break // released; wake a waiter to compete for it
		}
	}
	m.waitLock.Lock(c.CPU)
	p.BlockedLock.Lock(c.CPU)
	var next *task.Task
	donorHandoff := false
	if c.Proxy {
		if d := p.BlockedDonor(); d != nil {
			d.BlockedLock.LockNestedRoles(c.CPU, spinlock.RoleOwner, spinlock.RoleWaiter)
			if d.BlockedOn(c.CPU) == task.Lock(m) {
				next = d
				donorHandoff = true
				d.ClearBlockedOn(c, m, true)
				p.SetBlockedDonor(nil)
			}
			d.BlockedLock.Unlock(c.CPU)
		}
	}
	if next == nil && len(m.waiters) > 0 {
		next = m.waiters[0]
		next.BlockedLock.LockNestedRoles(c.CPU, spinlock.RoleOwner, spinlock.RoleWaiter)
		next.ClearBlockedOn(c, m, true)
		next.BlockedLock.Unlock(c.CPU)
	}
	if next != nil {
		wq.Add(next)
	}
	if forced || old&FlagHandoff != 0 {
		m.handoff(next)
		c.Inc(stats.MutexHandoffs)
		if donorHandoff {
			c.Inc(stats.DonorHandoffs)
		}
		if next != nil {
			b := int32(0)
			if donorHandoff {
				b = 1
			}
			c.Emit(trace.EvHandoff, int32(next.ID), int32(m.id), b, 0)
		}
	}
	nid := int32(0)
	if next != nil {
		nid = int32(next.ID)
	}
	c.Emit(trace.EvUnlock, int32(p.ID), int32(m.id), nid, 0)
	p.BlockedLock.Unlock(c.CPU)
	m.waitLock.Unlock(c.CPU)
}

// handoff is __mutex_handoff(): give the lock to next (PICKUP), or free
// it if there is nobody.
func (m *Mutex) handoff(next *task.Task) {
	for {
		old := m.owner.Load()
		nw := old & FlagWaiters
		if next != nil {
			nw |= uint64(next.ID)<<3 | FlagPickup
		}
		if m.casOwner(old, nw) {
			return
		}
	}
}

// Peek returns owner word and waiters without locks: only for audits with
// every CPU parked.
func (m *Mutex) Peek() (owner *task.Task, flags uint64, waiters []*task.Task) {
	w := m.owner.Load()
	return m.OwnerTask(), w & flagMask, m.waiters
}

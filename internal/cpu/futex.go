// This file mirrors kernel/futex/waitwake.c (torvalds/linux @0ea5c948cb64:
// futex_wait_setup / futex_wait_queue, futex_wake) and the user-space side
// schbench builds on it (masoncl/schbench @c3d60f6, schbench.c: fpost,
// fwait, xlist_add, xlist_wake_all, lock_this_cpu). Nothing here is a
// kernel mutex: a futex waiter sleeps in TASK_INTERRUPTIBLE with no
// blocked_on, so proxy execution has nothing to do with it; schbench's
// per-CPU lock is a pthread mutex taken by trylock spinning in user space,
// which the kernel never sees.

package cpu

import (
	"sync/atomic"

	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// schbench's futex word values.
const (
	futexRunning = 0 // FUTEX_RUNNING
	futexBlocked = 1 // FUTEX_BLOCKED
)

// userSpinChunk is the longest stretch of a user-space trylock spin in
// one step: the model notices a release up to this late.
const userSpinChunk = 10_000

// spinLockClassFutex is the class of a futex hash bucket's lock: a leaf
// (futex_wake marks its wake-ups under hb->lock and issues them after).
const spinLockClassFutex = spinlock.ClassOther

// futexBucket is the futex_hash_bucket of one futex word. The kernel
// hashes many words into each of 256 x CPUs buckets; the model gives each
// word its own, so no two futexes ever share a bucket's lock.
type futexBucket struct {
	lock spinlock.Lock // hb->lock
	// waiters are the queued futex_q's tasks, oldest first. Guarded by
	// lock; a task's Wait.Queued says whether it is still queued
	// (futex_q.lock_ptr != NULL), read without the lock by the waiter.
	waiters []*task.Task
	// pending is hb->waiters (futex_hb_waiters_pending, read without the
	// lock by futex_wake): an atomic.
	pending atomic.Int32
}

// xnode is one link of schbench's xlist (thread_data->next).
type xnode struct {
	t    *uthread
	next *xnode
}

// uthread is schbench's struct thread_data: the futex word, wake_time,
// and a message thread's list of posted workers.
type uthread struct {
	id   int
	name string
	msg  *uthread // the message thread (nil for a message thread)
	// futex is td->futex, user memory: cmpxchg and stores from any CPU,
	// read by futex_wait under hb->lock (get_futex_value_locked): an
	// atomic.
	futex atomic.Int32
	// wakeTime is td->wake_time: written by the worker before it posts
	// itself and by its message thread before the fpost that wakes it,
	// read by the worker after fwait (the futex cmpxchg orders them): an
	// atomic.
	wakeTime atomic.Int64
	// list is a message thread's xlist head (td->next), pushed by workers
	// with cmpxchg and spliced with cmpxchg by the message thread.
	list atomic.Pointer[xnode]
	// pending and stamp are a message thread's list being woken and the
	// gettimeofday of the list run (xlist_wake_all's locals): touched only
	// by the message thread's task.
	pending *xnode
	stamp   int64
	hb      futexBucket
}

// int32Word is a word of user memory.
type int32Word = atomic.Int32

// userLocks is schbench's per_cpu_locks: one pthread mutex per CPU, held
// word 0 when free, else the holder's task id + 1.
type userLocks struct {
	id   int
	name string
	held []int32Word
}

// futexWake is futex_wake(uaddr, 1): if hb->waiters says nobody waits,
// nothing; else under hb->lock the first queued waiter is unqueued
// (futex_wake_mark, with a task reference), and woken after the unlock
// (wake_up_q).
func (cp *CPU) futexWake(ut *uthread) {
	c := cp.c
	c.Inc(stats.FutexWakes)
	hb := &ut.hb
	if hb.pending.Load() == 0 {
		return
	}
	hb.lock.Lock(c.CPU)
	var t *task.Task
	if len(hb.waiters) > 0 {
		t = hb.waiters[0]
		hb.waiters = hb.waiters[1:]
		t.GetTaskStruct()
		t.Wait.Queued.Store(false)
		hb.pending.Add(-1)
	}
	hb.lock.Unlock(c.CPU)
	if t != nil {
		if cp.m.tryToWakeUp(c, t, task.WakeNormal) {
			c.Inc(stats.WaitQueueWakes)
		}
		t.PutTaskStruct()
	}
}

// fpost is schbench's fpost(): cmpxchg the word BLOCKED -> RUNNING and,
// if that succeeded, FUTEX_WAKE one waiter (op.Min ns of system call).
func (cp *CPU) fpost(p *task.Task, op *task.Op, ut *uthread) {
	if ut.futex.CompareAndSwap(futexBlocked, futexRunning) {
		cp.advance(op.Min)
		cp.futexWake(ut)
	}
}

// fwait is schbench's fwait() on p's own word: cmpxchg RUNNING ->
// BLOCKED ends it; else FUTEX_WAIT(BLOCKED) (op.Min ns of system call):
// under hb->lock, a word that changed is -EAGAIN; else the futex_q is
// queued, TASK_INTERRUPTIBLE, schedule(); after the wake-up (or a
// spurious one, or a signal) the futex_q is taken off if still queued and
// the loop goes round. With op.Count 1 the wake-up latency schbench
// measures (gettimeofday after the wait minus wake_time) is recorded.
func (cp *CPU) fwait(p *task.Task, op *task.Op, ut *uthread) {
	c := cp.c
	ex := &p.Exec
	hb := &ut.hb
	if ex.Phase == 1 {
		// Back from schedule(): futex_unqueue if nobody woke us.
		p.SetState(task.Running)
		if p.Wait.Queued.Load() {
			hb.lock.Lock(c.CPU)
			if p.Wait.Queued.Load() {
				for i, t := range hb.waiters {
					if t == p {
						hb.waiters = append(hb.waiters[:i], hb.waiters[i+1:]...)
						break
					}
				}
				p.Wait.Queued.Store(false)
				hb.pending.Add(-1)
			}
			hb.lock.Unlock(c.CPU)
		}
		ex.Phase = 0
		return
	}
	if ut.futex.CompareAndSwap(futexRunning, futexBlocked) {
		if op.Count == 1 {
			if d := c.Now - ut.wakeTime.Load(); d > 0 {
				p.Stats.UserWake.Add(d)
			}
		}
		ex.PC++
		return
	}
	cp.advance(op.Min)
	c.Inc(stats.FutexWaits)
	hb.pending.Add(1) // futex_q_lock: waiters++ before the lock
	hb.lock.Lock(c.CPU)
	if ut.futex.Load() != futexBlocked {
		hb.lock.Unlock(c.CPU)
		hb.pending.Add(-1)
		return // -EWOULDBLOCK: round the loop
	}
	p.SetState(task.Interruptible)
	hb.waiters = append(hb.waiters, p)
	p.Wait.Queued.Store(true)
	hb.lock.Unlock(c.CPU)
	ex.Phase = 1
	c.Inc(stats.WaitQueueSleeps)
	c.Emit(trace.EvSys, int32(p.ID), int32(op.Sys), int32(op.Obj), trace.SysSleep)
	cp.schedule(false)
}

// xlistAdd is msg_and_wait's first half: wake_time stamped
// (gettimeofday), then xlist_add of the thread onto its message thread's
// list (a cmpxchg loop on the head).
func (cp *CPU) xlistAdd(p *task.Task, ut *uthread) {
	ut.wakeTime.Store(cp.c.Now)
	if mt := ut.msg; mt != nil {
		for {
			old := mt.list.Load()
			if mt.list.CompareAndSwap(old, &xnode{t: ut, next: old}) {
				break
			}
		}
	}
	p.Exec.PC++
}

// xlistWakeAll is xlist_wake_all on message thread ut: splice the list
// and take one gettimeofday for all, then, one thread per step, store it
// as the thread's wake_time and fpost it (op.Min ns of FUTEX_WAKE when
// the thread was blocked).
func (cp *CPU) xlistWakeAll(p *task.Task, op *task.Op, ut *uthread) {
	ex := &p.Exec
	if ex.Phase == 0 {
		for {
			old := ut.list.Load()
			if ut.list.CompareAndSwap(old, nil) {
				ut.pending = old
				break
			}
		}
		ut.stamp = cp.c.Now
		ex.Phase = 1
	}
	if n := ut.pending; n != nil {
		ut.pending = n.next
		n.t.wakeTime.Store(ut.stamp)
		cp.fpost(p, op, n.t)
		if ut.pending != nil {
			return
		}
	}
	ex.Phase = 0
	ex.PC++
}

// uspinLock is schbench's lock_this_cpu(): sched_getcpu, then
// pthread_mutex_trylock on that CPU's lock until it succeeds (the spin is
// user time, up to userSpinChunk a step); then sched_getcpu again, and if
// the task moved meanwhile the lock is released and it starts over.
func (cp *CPU) uspinLock(p *task.Task, op *task.Op, ul *userLocks) {
	c := cp.c
	ex := &p.Exec
	if ex.Phase == 0 {
		ex.Sys.Slot = cp.id % len(ul.held)
		ex.Phase = 1
	}
	w := &ul.held[ex.Sys.Slot]
	if w.CompareAndSwap(0, int32(p.ID)+1) {
		ex.Phase = 0
		if cp.id%len(ul.held) != ex.Sys.Slot {
			w.Store(0)
			ex.Sys.Slot = -1
			c.Inc(stats.USpinRetries)
			return
		}
		ex.PC++
		return
	}
	c.Inc(stats.USpinTurns)
	cp.advance(max(cp.clampToEvents(userSpinChunk), 1))
	c.CPU.YieldPoint()
}

// uspinUnlock is pthread_mutex_unlock of the lock uspinLock took (no
// waiter is ever recorded by trylock: no FUTEX_WAKE).
func (cp *CPU) uspinUnlock(p *task.Task, op *task.Op, ul *userLocks) {
	if s := p.Exec.Sys.Slot; s >= 0 {
		ul.held[s].Store(0)
		p.Exec.Sys.Slot = -1
	}
	p.Exec.PC++
}

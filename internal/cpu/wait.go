// This file mirrors kernel/sched/wait.c and include/linux/wait.h: wait queue
// heads, the wait_event loop (prepare_to_wait_event, finish_wait), the
// woken-flag wait of sk_wait_data (wait_woken, woken_wake_function) and
// __wake_up_common. The benchmark workloads' kernel objects (pipe.go,
// sock.go) sleep on them.

package cpu

import (
	"sync/atomic"

	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// waitQueue is a wait_queue_head_t.
type waitQueue struct {
	lock spinlock.Lock // wq_head->lock
	// list is wq_head->head: the queued entries (their tasks), exclusive
	// ones at the tail. Guarded by lock.
	list []*task.Task
	// n mirrors len(list) for waitqueue_active() / wq_has_sleeper(),
	// which read the list head without the lock: written under lock.
	n atomic.Int32
}

func newWaitQueue(id int) *waitQueue {
	wq := &waitQueue{}
	wq.lock.Init(spinlock.ClassWaitQueue, id)
	return wq
}

// active is waitqueue_active() (wq_has_sleeper's test after its barrier).
func (wq *waitQueue) active() bool { return wq.n.Load() > 0 }

// add queues p's entry (lock held): __add_wait_queue at the head, or
// __add_wait_queue_entry_tail for an exclusive entry.
func (wq *waitQueue) add(p *task.Task, exclusive, wokenFunc bool) {
	p.Wait.Exclusive, p.Wait.WokenFunc = exclusive, wokenFunc
	if exclusive {
		wq.list = append(wq.list, p)
	} else {
		wq.list = append(wq.list, nil)
		copy(wq.list[1:], wq.list)
		wq.list[0] = p
	}
	p.Wait.Queued.Store(true)
	wq.n.Store(int32(len(wq.list)))
}

// del unqueues p's entry (lock held): list_del_init.
func (wq *waitQueue) del(p *task.Task) {
	for i, t := range wq.list {
		if t == p {
			wq.list = append(wq.list[:i], wq.list[i+1:]...)
			break
		}
	}
	p.Wait.Queued.Store(false)
	wq.n.Store(int32(len(wq.list)))
}

// prepareToWaitEvent is prepare_to_wait_event(): under the queue's lock,
// a pending signal for state st aborts the wait (-ERESTARTSYS: false);
// otherwise p's entry is queued if it is not and p's state set.
func (cp *CPU) prepareToWaitEvent(wq *waitQueue, p *task.Task, exclusive bool, st task.State) bool {
	c := cp.c
	wq.lock.Lock(c.CPU)
	if p.SignalPendingState(st) {
		if p.Wait.Queued.Load() {
			wq.del(p)
		}
		wq.lock.Unlock(c.CPU)
		return false
	}
	if !p.Wait.Queued.Load() {
		wq.add(p, exclusive, false)
	}
	p.SetState(st)
	wq.lock.Unlock(c.CPU)
	return true
}

// finishWait is finish_wait(): TASK_RUNNING, and the entry off the queue
// if a wake-up did not take it off already (list_empty_careful, then
// the lock).
func (cp *CPU) finishWait(wq *waitQueue, p *task.Task) {
	p.SetState(task.Running)
	if p.Wait.Queued.Load() {
		wq.lock.Lock(cp.c.CPU)
		if p.Wait.Queued.Load() {
			wq.del(p)
		}
		wq.lock.Unlock(cp.c.CPU)
	}
}

// wakeUp is __wake_up_common_lock(wq, mode, nrExclusive, ...): under the
// queue's lock, every entry's wake function in queue order until
// nrExclusive exclusive entries were woken (0: all). An entry queued by
// the wait_event loop (autoremove_wake_function) leaves the queue when
// try_to_wake_up succeeds; a woken_wake_function entry (sk_wait_data)
// gets WQ_FLAG_WOKEN and stays. Returns how many tasks were woken.
func (cp *CPU) wakeUp(wq *waitQueue, mode task.StateMask, nrExclusive int) int {
	c, m := cp.c, cp.m
	wq.lock.Lock(c.CPU)
	woken := 0
	for i := 0; i < len(wq.list); {
		t := wq.list[i]
		excl := t.Wait.Exclusive
		if t.Wait.WokenFunc {
			t.Wait.Woken.Store(true) // woken_wake_function: WQ_FLAG_WOKEN first
		}
		ok := m.tryToWakeUp(c, t, mode)
		if ok {
			woken++
			c.Inc(stats.WaitQueueWakes)
		}
		if ok && !t.Wait.WokenFunc {
			wq.del(t) // autoremove_wake_function: list_del_init_careful
		} else {
			i++
		}
		if ok && excl {
			if nrExclusive--; nrExclusive == 0 {
				break
			}
		}
	}
	wq.lock.Unlock(c.CPU)
	return woken
}

// waitEvent is one step of wait_event_interruptible[_exclusive](wq,
// cond) (___wait_event): the condition first; then, per pass,
// prepare_to_wait_event, the condition again, and schedule(). It returns
// true when the condition held (finish_wait done) and the caller goes
// on. A signal (-ERESTARTSYS) leaves the wait with Exec.Phase 0 and
// SysState.Restart set: the task handles the signal at the instruction
// boundary and comes back into the loop. Phase 1 is "in the loop".
func (cp *CPU) waitEvent(p *task.Task, op *task.Op, wq *waitQueue, exclusive bool, cond func() bool) bool {
	ex := &p.Exec
	if ex.Phase == 0 && !ex.Sys.Restart {
		if cond() {
			return true
		}
	}
	ex.Sys.Restart = false
	ex.Phase = 1
	if !cp.prepareToWaitEvent(wq, p, exclusive, task.Interruptible) {
		p.SetState(task.Running)
		ex.Phase = 0
		ex.Sys.Restart = true
		return false
	}
	if cond() {
		cp.finishWait(wq, p)
		ex.Phase = 0
		return true
	}
	cp.c.Inc(stats.WaitQueueSleeps)
	cp.c.Emit(trace.EvSys, int32(p.ID), int32(op.Sys), int32(op.Obj), trace.SysSleep)
	cp.schedule(false)
	return false
}

// This file mirrors kernel/time/hrtimer.c in miniature: per-CPU sleep timers.

package cpu

import (
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/task"
)

type timer struct {
	when int64
	id   uint64
	p    *task.Task
	kind timerKind
}

// timerKind says what a timer does when it fires.
type timerKind uint8

const (
	timerSleep timerKind = iota // hrtimer_wakeup: wake p
	timerDL                     // dl_task_timer: replenish p's SCHED_DEADLINE budget
)

// armTimer queues a wakeup of p at virtual time when.
func (cp *CPU) armTimer(p *task.Task, when int64) uint64 {
	return cp.armTimerKind(p, when, timerSleep)
}

// armTimerKind queues a timer of the given kind for p at virtual time
// when, on this CPU (which must be the caller's).
func (cp *CPU) armTimerKind(p *task.Task, when int64, kind timerKind) uint64 {
	c := cp.c
	cp.timerLock.Lock(c.CPU)
	cp.timerID++
	id := cp.timerID
	cp.timers = append(cp.timers, timer{when: when, id: id, p: p, kind: kind})
	sortTimers(cp.timers)
	cp.timerLock.Unlock(c.CPU)
	return id
}

// sortTimers moves the last timer into place, keeping the list sorted by
// (when, id); lists are short. Called once per appended timer.
func sortTimers(ts []timer) {
	for i := len(ts) - 1; i > 0; i-- {
		a, b := ts[i-1], ts[i]
		if a.when < b.when || (a.when == b.when && a.id < b.id) {
			break
		}
		ts[i-1], ts[i] = b, a
	}
}

// cancelTimer is hrtimer_cancel(): remove timer id from CPU owner's list,
// from CPU c, or, if its callback is running on owner (fireTimers popped
// it and has not finished), wait for the callback to end
// (hrtimer_cancel_wait_running). A sleeper that a signal woke cancels its
// hrtimer_sleeper this way before it returns from the sleep, so it
// cannot exit, and drop its last reference, while hrtimer_wakeup is
// still about to wake it.
func (m *Machine) cancelTimer(c *percpu.Ctx, owner int, id uint64) {
	t := m.cpus[owner]
	for {
		t.timerLock.Lock(c.CPU)
		for i, tm := range t.timers {
			if tm.id == id {
				t.timers = append(t.timers[:i], t.timers[i+1:]...)
				t.timerLock.Unlock(c.CPU)
				return
			}
		}
		running := t.timerRunning == id
		t.timerLock.Unlock(c.CPU)
		if !running {
			return
		}
		c.Relax()
	}
}

func (cp *CPU) nextTimer() int64 {
	c := cp.c
	cp.timerLock.Lock(c.CPU)
	next := int64(1<<62 - 1)
	if len(cp.timers) > 0 {
		next = cp.timers[0].when
	}
	cp.timerLock.Unlock(c.CPU)
	return next
}

// fireTimers runs expired timers: each wakes its task (hrtimer_wakeup),
// in hard-IRQ context (hrtimer_interrupt).
func (cp *CPU) fireTimers() {
	c := cp.c
	c.HardirqEnter()
	defer c.HardirqExit()
	for {
		cp.timerLock.Lock(c.CPU)
		if len(cp.timers) == 0 || cp.timers[0].when > c.Now {
			cp.timerLock.Unlock(c.CPU)
			return
		}
		tm := cp.timers[0]
		cp.timers = cp.timers[1:]
		cp.timerRunning = tm.id // cpu_base->running: hrtimer_cancel waits for it
		cp.timerLock.Unlock(c.CPU)
		if tm.kind == timerDL {
			cp.m.dlTaskTimer(c, tm.p, tm.id)
		} else {
			cp.m.tryToWakeUp(c, tm.p, task.WakeInterruptible)
		}
		cp.timerLock.Lock(c.CPU)
		cp.timerRunning = 0
		cp.timerLock.Unlock(c.CPU)
	}
}

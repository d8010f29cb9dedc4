// This file is the goroutine shell of a CPU: its loop, IPIs (smp_send_reschedule,
// the wake-list and balance kicks, the stopper), its virtual clock. No
// kernel file: this is the hardware and the idle loop.

package cpu

import (
	"fmt"
	"math"
	"runtime/debug"
	"sync/atomic"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/mutex"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// IPI kinds.
const (
	ipiResched  uint32 = 1 << iota // smp_send_reschedule: need_resched is already set
	ipiWakeList                    // sched_ttwu_pending: activate the wake list
	ipiBalance                     // nohz_balancer_kick: an idle CPU should pull
	ipiStopper                     // stop_one_cpu(migration_cpu_stop): move an affinity-broken curr
	ipiHotplug                     // a hotplug request is posted (hpReq)
	ipiPush                        // stop_one_cpu_nowait(__balance_push_cpu_stop): push curr off a dying CPU
	ipiFork                        // respawn: wake_up_new_task of the tasks in forks (posted at the barrier)
)

// CPU is one simulated CPU: a goroutine, its runqueue and its context.
type CPU struct {
	m  *Machine
	id int
	rq *rq.RQ
	c  *percpu.Ctx

	// wakeList is the llist of tasks queued by remote ttwu for this CPU
	// to activate (rq->wake_list). Lock-free: pushed by wakers holding
	// the task's pi_lock, drained by this CPU.
	wakeList atomic.Pointer[task.Task]
	// ipi holds pending IPI kinds. Set by senders; taken by this CPU.
	ipi atomic.Uint32
	// kick wakes this CPU's goroutine when it is parked.
	kick chan struct{}
	// ipiTime is the latest clock of a CPU that sent this one an IPI: a
	// parked idle CPU woken by it continues from there.
	ipiTime atomic.Int64
	// ipiAt is the earliest clock at which a pending IPI was sent
	// (noIPI: none since the last handleIPIs; 0: posted at the
	// barrier). An IPI sent at or past the epoch's horizon does not
	// un-park its target within the epoch (barrier.arrive).
	ipiAt atomic.Int64

	// timerLock guards timers and timerID (the hrtimer base lock). Timers
	// are armed by this CPU and cancelled by whichever CPU runs the task
	// when it resumes.
	timerLock spinlock.Lock
	timers    []timer
	timerID   uint64
	// timerRunning is the id of the timer whose callback fireTimers is
	// running (hrtimer_cpu_base->running), 0 if none. Protected by
	// timerLock.
	timerRunning uint64

	// Owned by this CPU's goroutine.
	//
	// sd[i] is the newidle cost state of this CPU's i-th balance span
	// (its sched_domain at that level), read and written by this CPU
	// only: newidle and its balance softirq. (The kernel's nohz idle
	// balancer also decays an idle CPU's costs from another CPU; the
	// model's kicked CPU balances for itself.)
	sd           []sdNewidle
	nextTick     int64
	lastBalance  int64
	shuffleTicks int64
	// srqTicks counts ticks towards the next SHARED_RUNQ toggle; srqPopped
	// is the task a shared_runq pull has popped and not yet rechecked
	// under task_rq_lock (scenario interrupts look at it).
	srqTicks  int64
	srqPopped *task.Task
	// signalDue and spuriousDue accumulate the stress injectors' rates
	// per tick; one event fires per whole unit.
	signalDue, spuriousDue float64
	busy                   int64 // virtual time spent executing tasks
	wq                     mutex.WakeQ
	// rcuPuts are the delayed_put_task_struct callbacks this CPU queued
	// with call_rcu in this epoch (dead tasks' own references). Appended
	// by this CPU; run at the epoch barrier, where every CPU is between
	// steps and so outside any read side (rcuBarrierPuts).
	rcuPuts []*task.Task
	// stopWork lists tasks whose affinity no longer allows this CPU and
	// which were running when it changed. Protected by the rq lock.
	stopWork []*task.Task
	// inSchedule is set while this CPU is inside __schedule, from its rq
	// lock to the final unlock, the stretches where the pick has dropped
	// the lock (find_proxy_task's migrations and activations, newidle)
	// included. Protected by the rq lock (model bookkeeping for
	// invariant 44: a sibling inside __schedule runs the scheduler, not
	// its prev's code).
	inSchedule bool

	// CPU hotplug (internal/cpu/hotplug.go). hpReq is the pending request,
	// posted by any CPU or the barrier, taken by this CPU.
	hpReq atomic.Int32
	// deactEpoch is the epoch count at sched_cpu_deactivate (written by
	// this CPU under its rq lock, read at the barrier).
	deactEpoch uint64
	// balancePush is rq->balance_callback == &balance_push_callback;
	// pushTask is __balance_push_cpu_stop's task (push_work). Both
	// protected by the rq lock.
	balancePush bool
	pushTask    *task.Task
	// nrPinned is rq->nr_pinned: migrate-disabled tasks that ran here.
	// Written by the task running here (the kernel: this_rq() with
	// preemption off); read by this CPU and at the barrier.
	nrPinned int
	// forks are TASK_NEW tasks this CPU is to wake (wake_up_new_task):
	// written at the barrier (respawnEpoch), taken by this CPU.
	forks []fork
}

// noIPI is ipiAt with no IPI pending.
const noIPI = math.MaxInt64

func (cp *CPU) pending() bool {
	return cp.ipi.Load() != 0 || cp.wakeList.Load() != nil
}

// sendIPI posts an IPI of the given kind to CPU target from CPU c.
func (m *Machine) sendIPI(c *percpu.Ctx, target int, kind uint32) {
	t := m.cpus[target]
	var at int64 // posted at the barrier
	if c != nil {
		at = c.Now
		for {
			old := t.ipiTime.Load()
			if c.Now <= old || t.ipiTime.CompareAndSwap(old, c.Now) {
				break
			}
		}
	}
	// Before the kind bits: handleIPIs resets ipiAt before it takes
	// them, so a time is never lost for bits that are still pending.
	for {
		old := t.ipiAt.Load()
		if at >= old || t.ipiAt.CompareAndSwap(old, at) {
			break
		}
	}
	t.ipi.Or(kind)
	if c != nil {
		c.Inc(stats.IPIs)
		c.Emit(trace.EvIPI, 0, int32(target), int32(kind), 0)
	}
	// The sender is running in this epoch only while its clock is before
	// the horizon; an IPI sent past it is taken in the next epoch. (Two
	// CPUs past the horizon that IPI each other would otherwise keep the
	// epoch open for ever and stop every other CPU at the barrier.)
	if at < m.bar.horizon.Load() {
		m.bar.wake(target)
	}
	if c != nil {
		m.runner.yield(c.ID) // sending an IPI is a yield point
	}
	m.runner.kick(t)
}

// kickResched is the rq's resched IPI.
func (m *Machine) kickResched(c *percpu.Ctx, cpu int) { m.sendIPI(c, cpu, ipiResched) }

// advance moves this CPU's clock; time spent with a task as curr is busy
// time.
func (cp *CPU) advance(d int64) {
	if d <= 0 {
		return
	}
	cp.c.Now += d
	if cp.rq.Curr() != cp.rq.Idle {
		cp.busy += d
	}
	cp.c.Stats.SimTime.Store(cp.c.Now)
}

// run is the CPU's main loop: interrupts, tick, schedule, one step of
// work, and the epoch barrier.
func (cp *CPU) run() {
	defer cp.m.wg.Done()
	m := cp.m
	m.runner.enter(cp.id)
	// Deferred before the recover handler so that it runs after it: a
	// panicking CPU records its violation while it still holds the
	// conductor's turn, before any other CPU can add an event.
	defer m.runner.exit(cp.id)
	defer func() {
		if e := recover(); e != nil {
			cp.m.Report(cp.c, check.InvInternal, cp.rq.Curr(), fmt.Sprintf("panic: %v\n%s", e, debug.Stack()))
			cp.m.Stop("panic on cpu " + fmt.Sprint(cp.id))
		}
	}()
	for {
		if m.stopping.Load() {
			return
		}
		h := m.bar.horizon.Load()
		idle := cp.iterate(h)
		m.runner.yield(cp.id) // the end of a slice of work is a yield point
		if idle {
			if !m.bar.arrive(cp) {
				return
			}
			if cp.rq.Curr() == cp.rq.Idle {
				// An idle CPU's clock catches up with the epoch it slept
				// through, or with the CPU that interrupted it.
				to := h
				if m.bar.horizon.Load() == h {
					to = cp.ipiTime.Load()
				}
				if to > cp.c.Now {
					cp.advance(to - cp.c.Now)
				}
				cp.resyncTick()
			}
		}
	}
}

// iterate is one turn of the CPU loop: take interrupts (IPIs, timers, the
// tick), reschedule if asked to, then run one step of the current task.
// It returns true when the CPU has reached horizon (or is idle with
// nothing due before it) and should wait at the barrier.
func (cp *CPU) iterate(horizon int64) bool {
	c, r := cp.c, cp.rq
	mutantPanic(cp)
	if cp.m.hotplug {
		if cp.hpReq.Load() != hpNone {
			cp.takeHotplugRequest()
		}
		if !cp.m.cpuOnline(cp.id) {
			cp.offlineIdle()
			return true
		}
	}
	if cp.pending() {
		cp.handleIPIs()
	}
	cp.fireTimers()
	curr := r.Curr()
	if curr != r.Idle && c.Now >= cp.nextTick {
		cp.tick()
	}
	if r.NeedResched() && !spinning(curr) {
		cp.schedule(true)
		return c.Now >= horizon
	}
	if curr == r.Idle {
		// NOHZ idle: jump to the next timer, or park until the epoch
		// ends or an IPI arrives.
		if next := cp.nextTimer(); next <= horizon {
			if next > c.Now {
				cp.advance(next - c.Now)
			}
			return false
		}
		return true
	}
	cp.step(curr)
	return c.Now >= horizon
}

// handleIPIs takes the pending interrupts.
func (cp *CPU) handleIPIs() {
	cp.ipiAt.Store(noIPI)
	kinds := cp.ipi.Swap(0)
	if cp.rq.Curr() == cp.rq.Idle {
		// Idle until interrupted: the clock moves to the sender's.
		if t := cp.ipiTime.Load(); t > cp.c.Now {
			cp.advance(t - cp.c.Now)
		}
	}
	if kinds&ipiWakeList != 0 || cp.wakeList.Load() != nil {
		// The call-function IPI: sched_ttwu_pending() in hard-IRQ
		// context.
		cp.c.HardirqEnter()
		cp.ttwuPending()
		cp.c.HardirqExit()
	}
	if kinds&ipiStopper != 0 {
		// The stopper thread (process context); migration_cpu_stop()
		// runs with IRQs off (local_irq_save, then pi_lock and rq lock).
		cp.c.IrqDisable()
		cp.migrationStop()
		cp.c.IrqEnable()
	}
	if kinds&ipiPush != 0 {
		// The stopper again: __balance_push_cpu_stop() takes pi_lock
		// with raw_spin_lock_irq, then the rq lock.
		cp.c.IrqDisable()
		cp.balancePushStop()
		cp.c.IrqEnable()
	}
	if kinds&ipiFork != 0 {
		cp.forkPending()
	}
	if kinds&ipiBalance != 0 && cp.rq.Curr() == cp.rq.Idle {
		// nohz_balancer_kick's IPI raises SCHED_SOFTIRQ: the nohz idle
		// balance runs in softirq context.
		cp.c.SoftirqEnter()
		cp.idleBalance()
		cp.c.SoftirqExit()
	}
}

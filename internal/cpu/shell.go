// This file is the goroutine shell of a CPU: its loop, IPIs (smp_send_reschedule,
// the wake-list and balance kicks, the stopper), its virtual clock. No
// kernel file: this is the hardware and the idle loop.

package cpu

import (
	"fmt"
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
	// ipiTime is the latest clock of a CPU that sent this one an IPI
	// still pending (0: none, or only IPIs the barrier posted): the CPU
	// takes its pending IPIs once its clock is there (a parked idle CPU
	// jumps there).
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

	// undo is this CPU's last step when it was a pure advance of its
	// clock (cut short by undoAdvance when an IPI sent within it comes
	// in); undo.from < 0 when the last step did anything else. Owned by
	// this CPU's goroutine.
	undo pureAdvance

	// releasedAt is the virtual time the barrier released this CPU for
	// (written by the barrier under its lock while the CPU is parked;
	// read and cleared by the CPU once it runs again).
	releasedAt int64

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
	// srqDefects are the moves this CPU's shared_runq pulls made that a
	// later hook placement refuses (SRQKnownDefects), read once the
	// machine has stopped.
	srqDefects []srqDefectHit
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
	// outrankedSince is the virtual time of the first tick that found a
	// queued RT or DL task outranking rq->donor with no need_resched
	// (invariant 65), -1 when none. Read and written only by this CPU,
	// at its ticks and picks.
	outrankedSince int64

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
const noIPI = never

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
// work, and the window barrier.
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
			at, busy := cp.wakeAt()
			if !m.bar.arrive(cp, at, busy) {
				return
			}
			// An idle CPU released by the barrier moves up to the time it
			// was released for (its timer, the end of an epoch it slept
			// through); one woken by an IPI moves up to the sender's clock
			// in handleIPIs.
			if to := cp.releasedAt; to > cp.c.Now && cp.rq.Curr() == cp.rq.Idle {
				cp.undo = pureAdvance{from: cp.c.Now}
				cp.idleJump(to)
				// A yield point before its timers fire: a CPU behind
				// this clock may have an IPI for an earlier time.
				m.runner.yield(cp.id)
			}
			cp.releasedAt = 0
		}
	}
}

// wakeAt says, for a CPU about to park at the barrier, from when it has
// something to do on its own (never: only an IPI can give it work), and
// whether a task is running on it. An idle CPU's next thing is its next
// timer. A task in the middle of a compute instruction does nothing
// visible to other CPUs until the compute ends, the tick or a timer: the
// CPU parks at its clock and computes up to whatever wakes it.
func (cp *CPU) wakeAt() (int64, bool) {
	c, r := cp.c, cp.rq
	curr := r.Curr()
	switch {
	case cp.m.hotplug && !cp.m.cpuOnline(cp.id):
		// An offline CPU sits in the hotplug thread's dead loop
		// (cpuhp_report_idle_dead, arch_cpu_idle_dead): it schedules
		// nothing until it is brought up, whatever need_resched its idle
		// task carries (a resched_curr that came in as it went down).
		// Only a window that brings it up releases it.
		return never, false
	case r.NeedResched():
		// A schedule that overshot the horizon (proxy_resched_idle
		// leaves need_resched set on the idle task): pick again first.
		return c.Now, curr != r.Idle
	case curr == r.Idle:
		return max(c.Now, cp.nextTimer()), false
	case computing(curr):
		// (A tick or timer already due is taken once a window reaches
		// the clock: a step past the horizon left it.)
		return max(c.Now, min(c.Now+curr.Exec.Left, cp.nextTick, cp.nextTimer())), true
	}
	return c.Now, true
}

// computing reports whether p, current here, is in the middle of a compute
// instruction.
func computing(p *task.Task) bool {
	ex := &p.Exec
	return ex.Left > 0 && !ex.Exited && ex.Prog != nil && ex.PC < len(ex.Prog.Ops) && ex.Prog.Ops[ex.PC].Kind == task.OpCompute
}

// pureAdvance is a step that only moved the clock: a stretch of compute
// by p (its compute instruction was at pc with left ns to go), or an idle
// jump (p nil). Nothing else happened on the CPU between from and its
// clock, so the step may be cut short at any time in between.
type pureAdvance struct {
	from int64
	p    *task.Task
	pc   int
	left int64
}

// noUndo marks the last step as not a pure advance.
var noUndo = pureAdvance{from: -1}

// undoAdvance cuts the pure advance u back to time to (u.from <= to <
// the clock): an IPI sent at to came in while the CPU computed or sat
// idle, and it takes the IPI then, as a CPU whose clock had not run
// ahead would have. The compute left is restored; an idle CPU's tick
// restarts after to.
func (cp *CPU) undoAdvance(u pureAdvance, to int64) {
	c := cp.c
	d := c.Now - to
	c.Now = to
	if u.p != nil {
		ex := &u.p.Exec
		ex.PC, ex.Left = u.pc, u.left-(to-u.from)
		cp.busy -= d
	} else {
		t := cp.m.cfg.Tick
		cp.nextTick = (to/t + 1) * t
	}
	c.Stats.SimTime.Store(c.Now)
}

// idleJump moves an idle CPU's clock up to to: nothing happened on it in
// between. The tick restarts on the tick grid after to, as
// tick_nohz_idle_exit restarts it (an idle CPU does not tick).
func (cp *CPU) idleJump(to int64) {
	if to > cp.c.Now {
		cp.advance(to - cp.c.Now)
	}
	cp.resyncTick()
}

// ipiDueAt is when this CPU takes its pending IPIs (never: none pending):
// the latest send time among them, or its own clock if that is later. A
// CPU that is behind the sender (idle, or parked in a compute) first moves
// up to the send time. Read by this CPU, and by the barrier while the CPU
// is parked.
func (cp *CPU) ipiDueAt() int64 {
	if !cp.pending() {
		return never
	}
	return max(cp.c.Now, cp.ipiTime.Load())
}

// ipiDue reports whether the pending IPIs are due: the CPU's clock has
// reached their send time (an idle CPU jumps there).
func (cp *CPU) ipiDue() bool {
	return cp.rq.Curr() == cp.rq.Idle || cp.ipiTime.Load() <= cp.c.Now
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
	pending := cp.pending()
	u := cp.undo
	cp.undo = noUndo
	if pending && u.from >= 0 {
		// (An IPI the barrier posted has no send time: it comes after
		// everything.)
		if s := cp.ipiTime.Load(); s > 0 && max(u.from, s) < c.Now {
			cp.undoAdvance(u, max(u.from, s))
		}
	}
	if pending && cp.ipiDue() {
		cp.handleIPIs()
		pending = false
	}
	if c.Now >= horizon {
		// Past the window's horizon (the last step overshot it): only
		// the interrupts sent within the window are taken; the rest
		// waits for a window that reaches this clock.
		return true
	}
	cp.fireTimers()
	curr := r.Curr()
	// need_resched set by a sender whose IPI is still to come (a remote
	// resched_curr), as against one the tick sets now.
	remote := pending && r.NeedResched()
	localResched := false
	if curr != r.Idle && c.Now >= cp.nextTick {
		cp.tick()
		localResched = !remote && r.NeedResched()
	}
	if pending && !localResched && computing(curr) && !cp.ipiDue() {
		// Parked in a compute and woken by an IPI sent after its clock:
		// the task computed all along, up to the IPI's time (the step
		// stops there, or at a tick or timer before it), and only then
		// does the CPU see the interrupt and the need_resched that came
		// with it. (A tick on the way that preempts the task on its own
		// is taken at once.)
		cp.step(curr)
		if !cp.ipiDue() || c.Now >= horizon {
			return c.Now >= horizon
		}
		cp.undo = noUndo
		cp.handleIPIs()
	}
	if r.NeedResched() && !spinning(curr) {
		cp.schedule(true)
		return c.Now >= horizon
	}
	if curr == r.Idle {
		// NOHZ idle: jump to the next timer within the window, or park
		// until a window reaches it or an IPI arrives.
		if next := cp.nextTimer(); next < horizon {
			cp.undo = pureAdvance{from: c.Now}
			cp.idleJump(next)
			return false
		}
		return true
	}
	cp.step(curr)
	return c.Now >= horizon
}

// handleIPIs takes the pending interrupts.
func (cp *CPU) handleIPIs() {
	// ipiTime first: a sender that comes in between posts its time again
	// before its kind bits.
	t := cp.ipiTime.Swap(0)
	at := cp.ipiAt.Swap(noIPI)
	kinds := cp.ipi.Swap(0)
	if cp.rq.Curr() == cp.rq.Idle && t > cp.c.Now {
		// Idle until interrupted: the clock moves to the sender's.
		cp.idleJump(t)
	}
	if at != noIPI && at > 0 {
		// How late the earliest of them is taken: the clocks' skew as
		// one message between CPUs saw it (0 when the target was behind
		// the sender and moved up to it).
		cp.c.Stats.IPITaken(max(cp.c.Now-at, 0))
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

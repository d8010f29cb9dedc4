// This file mirrors kernel/sched/core.c sched_tick() and the NOHZ tick resync, plus the
// stress affinity shuffler that rides on the tick.

package cpu

import (
	"fmt"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/proxy"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// resyncTick moves the next tick after an idle period (NOHZ).
func (cp *CPU) resyncTick() {
	t := cp.m.cfg.Tick
	if cp.nextTick <= cp.c.Now {
		cp.nextTick = (cp.c.Now/t + 1) * t
	}
}

// tick is scheduler_tick() on this CPU.
func (cp *CPU) tick() {
	c, r, m := cp.c, cp.rq, cp.m
	cp.nextTick += m.cfg.Tick
	if cp.nextTick <= c.Now {
		cp.nextTick = (c.Now/m.cfg.Tick + 1) * m.cfg.Tick
	}
	c.Inc(stats.Ticks)
	// The timer interrupt: sched_tick() runs in hard-IRQ context.
	c.HardirqEnter()
	r.Lock(c)
	cp.checkDonorHere()
	if r.Tick(c, m.cfg.Tick) {
		c.Inc(stats.Preemptions)
	}
	if r.CoreEnabled() && r.Core.Leader.Core.ForceidleCount > 0 {
		r.SchedCoreAccountForceidle(c) // sched_core_tick
	}
	if c.Proxy {
		cp.checkCurrDonor()
	}
	cp.checkDLBudget()
	cp.checkDonorOutranked()
	nr := r.NrRunning()
	r.Unlock(c)
	c.HardirqExit()
	if c.Now-cp.lastBalance >= m.cfg.Balance {
		// sched_balance_trigger() raises SCHED_SOFTIRQ; the balance
		// runs in softirq context on the way out of the interrupt.
		cp.lastBalance = c.Now
		c.SoftirqEnter()
		cp.periodicBalance(nr)
		c.SoftirqExit()
	}
	// The stress injectors below stand for tasks and kworkers (kill(),
	// sched_setaffinity(), a cpuset write): process context.
	if m.cfg.DomainRebuildEvery > 0 {
		m.maybeRebuildDomains(c)
	}
	if m.cfg.ShuffleEvery > 0 {
		// One shuffle per ShuffleEvery of busy (ticking) virtual time.
		cp.shuffleTicks++
		if k := max(m.cfg.ShuffleEvery/m.cfg.Tick, 1); cp.shuffleTicks >= k {
			cp.shuffleTicks = 0
			cp.shuffle()
		}
	}
	if m.srq != nil && m.cfg.SRQ.ToggleEvery > 0 {
		cp.srqTick()
	}
	if m.cfg.CoreToggleEvery > 0 {
		cp.maybeCoreToggle()
	}
	if m.corePutQueued.Load() {
		m.corePutWork(c) // the kworker of sched_core_put's work
	}
	if m.cfg.SignalRate > 0 {
		cp.signalDue += m.cfg.SignalRate * float64(m.cfg.Tick) / 1e9
		for ; cp.signalDue >= 1; cp.signalDue-- {
			cp.injectSignal()
		}
	}
	if m.cfg.SpuriousWakeRate > 0 {
		cp.spuriousDue += m.cfg.SpuriousWakeRate * float64(m.cfg.Tick) / 1e9
		for ; cp.spuriousDue >= 1; cp.spuriousDue-- {
			cp.spuriousWake()
		}
	}
}

// randomWaiter picks a random mutex and, under its wait_lock, a random
// task on its wait list (nil if the list is empty), and takes a reference
// to it there (get_task_struct: a waiter cannot exit while it is on the
// list). The caller uses the task after wait_lock is dropped, as a
// kernel waker does, and puts the reference.
func (cp *CPU) randomWaiter() (*task.Task, int) {
	c, m := cp.c, cp.m
	if len(m.mutexes) == 0 {
		return nil, 0
	}
	mx := m.mutexes[c.Rand.IntN(len(m.mutexes))]
	mx.WaitLock().Lock(c.CPU)
	var p *task.Task
	if ws := mx.Waiters(c); len(ws) > 0 {
		p = ws[c.Rand.IntN(len(ws))]
		p.GetTaskStruct()
	}
	mx.WaitLock().Unlock(c.CPU)
	return p, mx.ID()
}

// randomTask is a pid lookup of a random task with a reference taken
// (find_get_task_by_vpid): nil if the task it finds has exited and was
// released. The caller puts the reference.
func (cp *CPU) randomTask() *task.Task {
	m := cp.m
	if len(m.tasks) < 2 {
		return nil
	}
	if p := m.tasks[1+cp.c.Rand.IntN(len(m.tasks)-1)]; p.TryGetTaskStruct() {
		return p
	}
	return nil
}

// injectSignal sends a signal (stress --signal-rate): half of the time to
// a random waiter of a random mutex (the interesting target: a donor, a
// parked waiter, a proxy-migrated task), otherwise, or if that list is
// empty, to a random task. A fraction SignalFatal of them is SIGKILL.
func (cp *CPU) injectSignal() {
	c, m := cp.c, cp.m
	if len(m.tasks) < 2 {
		return
	}
	var p *task.Task
	if c.Rand.IntN(2) == 0 {
		p, _ = cp.randomWaiter()
	}
	if p == nil {
		p = m.tasks[1+c.Rand.IntN(len(m.tasks)-1)]
	} else {
		defer p.PutTaskStruct()
	}
	fatal := m.cfg.SignalFatal > 0 && c.Rand.Float64() < m.cfg.SignalFatal
	m.sendSignal(c, p, fatal) // takes its own reference (kill(2)'s lookup)
}

// spuriousWake is a wake-up nobody owes (stress --spurious-wake-rate):
// wake_up_process of a random mutex waiter, without an unlock. The waiter
// goes round its wait loop and sleeps again, unless it was handed the lock
// meanwhile.
func (cp *CPU) spuriousWake() {
	c, m := cp.c, cp.m
	p, id := cp.randomWaiter()
	if p == nil {
		return
	}
	defer p.PutTaskStruct()
	c.Inc(stats.SpuriousWakes)
	woke := m.tryToWakeUp(c, p, task.WakeNormal)
	w := int32(0)
	if woke {
		c.Inc(stats.SpuriousWakeups)
		w = 1
	}
	c.Emit(trace.EvSpuriousWake, int32(p.ID), int32(id), w, 0)
}

// shuffle moves one random task's affinity mask around (stress
// --shuffle-interval): a window of one to four CPUs, or all of them.
func (cp *CPU) shuffle() {
	c, m := cp.c, cp.m
	p := cp.randomTask() // sched_setaffinity's lookup
	if p == nil {
		return
	}
	n := len(m.cpus)
	mask := task.MaskAll(n)
	if w := 1 + c.Rand.IntN(5); w <= 4 && w < n {
		mask = task.Mask{}
		start := c.Rand.IntN(n)
		for i := 0; i < w; i++ {
			mask.Set((start + i) % n)
		}
	}
	c.Inc(stats.AffinityShuffles)
	m.setCPUsAllowed(c, p, mask)
	p.PutTaskStruct()
	if m.cfg.CoreSched != CoreOff {
		// And a cookie change of another random task, running or not
		// (prctl PR_SCHED_CORE_SHARE_TO): cookies 0-2.
		if q := cp.randomTask(); q != nil {
			m.setCookie(c, q, uint64(c.Rand.IntN(3)))
			q.PutTaskStruct()
		}
	}
}

// checkCurrDonor is invariant 4 at the tick, with the rq lock held: the
// execution context is the donor, or the end of the donor's blocked_on
// chain (every link queued here, so the walk under each link's
// blocked_lock is stable), unless a reschedule is already pending. A
// proxy that keeps running for a donor no longer blocked on it is caught
// within a tick instead of at the next audit.
func (cp *CPU) checkCurrDonor() {
	c, r := cp.c, cp.rq
	curr, d := r.Curr(), r.Donor(c)
	if d == curr || d == r.Idle || r.NeedResched() {
		return
	}
	p := d
	for i := 0; i < proxy.MaxChain && p != curr; i++ {
		if !p.Queued() || p.CPU() != r.CPU {
			cp.m.Report(c, check.InvCurrDonor, curr, fmt.Sprintf("cpu%d executes %v for donor %v, but %v in its chain is no longer queued here (no reschedule pending)", r.CPU, curr, d, p))
			return
		}
		p.BlockedLock.Lock(c.CPU)
		m := p.BlockedOn(c.CPU)
		p.BlockedLock.Unlock(c.CPU)
		if m == nil && p.IsBlocked() {
			// blocked_on cleared by another CPU (a ww die or wound of a
			// mid-chain link, under a wait_lock this chain does not
			// hold) whose wake-up has not run yet: that wake-up
			// (ttwu_runnable) re-picks here. Not a stale proxy yet.
			return
		}
		if m == nil || !p.IsBlocked() { // is_blocked: p is queued here, our rq lock guards it
			cp.m.Report(c, check.InvCurrDonor, curr, fmt.Sprintf("cpu%d executes %v for donor %v, but %v in its chain is no longer blocked (no reschedule pending)", r.CPU, curr, d, p))
			return
		}
		p = m.OwnerTask()
		if p == nil {
			cp.m.Report(c, check.InvCurrDonor, curr, fmt.Sprintf("cpu%d executes %v for donor %v, whose chain reaches a free lock %v (no reschedule pending)", r.CPU, curr, d, m))
			return
		}
	}
	if p != curr {
		cp.m.Report(c, check.InvCurrDonor, curr, fmt.Sprintf("cpu%d executes %v for donor %v, whose chain ends at %v (no reschedule pending)", r.CPU, curr, d, p))
	}
}

// This file mirrors kernel/sched/core.c's CPU hotplug paths: sched_cpu_deactivate(),
// balance_push() / balance_push_set() / __balance_push_cpu_stop(), the wait for an empty
// runqueue, sched_cpu_dying(), sched_cpu_activate(); is_cpu_allowed() and
// select_fallback_rq(); and the stress hotplug injector.

package cpu

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// Hotplug requests (CPU.hpReq).
const (
	hpNone int32 = iota
	hpDown       // take this CPU down: sched_cpu_deactivate, then push everything away
	hpUp         // bring this CPU up: online, then sched_cpu_activate
)

// cpuActive is cpu_active(): read locklessly, as the kernel reads
// cpu_active_mask (peekMaskBit).
func (m *Machine) cpuActive(cpu int) bool { return !m.hotplug || peekMaskBit(m.active, cpu) }

// cpuOnline is cpu_online(), read as cpuActive.
func (m *Machine) cpuOnline(cpu int) bool { return !m.hotplug || peekMaskBit(m.online, cpu) }

// peekMaskBit reads cpu's bit of a CPU mask as the kernel's
// cpumask_test_cpu() does: test_bit, a volatile load that orders nothing.
// The bits are written with atomic stores (set_cpu_active's atomic
// set_bit). An atomic load would give the race detector a happens-before
// edge from the hotplug path of every CPU read to the reader, which the
// kernel's load does not give (and load balancing reads a whole domain's
// span per scan); like peekNrRunning, it is a plain load the detector
// does not see.
//
//go:norace
//go:nocheckptr
func peekMaskBit(mask []atomic.Bool, cpu int) bool {
	return *(*uint32)(unsafe.Pointer(&mask[cpu])) != 0
}

// CPUActive reports cpu_active(cpu) (audits, reports).
func (m *Machine) CPUActive(cpu int) bool { return m.cpuActive(cpu) }

// CPUOnline reports cpu_online(cpu) (audits, reports).
func (m *Machine) CPUOnline(cpu int) bool { return m.cpuOnline(cpu) }

// isCPUAllowed is is_cpu_allowed() for a user task (every task of the
// model is one): in p->cpus_ptr, and active, except that a
// migrate-disabled task must be allowed to finish on an online CPU. The
// caller holds p's pi_lock or its rq lock with p off its CPU.
func (m *Machine) isCPUAllowed(p *task.Task, cpu int) bool {
	if !p.AllowedOn(cpu) {
		return false
	}
	if p.MigrationDisabled > 0 {
		return m.cpuOnline(cpu)
	}
	return m.cpuActive(cpu)
}

// selectFallbackRQ is select_fallback_rq(): an allowed CPU of cpu's node
// (the socket here) first, then any allowed CPU of p->cpus_ptr; if there
// is none, p's affinity is broken: do_set_cpus_allowed() to every CPU
// (the kernel's cpuset fallback, then task_cpu_fallback_mask, which is
// cpu_possible_mask; there are no cpusets here), counted as
// affinity_broken. Caller holds p's pi_lock.
func (m *Machine) selectFallbackRQ(c *percpu.Ctx, cpu int, p *task.Task) int {
	c.Inc(stats.FallbackRQ)
	node := m.topo.Socket(cpu)
	for d := 0; d < len(m.cpus); d++ {
		if m.topo.Socket(d) == node && m.isCPUAllowed(p, d) {
			return d
		}
	}
	for pass := 0; pass < 2; pass++ {
		for d := 0; d < len(m.cpus); d++ {
			if m.isCPUAllowed(p, d) {
				return d
			}
		}
		// "No more Mr. Nice Guy": the task_cpu_fallback_mask. The kernel
		// writes the mask here with only pi_lock held ("More yuck to
		// audit"); p is off every runqueue or its rq lock is held.
		p.CPUsMask = task.MaskAll(len(m.cpus))
		p.WatchWrite(trace.FieldMask, int64(p.CPUsMask[0]))
		p.NrCPUsAllowed = len(m.cpus)
		if p.PinnedCPU >= 0 && !m.cpuOnline(p.PinnedCPU) {
			p.SetPinnedCPU(-1)
		}
		p.PublishMask()
		c.Inc(stats.AffinityBroken)
		c.Emit(trace.EvAffinity, int32(p.ID), 0, int32(p.NrCPUsAllowed), 0)
	}
	m.Report(c, check.InvOffline, p, fmt.Sprintf("select_fallback_rq: no active CPU for %v (BUG)", p))
	return cpu
}

// hotplugRequest posts a hotplug request for CPU cpu (the stress
// injector at the barrier, a task's offline/online instruction, a
// scenario command) and interrupts the CPU so that it takes it. c is the
// posting CPU (nil at the barrier).
func (m *Machine) hotplugRequest(c *percpu.Ctx, cpu int, req int32) {
	m.cpus[cpu].hpReq.Store(req)
	if c != nil {
		m.sendIPI(c, cpu, ipiHotplug)
	}
}

// takeHotplugRequest runs on the CPU itself at the top of its loop: the
// hotplug thread's AP steps. A down request on an online, active CPU
// runs sched_cpu_deactivate(); an up request on an offline CPU brings it
// up and runs sched_cpu_activate(). Other requests are dropped (the
// kernel serialises hotplug operations; a request for a CPU already on
// its way is a no-op). Never takes the last active CPU down.
func (cp *CPU) takeHotplugRequest() {
	req := cp.hpReq.Swap(hpNone)
	m := cp.m
	switch {
	case req == hpDown && m.cpuActive(cp.id) && m.nrActive() > 1:
		cp.schedCPUDeactivate()
	case req == hpUp && !m.cpuOnline(cp.id):
		cp.schedCPUActivate()
	}
}

func (m *Machine) nrActive() int {
	n := 0
	for i := range m.cpus {
		if m.cpuActive(i) {
			n++
		}
	}
	return n
}

// schedCPUDeactivate is sched_cpu_deactivate(): cpu_active cleared, then
// balance_push_set(cpu, true) under the rq lock. The synchronize_rcu()
// that follows in the kernel (every ttwu that could still pick this CPU
// has finished) is the next epoch barrier: a wake-up never spans one, so
// take_cpu_down waits for one (deactEpoch). set_rq_offline: RT push and
// pull and the load balancer's domains skip inactive CPUs.
func (cp *CPU) schedCPUDeactivate() {
	c, r, m := cp.c, cp.rq, cp.m
	m.active[cp.id].Store(false)
	r.LockIrq(c) // balance_push_set: rq_lock_irqsave
	cp.balancePush = true
	cp.deactEpoch = m.epochs.Load()
	c.Emit(trace.EvHotplug, 0, int32(cp.id), trace.HotplugDeactivate, 0)
	// The hotplug thread runs here and schedules: the next __schedule
	// runs balance_push for whatever it picks.
	r.ReschedCurr(c)
	r.UnlockIrq(c)
}

// schedCPUActivate is the bring-up (cpu_online set) and
// sched_cpu_activate(): balance_push_set(cpu, false), cpu_active set.
func (cp *CPU) schedCPUActivate() {
	c, r, m := cp.c, cp.rq, cp.m
	m.online[cp.id].Store(true)
	r.LockIrq(c) // balance_push_set: rq_lock_irqsave
	cp.balancePush = false
	r.UnlockIrq(c)
	m.active[cp.id].Store(true)
	c.Inc(stats.HotplugOnline)
	c.Emit(trace.EvHotplug, 0, int32(cp.id), trace.HotplugActivate, 0)
	cp.resyncTick()
}

// balancePushCB is balance_push(), the balance callback that stays
// installed while the CPU is going down, run at the end of every
// __schedule with the rq lock held: it pushes rq->curr away through the
// stopper (__balance_push_cpu_stop), unless curr is the idle task
// (standing in for the per-CPU kthreads: hotplug thread, stopper) or
// migrate-disabled (it must be allowed to finish here).
func (cp *CPU) balancePushCB() {
	c, r, m := cp.c, cp.rq, cp.m
	if m.cpuActive(cp.id) {
		return // !cpu_dying(): only while going down
	}
	push := r.Curr()
	if push == r.Idle || push.MigrationDisabled > 0 {
		return
	}
	if cp.pushTask == nil {
		cp.pushTask = push // get_task_struct; push_work
	}
	// stop_one_cpu_nowait(__balance_push_cpu_stop): the stopper
	// preempts curr.
	r.SetNeedResched()
	m.sendIPI(c, cp.id, ipiPush)
}

// balancePushStop is __balance_push_cpu_stop(), run by the stopper on the
// dying CPU: the stopper preempts the task (the idle task stands in for
// it), then, with pi_lock and the rq lock, a task still queued here goes
// to select_fallback_rq()'s CPU through __migrate_task (which re-checks
// is_cpu_allowed).
func (cp *CPU) balancePushStop() {
	c, r, m := cp.c, cp.rq, cp.m
	r.Lock(c)
	p := cp.pushTask
	if p != nil && p == r.Curr() {
		if spinning(p) {
			// A mutex spinner runs with preemption off: the stopper
			// runs once it has seen need_resched and scheduled.
			r.Unlock(c)
			return
		}
		cp.stopperPreempt()
	}
	cp.pushTask = nil
	r.SetNeedResched()
	r.Unlock(c)
	if p == nil {
		return
	}
	p.PiLock.Lock(c.CPU)
	pr := m.taskRQLock(c, p)
	if pr == r && p.Queued() {
		dest := m.selectFallbackRQ(c, r.CPU, p)
		if dest != r.CPU && m.isCPUAllowed(p, dest) {
			c.Inc(stats.HotplugPushed)
			m.moveQueuedTask(c, pr, p, dest, trace.ReasonHotplug)
			pr = nil
		}
	}
	if pr != nil {
		pr.Unlock(c)
	}
	p.PiLock.Unlock(c.CPU)
}

// offlineIdle is the loop of an offline CPU: nothing runs, nothing is
// queued, no wake list, no tick, no timers (they moved at take_cpu_down).
// Anything found queued here is invariant 48.
func (cp *CPU) offlineIdle() {
	c, r, m := cp.c, cp.rq, cp.m
	cp.ipi.Store(0)
	if r.Curr() != r.Idle || r.NrRunning() != 0 || cp.wakeList.Load() != nil {
		who := r.Curr()
		if who == r.Idle {
			who = cp.wakeList.Load()
		}
		m.Report(c, check.InvOffline, who, fmt.Sprintf("offline cpu%d has work: curr %v, nr_running %d, wake list %v", cp.id, r.Curr(), r.NrRunning(), cp.wakeList.Load() != nil))
	}
}

// hotplugEpoch runs at the barrier, every CPU parked (stop_machine): the
// take_cpu_down of every dying CPU that is empty (sched_cpu_wait_empty:
// no task queued or running, nothing pinned, nothing on its wake list,
// no push pending) one grace period after it went inactive; then the
// stress injector (--hotplug-interval): one CPU picked at random
// (seeded), taken down if it is up and not the last active CPU, brought
// up if it is down; with HotplugMaxOffline CPUs down already, a random
// offline CPU is brought up instead.
func (m *Machine) hotplugEpoch(horizon int64) {
	e := m.epochs.Load()
	for _, cp := range m.cpus {
		if !m.cpuOnline(cp.id) || m.cpuActive(cp.id) || cp.deactEpoch >= e {
			continue
		}
		r := cp.rq
		if r.Curr() != r.Idle || r.NrRunning() != 0 || cp.wakeList.Load() != nil || cp.nrPinned != 0 || cp.pushTask != nil || len(cp.stopWork) != 0 {
			continue
		}
		cp.takeCPUDown()
	}
	if m.cfg.HotplugEvery <= 0 || horizon < m.hpNext {
		return
	}
	m.hpNext = horizon + m.cfg.HotplugEvery
	cpu := m.hpRand.IntN(len(m.cpus))
	if max := m.cfg.HotplugMaxOffline; max > 0 && m.cpuActive(cpu) && len(m.cpus)-m.nrActive() >= max {
		// At the bound: bring a random offline CPU back instead (one
		// still going down is left to finish).
		var off []int
		for i := range m.cpus {
			if !m.cpuOnline(i) {
				off = append(off, i)
			}
		}
		if len(off) == 0 {
			return
		}
		cpu = off[m.hpRand.IntN(len(off))]
	}
	switch {
	case !m.cpuOnline(cpu):
		m.hotplugRequest(nil, cpu, hpUp)
	case m.cpuActive(cpu):
		m.hotplugRequest(nil, cpu, hpDown)
	}
}

// takeCPUDown is take_cpu_down() and the dying callbacks, run on the
// stopped machine: cpu_online cleared; hrtimers_cpu_dying() moves the
// sleep timers to an online CPU; sched_cpu_dying() finds the rq vacated
// (its caller checked). The CPU then idles offline.
func (cp *CPU) takeCPUDown() {
	m := cp.m
	m.online[cp.id].Store(false)
	to := -1
	for i := 1; i < len(m.cpus); i++ {
		if d := (cp.id + i) % len(m.cpus); m.cpuActive(d) {
			to = d
			break
		}
	}
	if to >= 0 && len(cp.timers) > 0 {
		t := m.cpus[to]
		for _, tm := range cp.timers {
			t.timerID++
			if tm.kind == timerDL {
				// The dl_timer: dl_task_timer fires there and finds the
				// task's rq offline (dl_task_offline_migration).
				tm.p.SE.DL.TimerCPU, tm.p.SE.DL.TimerID = to, t.timerID
			} else {
				tm.p.Exec.TimerCPU, tm.p.Exec.TimerID = to, t.timerID
			}
			tm.id = t.timerID
			t.timers = append(t.timers, tm)
			sortTimers(t.timers)
		}
		cp.timers = nil
	}
	cp.c.Inc(stats.HotplugOffline)
	cp.c.Emit(trace.EvHotplug, 0, int32(cp.id), trace.HotplugDying, 0)
}

// auditHotplug is invariant 48 at the audit: an offline CPU runs only its
// idle task and has nothing queued, and no task names it as its CPU
// while queued or running.
func (m *Machine) auditHotplug() {
	if !m.hotplug {
		return
	}
	for _, cp := range m.cpus {
		if m.cpuOnline(cp.id) {
			continue
		}
		r := cp.rq
		if r.Curr() != r.Idle || r.NrRunning() != 0 || cp.wakeList.Load() != nil {
			m.warn(nil, check.InvOffline, r.Curr().ID, r.Curr().String(), fmt.Sprintf("offline cpu%d: curr %v, nr_running %d, wake list empty %v", cp.id, r.Curr(), r.NrRunning(), cp.wakeList.Load() == nil))
		}
	}
	for _, p := range m.tasks[1:] {
		if p.Queued() && !p.OnCPU() && p.DLTask() && p.SE.DL.Throttled && !p.SE.DL.OnDLRQ && p.SE.DL.TimerQueued {
			// A throttled DL task is not in nr_running: its CPU may go
			// down under it, and its dl_timer (moved to an online CPU)
			// migrates it (dl_task_offline_migration).
			continue
		}
		if (p.Queued() || p.OnCPU()) && !m.cpuOnline(p.CPU()) {
			m.warn(nil, check.InvOffline, p.ID, p.String(), fmt.Sprintf("%v is queued or running on offline cpu%d (on_rq %d, wake_cpu %d)", p, p.CPU(), p.OnRQ(), p.WakeCPU))
		}
	}
}

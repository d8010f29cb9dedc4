// This file is the task interpreter: what a task does when it runs (compute, sleep,
// mutex_lock/unlock, yield, exit). It plays the kernel's callers of
// mutex_lock() and schedule(), not a kernel file.

package cpu

import (
	"fmt"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/mutex"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// dur draws an instruction's duration from the task's own random source.
func dur(p *task.Task, op *task.Op) int64 {
	if op.Max > op.Min {
		return op.Min + p.Exec.Rand.Int64N(op.Max-op.Min+1)
	}
	return op.Min
}

// step runs one step of p's program on this CPU. p is rq.curr and
// RUNNING. A step is at most one instruction, and compute is cut at the
// next tick, timer or epoch end so that interrupts are taken on time.
func (cp *CPU) step(p *task.Task) {
	cp.spendCharges()
	ex := &p.Exec
	if ex.Exited {
		// Exited but still current: schedule it away.
		cp.schedule(false)
		return
	}
	if ex.Phase == 0 && ex.Left == 0 && p.SignalPending() {
		// Between instructions is the way back to user mode: a pending
		// signal is dequeued here (get_signal); SIGKILL ends the task.
		if cp.handleSignal(p) {
			return
		}
	}
	if ex.PC >= len(ex.Prog.Ops) {
		cp.exit(p)
		return
	}
	op := &ex.Prog.Ops[ex.PC]
	if op.Kind != task.OpCompute && op.Kind != task.OpExit {
		cp.advance(cp.m.cfg.OpCost) // every other instruction costs OpCost
	}
	if int(op.Kind) < len(ops) && ops[op.Kind] != nil {
		ops[op.Kind](cp, p, op)
	}
}

// spendCharges spends the time charged for the series' own work
// (percpu.Ctx.Pending) as execution time of what runs now.
func (cp *CPU) spendCharges() {
	if d := cp.c.Pending; d > 0 {
		cp.c.Pending = 0
		cp.advance(d)
	}
}

// ops dispatches each instruction kind to its handler.
var ops = [...]func(cp *CPU, p *task.Task, op *task.Op){
	task.OpCompute:        (*CPU).opCompute,
	task.OpLock:           (*CPU).opLock,
	task.OpUnlock:         (*CPU).opUnlock,
	task.OpSleep:          (*CPU).opSleep,
	task.OpWait:           (*CPU).opWait,
	task.OpWake:           (*CPU).opWake,
	task.OpYield:          (*CPU).opYield,
	task.OpAffinity:       (*CPU).opAffinity,
	task.OpSetPrio:        (*CPU).opSetPrio,
	task.OpLoop:           (*CPU).opLoop,
	task.OpChoose:         (*CPU).opChoose,
	task.OpExit:           (*CPU).opExit,
	task.OpCookie:         (*CPU).opCookie,
	task.OpSignal:         (*CPU).opSignal,
	task.OpKill:           (*CPU).opSignal,
	task.OpMigrateDisable: (*CPU).opMigrateDisable,
	task.OpMigrateEnable:  (*CPU).opMigrateEnable,
	task.OpCPUOffline:     (*CPU).opCPUHotplug,
	task.OpCPUOnline:      (*CPU).opCPUHotplug,
	task.OpWWInit:         (*CPU).opWWInit,
	task.OpWWLock:         (*CPU).opLock,
	task.OpWWLockSlow:     (*CPU).opLock,
	task.OpWWUnlock:       (*CPU).opUnlock,
	task.OpWWFini:         (*CPU).opWWFini,
	task.OpSys:            (*CPU).opSys,
}

// opCompute runs compute for at most the budget to the next tick, timer or epoch end.
func (cp *CPU) opCompute(p *task.Task, op *task.Op) {
	ex := &p.Exec
	if ex.Left == 0 {
		ex.Left = dur(p, op)
		if ex.Left == 0 {
			ex.PC++
			return
		}
	}
	budget := max(cp.clampToEvents(ex.Left), 1)
	cp.undo = pureAdvance{from: cp.c.Now, p: p, pc: ex.PC, left: ex.Left}
	cp.advance(budget)
	ex.Left -= budget
	if ex.Left <= 0 {
		ex.Left = 0
		ex.PC++
	}
}

// Phases of a lock instruction (ExecState.Phase).
const (
	lockStart       = 0 // not started
	lockWaiting     = 1 // in the wait loop, back from schedule()
	lockSpin        = 2 // optimistic spinning before queueing (OSQ spinner)
	lockWaiterSpin  = 3 // the first waiter spinning on the owner (still listed)
	lockSpinResched = 4 // a spin stopped for need_resched and scheduled; go on to the slow path
	lockWaiterSpunR = 5 // the same for the first waiter: back into the wait loop
)

// spinning reports whether p, current here, is spinning on a mutex owner
// with preemption disabled (the kernel spins under preempt_disable and
// tests need_resched itself).
func spinning(p *task.Task) bool {
	ex := &p.Exec
	if ex.Prog == nil || ex.PC >= len(ex.Prog.Ops) || !isLock(ex.Prog.Ops[ex.PC].Kind) {
		return false
	}
	return ex.Phase == lockSpin || ex.Phase == lockWaiterSpin
}

func isLock(k task.OpKind) bool {
	return k == task.OpLock || k == task.OpWWLock || k == task.OpWWLockSlow
}

// lockTarget is the mutex a lock instruction takes: its operand, or for
// ww_lock_slow the contended lock of the context's back-off (-1: none).
func lockTarget(p *task.Task, op *task.Op) int {
	if op.Kind != task.OpWWLockSlow {
		return op.Mutex
	}
	if p.Exec.WW == nil {
		return -1
	}
	return p.Exec.WW.Contended
}

// opLock is mutex_lock() (or _interruptible, _killable: op.LockMode), and
// ww_mutex_lock() / ww_mutex_lock_slow() with the task's acquire context:
// the fast path; then __mutex_lock_common: a lockless trylock and the
// optimistic spin on a running owner (on by default, as in the kernel),
// else the slow path and schedule(), resumed after each wake-up, the first
// waiter spinning on the owner too. A wait ended by a signal (-EINTR)
// skips the critical section it did not get: the program goes on after
// the matching unlock (EINTRPC). A ww wait ended by -EDEADLK (or -EINTR)
// backs off (opWWBackoff).
func (cp *CPU) opLock(p *task.Task, op *task.Op) {
	c, m := cp.c, cp.m
	ex := &p.Exec
	id := lockTarget(p, op)
	if id < 0 {
		ex.PC++ // ww_lock_slow with no contended lock pending
		return
	}
	mx := m.mutexes[id]
	st := op.LockMode.SleepState()
	spin := !m.cfg.NoOptimisticSpin
	var ctx *task.WWCtx
	if op.Kind != task.OpLock {
		ctx = ex.WW
		if mx.WW() == nil {
			m.Report(c, check.InvMutexMisuse, p, fmt.Sprintf("%v: %s of %v, which is not a ww_mutex", p, op.Name(), mx))
			ex.PC++
			return
		}
	}
	var res mutex.LockResult
	switch ex.Phase {
	case lockStart:
		if ctx != nil && mx.Ctx() == ctx {
			// -EALREADY (__mutex_lock_common, after the fast path, which
			// fails on a lock we own): taken under this context already
			// (by the back-off's ww_mutex_lock_slow): go on.
			ex.PC++
			return
		}
		for _, h := range ex.Held {
			if h == id {
				m.Report(c, check.InvMutexMisuse, p, fmt.Sprintf("%v locks %v, which it already holds: self-deadlock", p, mx))
				ex.PC++
				return
			}
		}
		if mx.TryLockFast(c, p) {
			cp.wwFastpath(p, mx, ctx)
			cp.lockResult(p, op, mx, st, ctx, mutex.LockAcquired)
			return
		}
		c.Inc(stats.MutexFastMisses)
		mutex.ContentionBegin(c, p)
		if ctx != nil && ctx.Acquired == 0 {
			// "Reset the wounded flag after a kill." (M, at the top of
			// __mutex_lock_common: the fast path above skips it)
			ctx.SetWounded(false)
		}
		switch {
		case spin && mx.TryLock(c, p):
			res = mutex.LockAcquired
			cp.wwFastpath(p, mx, ctx)
		case spin && mx.CanSpinOnOwner(cp.rq.NeedResched()):
			c.Inc(stats.MutexSpins)
			ex.Phase = lockSpin
			ex.SpinTurns = 0
			c.Emit(trace.EvSpin, int32(p.ID), int32(id), 0, 0)
			cp.spinStep(p, op, mx, st, ctx)
			return
		default:
			res = mx.LockSlowStart(c, p, st, ctx, &cp.wq)
		}
	case lockSpin, lockWaiterSpin:
		cp.spinStep(p, op, mx, st, ctx)
		return
	case lockSpinResched:
		res = mx.LockSlowStart(c, p, st, ctx, &cp.wq)
	case lockWaiterSpunR:
		res = mx.SpinEnd(c, p, st, false, ctx, &cp.wq)
	default:
		res = mx.LockSlowResume(c, p, st, spin, ctx, &cp.wq)
	}
	cp.lockResult(p, op, mx, st, ctx, res)
}

// wwFastpath is ww_mutex_set_context_fastpath() after a lock taken
// without wait_lock under a context; its wake-ups are issued by lockResult.
func (cp *CPU) wwFastpath(p *task.Task, mx *mutex.Mutex, ctx *task.WWCtx) {
	if ctx != nil {
		mx.SetContextFastpath(cp.c, p, ctx, &cp.wq)
	}
}

// lockResult moves the lock instruction on after the slow path's res,
// once the wake-ups the ww paths queued are issued
// (raw_spin_unlock_irqrestore_wake: before any schedule()).
func (cp *CPU) lockResult(p *task.Task, op *task.Op, mx *mutex.Mutex, st task.State, ctx *task.WWCtx, res mutex.LockResult) {
	ex := &p.Exec
	cp.wakeUpQ()
	switch res {
	case mutex.LockAcquired:
		ex.Phase = lockStart
		ex.Held = append(ex.Held, mx.ID())
		if ctx != nil {
			cp.c.Inc(stats.WWAcquires)
		}
		ex.PC++
	case mutex.LockEINTR:
		ex.Phase = lockStart
		if op.Kind != task.OpLock {
			cp.opWWBackoff(p, op, -1)
			return
		}
		ex.PC = op.EINTRPC
	case mutex.LockEDEADLK:
		ex.Phase = lockStart
		cp.opWWBackoff(p, op, mx.ID())
	case mutex.LockSpin:
		ex.Phase = lockWaiterSpin
		ex.SpinTurns = 0
		cp.c.Emit(trace.EvSpin, int32(p.ID), int32(mx.ID()), 1, 0)
		cp.spinStep(p, op, mx, st, ctx)
	default:
		ex.Phase = lockWaiting
		cp.schedule(false)
	}
}

// opWWBackoff is the caller's side of -EDEADLK (test-ww_mutex's and
// every driver's back-off): release every ww_mutex held under the
// context, newest first, remember the contended lock for
// ww_mutex_lock_slow, and go on at the instruction's Jump (the retry). A
// -EINTR (contended -1) backs off the same way with nothing to take.
func (cp *CPU) opWWBackoff(p *task.Task, op *task.Op, contended int) {
	ex := &p.Exec
	ctx := ex.WW
	for i := len(ex.Held) - 1; i >= 0; i-- {
		id := ex.Held[i]
		if ctx != nil && cp.m.mutexes[id].Ctx() == ctx {
			cp.unlock(p, id)
		}
	}
	if ctx != nil {
		if ctx.Acquired != 0 {
			cp.m.Report(cp.c, check.InvMutexMisuse, p, fmt.Sprintf("%v backs off with %d ww_mutexes still counted in its context", p, ctx.Acquired))
		}
		ctx.Contended = contended
	}
	cp.c.Inc(stats.WWBackoffs)
	ex.PC = op.Jump
}

// opWWInit is ww_acquire_init(): open a context of class op.Class.
func (cp *CPU) opWWInit(p *task.Task, op *task.Op) {
	ex := &p.Exec
	ex.PC++
	if op.Class >= len(cp.m.wwClasses) {
		cp.m.Report(cp.c, check.InvMutexMisuse, p, fmt.Sprintf("%v: ww_acquire_init of class %d, which does not exist", p, op.Class))
		return
	}
	if ex.WW != nil {
		cp.m.Report(cp.c, check.InvMutexMisuse, p, fmt.Sprintf("%v: ww_acquire_init with a context already open", p))
	}
	ex.WW = cp.m.wwClasses[op.Class].AcquireInit(p)
}

// opWWFini is ww_acquire_fini(): close the context, which must hold
// nothing (DEBUG_WW_MUTEXES).
func (cp *CPU) opWWFini(p *task.Task, op *task.Op) {
	ex := &p.Exec
	ex.PC++
	if ex.WW != nil && ex.WW.Acquired != 0 {
		cp.m.Report(cp.c, check.InvMutexMisuse, p, fmt.Sprintf("%v: ww_acquire_fini with %d ww_mutexes held", p, ex.WW.Acquired))
	}
	ex.WW = nil
}

// spinStep is one turn of mutex_optimistic_spin (the OSQ spinner's, before
// queueing, or the first waiter's): try the lock, and while the owner runs
// on a CPU and no reschedule is due, spin (SpinCost of virtual time per
// turn); a ww spinner also stops where ww_mutex_spin_on_owner says so.
// On failure with need_resched the kernel sets TASK_RUNNING and
// schedules before going on (the slow path, or the wait loop); on other
// failures it goes on at once. The OSQ (one spinner at a time on the
// owner word) is not modelled: every spinner spins on the owner.
func (cp *CPU) spinStep(p *task.Task, op *task.Op, mx *mutex.Mutex, st task.State, ctx *task.WWCtx) {
	c, m := cp.c, cp.m
	ex := &p.Exec
	waiter := ex.Phase == lockWaiterSpin
	nr := cp.rq.NeedResched()
	// The owner's clock is read before the turn's owner test, so that an
	// owner still running afterwards held the lock up to that clock.
	o := mx.OwnerTask()
	var ownerNow int64
	if o != nil {
		ownerNow = peekClock(m.cpus[o.CPU()].c)
	}
	r := mx.SpinOnOwner(c, p, waiter, nr)
	if r == mutex.SpinAgain && !mx.SpinOK(p, ctx, waiter) {
		r = mutex.SpinFail
	}
	if r != mutex.SpinAgain {
		how := int32(trace.SpinEndAcquired)
		if r == mutex.SpinFail {
			how = trace.SpinEndOwner
			if nr {
				how = trace.SpinEndResched
			}
		}
		c.Emit(trace.EvSpinEnd, int32(p.ID), int32(mx.ID()), how, int32(min(ex.SpinTurns, 1<<31-1)))
	}
	switch r {
	case mutex.SpinAcquired:
		if !waiter {
			cp.wwFastpath(p, mx, ctx)
			cp.lockResult(p, op, mx, st, ctx, mutex.LockAcquired)
			return
		}
		cp.lockResult(p, op, mx, st, ctx, mx.SpinEnd(c, p, st, true, ctx, &cp.wq))
	case mutex.SpinAgain:
		c.Inc(stats.MutexSpinTurns)
		ex.SpinTurns++
		d := m.cfg.SpinCost
		if o != nil && mx.OwnerTask() == o {
			d = cp.spinCatchUp(ownerNow)
		}
		cp.advance(d)
		c.CPU.YieldPoint()
	default:
		if nr {
			p.SetState(task.Running)
			if waiter {
				ex.Phase = lockWaiterSpunR
			} else {
				ex.Phase = lockSpinResched
			}
			cp.schedule(false)
			return
		}
		if !waiter {
			cp.lockResult(p, op, mx, st, ctx, mx.LockSlowStart(c, p, st, ctx, &cp.wq))
			return
		}
		cp.lockResult(p, op, mx, st, ctx, mx.SpinEnd(c, p, st, false, ctx, &cp.wq))
	}
}

// spinCatchUp is how far a spin turn moves this CPU's clock when the
// owner it spins on was still running with the lock after its own CPU's
// clock read ownerNow: the spinner saw nothing but "owned, on a CPU" up to
// that time, so it spins there in one turn instead of SpinCost at a time,
// stopping at its next tick, timer or the window's horizon (where
// need_resched or an interrupt could end the spin). When the owner's clock is not ahead, a turn is SpinCost.
// What a spin finds is unchanged; how many turns it takes to find it (and
// the wall time they cost) is not.
func (cp *CPU) spinCatchUp(ownerNow int64) int64 {
	c, m := cp.c, cp.m
	d := ownerNow - c.Now
	if d <= m.cfg.SpinCost || cp.pending() {
		return m.cfg.SpinCost
	}
	return max(cp.clampToEvents(d), m.cfg.SpinCost)
}

// clampToEvents bounds a stretch of d ns of virtual time on this CPU to
// its next tick, its next timer, the window's horizon and the send time
// of a pending IPI it has not reached yet.
func (cp *CPU) clampToEvents(d int64) int64 {
	c, m := cp.c, cp.m
	ipi := int64(never)
	if cp.pending() {
		ipi = cp.ipiTime.Load()
	}
	for _, at := range [...]int64{cp.nextTick, m.bar.horizon.Load(), cp.nextTimer(), ipi} {
		if t := at - c.Now; t > 0 && t < d {
			d = t
		}
	}
	return d
}

// peekClock reads another CPU's clock (percpu.Ctx.Now, written only by
// that CPU's goroutine) without synchronising with it. A spinner in the
// kernel learns nothing of the owner's memory by the passing of time, so
// the read must not give the race detector a happens-before edge from
// the owner's CPU (an atomic load would, and hide races; see F4 in
// docs/findings.md). The value is a word-sized clock only used to size a
// spin turn; in serial mode it is exact.
//
//go:norace
func peekClock(c *percpu.Ctx) int64 { return c.Now }

// opUnlock is mutex_unlock() and the wake-ups it queued.
func (cp *CPU) opUnlock(p *task.Task, op *task.Op) {
	c, m := cp.c, cp.m
	ex := &p.Exec
	if !cp.unlock(p, op.Mutex) {
		m.Report(c, check.InvMutexMisuse, p, fmt.Sprintf("%v unlocks %v, which it does not hold", p, m.mutexes[op.Mutex]))
	}
	ex.PC++
}

// opSleep is a timed sleep (schedule_hrtimeout).
func (cp *CPU) opSleep(p *task.Task, op *task.Op) {
	c, m := cp.c, cp.m
	ex := &p.Exec
	if ex.Phase == 0 {
		d := dur(p, op)
		ex.TimerCPU = cp.id
		ex.TimerID = cp.armTimer(p, c.Now+d)
		p.SetState(task.Interruptible)
		ex.Phase = 1
		c.Emit(trace.EvSleep, int32(p.ID), int32(min(d/1000, 1<<31-1)), 0, 0)
		cp.schedule(false)
		return
	}
	m.cancelTimer(c, ex.TimerCPU, ex.TimerID)
	ex.TimerCPU = -1
	ex.Phase = 0
	ex.PC++
}

// opWait is wait_for_completion().
func (cp *CPU) opWait(p *task.Task, op *task.Op) {
	c := cp.c
	ex := &p.Exec
	if ex.Phase == 0 {
		cp.endRequest(p)
		// wait_for_completion: consume a completion or sleep for one.
		p.CompLock.Lock(c.CPU)
		if p.CompDone > 0 {
			cp.consumeCompletion(p)
			p.CompLock.Unlock(c.CPU)
			ex.PC++
			return
		}
		p.SetState(task.Interruptible)
		p.CompLock.Unlock(c.CPU)
		ex.Phase = 1
		cp.schedule(false)
		return
	}
	ex.Phase = 0 // woken: look again
	p.CompLock.Lock(c.CPU)
	if p.CompDone > 0 {
		cp.consumeCompletion(p)
		p.CompLock.Unlock(c.CPU)
		ex.PC++
		return
	}
	p.CompLock.Unlock(c.CPU)
}

// consumeCompletion takes one completion of p (CompLock held) and starts
// the request it stands for. Bookkeeping only: no event, no random draw.
func (cp *CPU) consumeCompletion(p *task.Task) {
	p.CompDone--
	p.Stats.Requests++
	p.Exec.ReqStart = cp.c.Now
	if len(p.CompAt) > 0 {
		p.Exec.ReqStart = p.CompAt[0]
		p.CompAt = p.CompAt[:copy(p.CompAt, p.CompAt[1:])]
	}
}

// endRequest closes the request p was serving, if any: its latency runs
// from the complete() that began it to now.
func (cp *CPU) endRequest(p *task.Task) {
	if p.Exec.ReqStart > 0 {
		p.Stats.ReqLatency.Add(cp.c.Now - p.Exec.ReqStart)
		p.Exec.ReqStart = 0
	}
}

// opWake is complete() of the target task.
func (cp *CPU) opWake(p *task.Task, op *task.Op) {
	c, m := cp.c, cp.m
	ex := &p.Exec
	t := m.Task(op.Target)
	// complete() wakes the waiters on the completion's wait queue; a
	// waiter that was killed and exited has left it (the model holds a
	// reference for the wake-up instead of the queue's entry).
	if t != nil && t != p && t.TryGetTaskStruct() {
		defer t.PutTaskStruct()
		t.CompLock.Lock(c.CPU)
		t.CompDone++
		if len(t.CompAt) < task.MaxCompAt {
			t.CompAt = append(t.CompAt, c.Now)
		}
		t.CompLock.Unlock(c.CPU)
		m.tryToWakeUp(c, t, task.WakeInterruptible)
	}
	ex.PC++
}

// opSignal is kill(2) of the target: a signal with a handler (OpSignal)
// or SIGKILL (OpKill).
func (cp *CPU) opSignal(p *task.Task, op *task.Op) {
	if t := cp.m.Task(op.Target); t != nil {
		cp.m.sendSignal(cp.c, t, op.Kind == task.OpKill)
	}
	p.Exec.PC++
}

// opYield is sched_yield().
func (cp *CPU) opYield(p *task.Task, op *task.Op) {
	c := cp.c
	ex := &p.Exec
	r := cp.rq
	r.LockIrq(c) // do_sched_yield: this_rq_lock_irq()
	r.UpdateCurr(c)
	if d := r.Donor(c); d == p {
		r.YieldTask(c, p)
	}
	r.UnlockIrq(c)
	ex.PC++
	cp.schedule(true)
}

// opAffinity is sched_setaffinity() of p or of the target.
func (cp *CPU) opAffinity(p *task.Task, op *task.Op) {
	c, m := cp.c, cp.m
	ex := &p.Exec
	t := cp.opTarget(p, op)
	ex.PC++
	mask := op.Mask
	switch {
	case op.Count > 0:
		// a random window of Count CPUs (stress: shuffle masks)
		n := len(m.cpus)
		start := ex.Rand.IntN(n)
		mask = task.Mask{}
		for i := 0; i < op.Count && i < n; i++ {
			mask.Set((start + i) % n)
		}
	case op.Count < 0:
		mask = task.MaskAll(len(m.cpus))
	}
	if t != nil {
		m.setCPUsAllowed(c, t, mask)
	}
}

// opSetPrio is sched_setscheduler() of p or of the target.
func (cp *CPU) opSetPrio(p *task.Task, op *task.Op) {
	c, m := cp.c, cp.m
	t := cp.opTarget(p, op)
	p.Exec.PC++
	if t != nil {
		m.setScheduler(c, t, op.Policy, op.Prio, op.DL)
	}
}

// opTarget is the task an instruction acts on: its target, or p itself.
// nil if the target does not exist.
func (cp *CPU) opTarget(p *task.Task, op *task.Op) *task.Task {
	if op.Target != 0 {
		return cp.m.Task(op.Target)
	}
	return p
}

// opLoop jumps back Count times (0: forever).
func (cp *CPU) opLoop(p *task.Task, op *task.Op) {
	ex := &p.Exec
	if op.Count == 0 {
		ex.PC = op.Jump
		return
	}
	ex.Loops[ex.PC]++
	if ex.Loops[ex.PC] < op.Count {
		ex.PC = op.Jump
		return
	}
	ex.Loops[ex.PC] = 0
	ex.PC++
}

// opChoose jumps with probability Prob.
func (cp *CPU) opChoose(p *task.Task, op *task.Op) {
	ex := &p.Exec
	if ex.Rand.Float64() < op.Prob {
		ex.PC = op.Jump
	} else {
		ex.PC++
	}
}

// opExit is do_exit().
func (cp *CPU) opExit(p *task.Task, op *task.Op) {
	cp.exit(p)
}

// unlock releases mutex id held by p and issues the wakeups.
func (cp *CPU) unlock(p *task.Task, id int) bool {
	ex := &p.Exec
	i := len(ex.Held) - 1
	for i >= 0 && ex.Held[i] != id {
		i--
	}
	if i < 0 {
		return false
	}
	ex.Held = append(ex.Held[:i], ex.Held[i+1:]...)
	if mx := cp.m.mutexes[id]; mx.Traced() {
		p.Stats.MarkMutex(id, -1, cp.c.Now)
	}
	if mx := cp.m.mutexes[id]; mx.WW() != nil {
		mx.WWUnlock(cp.c, p, &cp.wq) // a ww_mutex is released with ww_mutex_unlock
	} else {
		mx.Unlock(cp.c, p, &cp.wq)
	}
	if cp.c.Proxy && len(cp.wq.Tasks) > 0 && !cp.c.Bug(bugs.ProxyKeepsDonor) {
		// The lock changed hands: if p runs as a proxy, its donor's chain
		// may no longer end at p (invariant 4). Re-pick. The kernel does
		// not: finding F2 (docs/findings.md), --bug proxy-keeps-donor.
		cp.rq.SetNeedResched()
	}
	cp.wakeUpQ()
	if cp.c.Proxy {
		// Invariant 4 right after the hand-off and its wake-ups: curr is
		// still the end of its donor's chain, or a re-pick is pending.
		// (A model check, not kernel code: IRQs off like the tick's.)
		cp.rq.LockIrq(cp.c)
		cp.checkCurrDonor()
		cp.rq.UnlockIrq(cp.c)
	}
	return true
}

// wakeUpQ is wake_up_q(): wake what an unlock queued, after wait_lock.
func (cp *CPU) wakeUpQ() {
	for i, t := range cp.wq.Tasks {
		cp.m.tryToWakeUp(cp.c, t, task.WakeNormal)
		if mutex.WakeQTakesRefs() {
			t.PutTaskStruct()
		}
		cp.wq.Tasks[i] = nil
	}
	cp.wq.Tasks = cp.wq.Tasks[:0]
}

// exit is do_exit(): release held mutexes, become DEAD, schedule away.
func (cp *CPU) exit(p *task.Task) {
	ex := &p.Exec
	for len(ex.Held) > 0 {
		cp.unlock(p, ex.Held[len(ex.Held)-1])
	}
	ex.Exited = true
	cp.dropMigrateDisable(p)
	p.BlockedLock.Lock(cp.c.CPU)
	pointed := len(p.BlockedHead) > 0 || p.SleepingOwner.Load() != nil
	p.BlockedLock.Unlock(cp.c.CPU)
	if pointed || p.Refs() > 1 {
		cp.c.Inc(stats.ExitsWithRefs)
	}
	cp.rq.LockIrq(cp.c)
	if p.DLTask() {
		cp.m.dlb.Release(cp.c, p) // task_non_contending on TASK_DEAD, at once
	}
	cp.rq.UnlockIrq(cp.c)
	cp.endRequest(p)
	p.Stats.ExitAt = cp.c.Now
	// do_task_dead: set_special_state(TASK_DEAD), the store under
	// pi_lock, so that a try_to_wake_up that matched an earlier sleeping
	// state (and holds pi_lock until it has set TASK_WAKING) cannot
	// overwrite it and enqueue the dead task.
	p.PiLock.Lock(cp.c.CPU)
	p.SetState(task.Dead)
	p.PiLock.Unlock(cp.c.CPU)
	cp.c.Inc(stats.Exits)
	cp.c.Emit(trace.EvExit, int32(p.ID), 0, 0, 0)
	cp.schedule(false)
}

// handleSignal is get_signal() on the way back to user mode: p dequeues
// its pending signals under its siglock (clearing TIF_SIGPENDING). A
// handler "runs" (nothing to do); SIGKILL makes p exit (do_group_exit),
// and handleSignal then returns true.
func (cp *CPU) handleSignal(p *task.Task) bool {
	c := cp.c
	p.SigLock.Lock(c.CPU)
	fatal := p.DequeueSignals(c.CPU)
	p.SigLock.Unlock(c.CPU)
	c.Inc(stats.SignalsHandled)
	f := int32(0)
	if fatal {
		f = 1
	}
	c.Emit(trace.EvSignalHandled, int32(p.ID), f, 0, 0)
	if fatal {
		p.Exec.Killed = true
		cp.exit(p)
		return true
	}
	return false
}

// sendSignal is send_signal() of a signal with a handler, or of SIGKILL
// (fatal), to p: under p's siglock the signal is queued, TIF_SIGPENDING
// set, and signal_wake_up_state wakes p from an INTERRUPTIBLE sleep, or for
// SIGKILL also from a KILLABLE one (wake_up_state(p, TASK_INTERRUPTIBLE |
// TASK_WAKEKILL)), all before the siglock is dropped. A task in a mutex
// wait that is woken goes back round its wait loop and leaves it with
// -EINTR; one that is about to sleep sees the signal in
// try_to_block_task (signal_pending_state) and stays runnable.
func (m *Machine) sendSignal(c *percpu.Ctx, p *task.Task, fatal bool) bool {
	// kill(2) finds the task by pid under RCU; once it has exited and its
	// last reference is gone it is not found (ESRCH). The model holds a
	// reference across the send instead of RCU.
	if !p.TryGetTaskStruct() {
		return false
	}
	defer p.PutTaskStruct()
	mask := task.WakeInterruptible
	if fatal {
		mask |= task.WakeKill
	}
	p.SigLock.Lock(c.CPU)
	p.QueueSignal(c.CPU, fatal)
	c.Inc(stats.SignalsSent)
	woken := m.tryToWakeUp(c, p, mask)
	p.SigLock.Unlock(c.CPU)
	if woken {
		c.Inc(stats.SignalWakeups)
	}
	f, w := int32(0), int32(0)
	if fatal {
		f = 1
	}
	if woken {
		w = 1
	}
	c.Emit(trace.EvSignal, int32(p.ID), f, w, 0)
	return woken
}

// setScheduler is __sched_setscheduler(): change p's policy and priority
// under pi_lock and its rq lock, requeueing it if queued.
//
// A change into, within or out of SCHED_DEADLINE passes admission
// control first (sched_dl_overflow under the rq lock): refused, nothing
// changes and the call fails with -EBUSY.
func (m *Machine) setScheduler(c *percpu.Ctx, p *task.Task, policy task.Policy, prio int, dl task.DLParams) {
	p.PiLock.Lock(c.CPU)
	r := m.taskRQLock(c, p)
	if p.State() != task.Dead && policy.DL() && !m.spansRootDomain(&p.CPUsMask) {
		// __sched_setscheduler: a task whose affinity does not cover
		// its root domain cannot become SCHED_DEADLINE (-EPERM).
		c.Inc(stats.DLAffinityRefused)
		c.Emit(trace.EvDLAdmission, int32(p.ID), 2, 0, 0)
		r.Unlock(c)
		p.PiLock.Unlock(c.CPU)
		return
	}
	if p.State() != task.Dead && (policy.DL() || p.DLTask()) {
		if !m.dlb.SchedDLOverflow(c, p, policy, dl) {
			c.Inc(stats.DLAdmissionFails)
			c.Emit(trace.EvDLAdmission, int32(p.ID), 1, 0, 0)
			r.Unlock(c)
			p.PiLock.Unlock(c.CPU)
			return
		}
		if policy.DL() {
			c.Emit(trace.EvDLAdmission, int32(p.ID), 0, 0, 0)
		}
	}
	if p.State() != task.Dead {
		if r.CPU == c.ID {
			r.UpdateCurr(c)
		}
		if p.SE.Delayed && (policy.RT() || policy.DL()) {
			// Leaving the fair class: a delayed entity is dequeued
			// for good first (switching_from_fair), and blocks.
			r.Dequeue(c, p, rq.DequeueSleep|rq.DequeueDelayed)
			if p.ContributesToLoad {
				r.NrUninterruptible++
			}
			p.SetOnRQ(task.OnRQNone)
		}
		queued := p.SE.Queued
		running := p == r.Donor(c)
		if queued {
			r.Dequeue(c, p, rq.DequeueSave)
		}
		if running {
			r.PutPrevDonor(c)
		}
		if p.DLTask() && !policy.DL() {
			// __dl_clear_params, which the kernel runs at the 0-lag time
			// (inactive_task_timer); the model has no inactive timer.
			p.SE.DL = task.DLEntity{}
		}
		switch {
		case policy == task.FIFO || policy == task.RR:
			p.SetRT(policy, prio)
		case policy.DL():
			p.SetDL(dl)
		default:
			p.SetNice(prio)
		}
		if queued {
			r.Enqueue(c, p, rq.EnqueueRestore)
		}
		if running {
			r.SetNextDonor(c)
		}
		if p == r.Curr() || p == r.Donor(c) {
			r.ReschedCurr(c)
		} else if queued {
			r.CheckPreemptCurr(c, p)
		}
		c.Emit(trace.EvSetPrio, int32(p.ID), int32(p.SE.Prio), 0, 0)
	}
	r.Unlock(c)
	p.PiLock.Unlock(c.CPU)
}

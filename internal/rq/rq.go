package rq

import (
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// Enqueue and dequeue flags (ENQUEUE_* / DEQUEUE_*).
const (
	EnqueueWakeup    = 1 << iota // a sleeping task becomes runnable
	EnqueueMigrated              // arrives from another runqueue
	EnqueueRestore               // re-enqueue after a change of class or priority
	DequeueSleep                 // the task goes to sleep: on_rq becomes 0
	DequeueMigrating             // the task moves: on_rq becomes MIGRATING
	DequeueSave                  // dequeue around a change of class or priority
	EnqueueInitial               // a new task's first enqueue (wake_up_new_task)
	EnqueueDelayed               // requeue a delayed entity (ttwu_runnable)
	DequeueDelayed               // the final dequeue of a delayed entity
	DequeueSpecial               // a special task state (task.IsSpecialTaskState): never delayed
	DequeueMove                  // DEQUEUE_MOVE (with SAVE: the task may change queue position)
	EnqueueReplenish             // the dl_timer (or an immediate refill) gives a throttled DL task a new budget
)

// Scheduler tunables (virtual ns).
const (
	RRTimeslice    = task.RRTimeslice // sched_rr_timeslice
	FairSlice      = 3_000_000        // sysctl_sched_base_slice: 0.75 ms x (1 + ilog2(8))
	NiceZeroWeight = 1024
)

// BalanceCallback is deferred balancing work queued during a pick
// (queue_balance_callback); it runs with the rq lock held after the pick
// is final, or is zapped when the pick is abandoned.
type BalanceCallback struct {
	Name string
	Fn   func(c *percpu.Ctx, rq *RQ)
}

// RQ is one CPU's runqueue.
type RQ struct {
	CPU int
	// Watch, when an explanation replay runs, records the reads and
	// writes of curr, donor and the queue (trace.Watch); nil otherwise.
	// Set before the machine runs, read-only after.
	Watch *trace.Watch
	// own is rq->__lock, this runqueue's own lock. Sites never use it
	// directly: they go through lockp() (rq_lockp), which is own or, with
	// core scheduling enabled on this rq, the core leader's own lock;
	// only the flip (sched_core_lock) takes every sibling's own lock.
	own *spinlock.Lock
	// coreEnabled is rq->core_enabled: rq_lockp() is the core's lock.
	// Written by the flip with every SMT sibling's own lock held; read
	// without any lock by the re-validating acquire (Lock), which the
	// kernel does with a plain load: an atomic here, as READ_ONCE.
	coreEnabled atomic.Bool

	// curr is the execution context. Written under the rq lock by the owning CPU;
	// read without the lock by remote CPUs (idle_cpu(), wakeup choices).
	curr atomic.Pointer[task.Task]
	// nrRunning counts queued tasks (the donor included). Written under
	// the rq lock (atomic adds); read without it by load balancing and
	// select_task_rq (atomic loads, as READ_ONCE; find_busiest_queue's
	// scan reads it plainly, as the kernel does: cpu.peekNrRunning). It
	// points into the machine's array of every runqueue's count
	// (PlaceNrRunning), which that scan reads densely.
	nrRunning *int32
	// currPrio is the donor's prio, published at every switch for remote
	// wakeup placement (cpupri). Written under the rq lock; read without it.
	currPrio atomic.Int32

	// Protected by the rq lock.
	donor       *task.Task   // scheduling context; == curr unless proxying
	Idle        *task.Task   // the idle task; never queued
	dl          []*task.Task // the dl tree: SCHED_DEADLINE tasks not throttled (dl.go)
	dlThrottled []*task.Task // queued (on_rq) SCHED_DEADLINE tasks off the tree until their dl_timer
	rt          []*task.Task
	fair        []*task.Task
	seq         uint64 // enqueue order
	minVruntime int64  // cfs_rq->min_vruntime: v0 of the avg_vruntime sums
	// avgVruntime and avgLoad are cfs_rq->avg_vruntime (sum of
	// (v_i - v0) * w_i) and cfs_rq->avg_load (sum of w_i) over the tree:
	// the queued fair entities, delayed ones included, except cfsCurr.
	avgVruntime int64
	avgLoad     int64
	treeSeq     uint64     // __enqueue_entity order (deadline ties)
	cfsCurr     *task.Task // cfs_rq->curr: the fair donor set by set_next_entity, or nil
	execStart   int64      // rq clock when curr/donor last started being charged
	// dlOwed is budget time rq->donor, a SCHED_DEADLINE task, owes for
	// intervals that __schedule charged on entry to the execution
	// accounts (sum_exec_runtime, donated time) but not to the DL budget:
	// the reference charges a DL donor in __schedule only through
	// put_prev_task_dl (when the donor changes) or dequeue_task_dl, so a
	// donor that is picked again pays at its next update_curr_dl (the
	// tick). Settled by the next UpdateCurr, by SetDonor when the donor
	// changes and by the donor's dequeue.
	dlOwed int64
	// hiClass is the virtual time this CPU spent with an RT or deadline
	// task as its donor, up to hiSince, when the current one (if it is
	// one) became the donor. Model bookkeeping for the progress
	// invariant (a queued task that waits behind higher-class work is
	// not starved by the scheduler's fault: the model has no RT
	// throttling or fair server).
	hiClass, hiSince int64
	Clock            int64 // rq clock: the owning CPU's clock at the last update
	// uncharged is the newidle window (rq lock; set and read only by the
	// owning CPU): while newidle balancing costs virtual time
	// (--newidle-cost), update_curr charges nobody (BeginUncharged).
	uncharged bool
	// NrUninterruptible counts TASK_UNINTERRUPTIBLE sleepers that blocked
	// here, less those woken here (it may go negative; the sum over all
	// runqueues is the number of such sleepers).
	NrUninterruptible int64
	balanceCallbacks  []BalanceCallback

	// Kick sends a reschedule IPI to this CPU on behalf of CPU c. Set by
	// the cpu package before the machine starts.
	Kick func(c *percpu.Ctx, cpu int)
	// nrRT counts queued RT tasks. Written under the rq lock; read without it.
	nrRT atomic.Int32
	// RTO counts, machine-wide, the runqueues with two or more RT tasks
	// (rto_count: candidates for RT pull). Shared; set before start.
	RTO *atomic.Int32
	// RTOMask is the root domain's rto_mask: which runqueues those are.
	// Shared; set before start (with RTO).
	RTOMask OverloadMask
	// Ledger, if set, checks the charges at every curr/donor change. Set
	// before start.
	Ledger Ledger
	// nrDL is dl_nr_running: tasks in the dl tree. Written under the rq
	// lock; read without it (pull_dl_task's scan, as rt's nrRT).
	nrDL atomic.Int32
	// earliestDL is this runqueue's entry in the root domain's cpudl
	// heap: the leftmost deadline of the dl tree, 0 when it is empty
	// (the CPU is in cpudl's free_cpus). Written under the rq lock
	// (cpudl_set/cpudl_clear); read without it by find_later_rq.
	earliestDL atomic.Int64
	// DLO counts, machine-wide, the runqueues holding two or more DL
	// tasks (dlo_count: candidates for DL pull). Shared; set before start.
	DLO *atomic.Int32
	// StartDLTimer arms p's dl_timer at virtual time when on the calling
	// CPU (hrtimer_start) and returns the timer's id on that CPU's list;
	// set by the cpu package before start.
	StartDLTimer func(c *percpu.Ctx, p *task.Task, when int64) uint64
	// PreemptEqualDL is check_preempt_equal_dl's test (cpudl_find for
	// the donor and for p, find_exec_ctx): should p, woken here with the
	// donor's deadline, reschedule it? Set by the cpu package before
	// start; nil answers no.
	PreemptEqualDL func(c *percpu.Ctx, r *RQ, p *task.Task) bool
	// Core is the core-scheduling state (core.go); its Leader is nil
	// when core scheduling is off.
	Core CoreState

	// SRQCfg is the SHARED_RUNQ state shared by every runqueue, nil
	// unless the machine was built with it (srq.go). Set before start.
	SRQCfg *SRQConfig
	// srq and shard are cfs_rq->shared_runq and cfs_rq->shard: written
	// under this rq lock by a domain rebuild, read under it.
	srq   *SharedRunq
	shard *Shard
	// IdleStamp and AvgIdle are rq->idle_stamp and rq->avg_idle:
	// sched_balance_newidle stamps the time it starts looking for work,
	// ttwu_do_activate folds the time until the next wake-up into the
	// average (update_avg), and newidle gives up when the average idle
	// period is shorter than balancing would take. Guarded by the rq lock
	// (the kernel reads avg_idle in the domain walk with it dropped; the
	// model's walk holds it at that test).
	IdleStamp int64
	AvgIdle   int64
	// MaxIdleBalanceCost is rq->max_idle_balance_cost: the longest newidle
	// walk, the cap of avg_idle at twice it. Written by this CPU under the
	// rq lock (the walk) and without it (sched_balance_domains' decay,
	// from the balance softirq), read by ttwu_do_activate under the lock:
	// in the kernel a plain store and load with no lock in common, so a
	// lockless pair here (docs/kernel-map.md).
	MaxIdleBalanceCost atomic.Int64
	// RDOverloaded is the root domain's rd->overloaded: some runqueue has
	// more than one runnable task. Set by add_nr_running when a runqueue
	// gets its second task, recomputed by the top domain's balancing
	// (update_sd_lb_stats), read by newidle balance: READ_ONCE /
	// WRITE_ONCE in the kernel. Shared; set before start (nil in unit
	// tests of a lone runqueue).
	RDOverloaded *atomic.Bool
	// Feat is the fair class's sched features. Set before start.
	Feat Features
}

// New returns the runqueue of cpu with its idle task.
func New(cpu int, idle *task.Task) *RQ {
	r := &RQ{CPU: cpu, Idle: idle, own: new(spinlock.Lock), Feat: DefaultFeatures(), nrRunning: new(int32)}
	r.own.Init(spinlock.ClassRQ, cpu)
	r.donor = idle
	r.curr.Store(idle)
	r.currPrio.Store(task.IdlePrio)
	return r
}

// PlaceNrRunning moves rq->nr_running to *p (an element of an array of
// every runqueue's count; accessed with sync/atomic's functions, or, by
// find_busiest_queue's scan, plainly). Only before the runqueue is used.
func (r *RQ) PlaceNrRunning(p *int32) {
	*p = *r.nrRunning
	r.nrRunning = p
}

func (r *RQ) String() string { return fmt.Sprintf("rq%d", r.CPU) }

// LockP is rq_lockp(): the lock that serialises this runqueue. Stable
// only while a lock of this runqueue's core is held.
func (r *RQ) LockP() *spinlock.Lock { return r.lockp() }

// lockp is __rq_lockp(): &rq->core->__lock when core scheduling is
// enabled on this rq, else &rq->__lock.
func (r *RQ) lockp() *spinlock.Lock {
	if r.Core.Leader != nil && r.coreEnabled.Load() {
		return r.Core.Leader.own
	}
	return r.own
}

// OwnLock is rq->__lock itself, for the flip (sched_core_lock) and
// tests; everything else goes through Lock.
func (r *RQ) OwnLock() *spinlock.Lock { return r.own }

// SetLockOrder sets the rq lock's ordering key for the lock-order
// validator and for DoubleLock: lockdep orders rq locks by (core, CPU),
// as the kernel's rq_order_less() does, so that SMT siblings sharing a
// core lock stay consistent. Called before the machine starts.
func (r *RQ) SetLockOrder(key int) { r.own.Init(spinlock.ClassRQ, key) }

// ShareLock makes r use other's lock (rq_lockp() returning the core's
// lock): r joins other's core with core scheduling enabled. Only while
// nothing runs (unit tests); the machine's flip is (*cpu.Machine).
// schedCoreFlip with SetCoreEnabled.
func (r *RQ) ShareLock(other *RQ) {
	r.Core.Leader = other
	r.coreEnabled.Store(true)
}

// SetCoreEnabled is the flip's store to rq->core_enabled: the caller
// holds the own lock of every SMT sibling of r (sched_core_lock).
func (r *RQ) SetCoreEnabled(c *percpu.Ctx, on bool) {
	r.own.AssertHeld(c.CPU)
	r.coreEnabled.Store(on)
	v := int64(0)
	if on {
		v = 1
	}
	r.watchWrite(trace.FieldCoreEnabled, v)
}

// Lock is raw_spin_rq_lock(): take rq_lockp(rq). While core scheduling
// can be switched (the machine has cores and a core-scheduling mode:
// the kernel's static key), the acquire re-validates: read the lock
// pointer, take that lock, read the pointer again and retry if a flip
// changed it in between (raw_spin_rq_lock_nested). --bug core-lock-flip
// keeps the first lock it read.
func (r *RQ) Lock(c *percpu.Ctx) {
	if r.Core.Leader == nil {
		r.own.Lock(c.CPU)
		return
	}
	for {
		l := r.lockp()
		l.Lock(c.CPU)
		if c.Bug(bugs.CoreLockFlip) || l == r.lockp() {
			return
		}
		l.Unlock(c.CPU)
		c.Inc(stats.CoreLockRetries)
	}
}

// LockIrq is rq_lock_irq(): IRQs off, then raw_spin_rq_lock(). The
// _irqsave form (rq_lock_irqsave) is the same here: the CPU's IRQ-off
// sections nest (spinlock.CPU.IrqDisable).
func (r *RQ) LockIrq(c *percpu.Ctx) {
	c.IrqDisable()
	r.Lock(c)
}

// UnlockIrq is rq_unlock_irq(): raw_spin_rq_unlock(), then IRQs on.
func (r *RQ) UnlockIrq(c *percpu.Ctx) {
	r.Unlock(c)
	c.IrqEnable()
}

// Unlock is raw_spin_rq_unlock(): release rq_lockp(rq), stable while it
// is held. A CPU that holds the other candidate instead (a flip changed
// the pointer under an acquire that did not re-validate) breaks
// invariant 50; the lock it does hold is released, so the run can end.
func (r *RQ) Unlock(c *percpu.Ctx) {
	l := r.lockp()
	if r.Core.Leader != nil && !l.HeldBy(c.CPU) {
		if o := r.otherLock(l); o.HeldBy(c.CPU) {
			c.Warn(check.InvRQLockIdentity, -1, "", "raw_spin_rq_unlock(%v) on cpu%d: rq_lockp() is %s#%d but this CPU holds %s#%d (core_enabled flipped under an acquire that did not re-validate)", r, c.ID, l.Class(), l.Sub(), o.Class(), o.Sub())
			o.Unlock(c.CPU)
			return
		}
	}
	l.Unlock(c.CPU)
}

// otherLock is the candidate rq_lockp() that l is not: the own lock or
// the core's.
func (r *RQ) otherLock(l *spinlock.Lock) *spinlock.Lock {
	if l == r.own {
		return r.Core.Leader.own
	}
	return r.own
}

// AssertHeld is lockdep_assert_rq_held(): lockdep_assert_held(
// __rq_lockp(rq)). Holding the other candidate lock instead is invariant
// 46 (the lock identity after acquire), reported, not a panic.
func (r *RQ) AssertHeld(c *percpu.Ctx) {
	l := r.lockp()
	if r.Core.Leader != nil && !l.HeldBy(c.CPU) {
		o := r.otherLock(l)
		c.Warn(check.InvRQLockIdentity, -1, "", "lockdep_assert_rq_held(%v) on cpu%d: rq_lockp() is %s#%d, not held here (the other candidate %s#%d held: %v; held: %s)", r, c.ID, l.Class(), l.Sub(), o.Class(), o.Sub(), o.HeldBy(c.CPU), c.CPU.HeldLocks())
		return
	}
	l.AssertHeld(c.CPU)
}

// Holder returns the CPU holding this runqueue's lock, or -1 (reports).
func (r *RQ) Holder() int { return r.lockp().Holder() }

// Curr returns rq->curr (READ_ONCE: may be read without the lock).
func (r *RQ) Curr() *task.Task {
	if r.Watch != nil {
		return r.watchedCurr()
	}
	return r.curr.Load()
}

//go:noinline
func (r *RQ) watchedCurr() *task.Task {
	p := r.curr.Load()
	r.watchRead(trace.FieldCurr, task.WatchID(p))
	return p
}

// SetCurr sets rq->curr; the rq lock must be held.
func (r *RQ) SetCurr(c *percpu.Ctx, p *task.Task) {
	r.AssertHeld(c)
	r.checkpoint(c, false)
	r.curr.Store(p)
	r.watchWrite(trace.FieldCurr, task.WatchID(p))
	r.checkpoint(c, true)
}

// WatchCorePick records, for an explanation replay, the rq->core_pick a
// core-wide selection keeps for this sibling (the pick its fast path may
// take later).
func (r *RQ) WatchCorePick() {
	r.watchWrite(trace.FieldCorePick, task.WatchID(r.Core.Pick))
}

// watchRead and watchWrite record a step of this runqueue's state for an
// explanation replay (trace.Watch).
func (r *RQ) watchRead(f trace.Field, v int64) {
	if r.Watch != nil {
		r.Watch.Read(trace.ObjRQ, int32(r.CPU), f, v)
	}
}

func (r *RQ) watchWrite(f trace.Field, v int64) {
	if r.Watch != nil {
		r.Watch.Write(trace.ObjRQ, int32(r.CPU), f, v)
	}
}

// PublishPrio publishes the donor's priority for cpupri-style lockless
// readers; the rq lock must be held.
func (r *RQ) PublishPrio(c *percpu.Ctx) {
	r.AssertHeld(c)
	r.currPrio.Store(int32(r.donor.SE.Prio))
}

// CurrPrio returns the published donor priority (READ_ONCE).
func (r *RQ) CurrPrio() int { return int(r.currPrio.Load()) }

// Donor returns rq->donor; the rq lock must be held.
//
// Its reads are not watched (rq->donor's writes are): a watch test here
// would cost the hot path its inlining.
func (r *RQ) Donor(c *percpu.Ctx) *task.Task {
	r.AssertHeld(c)
	return r.donor
}

// SetDonor sets rq->donor (rq_set_donor); the rq lock must be held.
func (r *RQ) SetDonor(c *percpu.Ctx, p *task.Task) {
	r.AssertHeld(c)
	if r.donor != p {
		r.settleDLOwed(c) // put_prev_task_dl's update_curr_dl
	}
	r.checkpoint(c, false)
	prev := r.donor
	if prev != p {
		r.watchWrite(trace.FieldDonor, task.WatchID(p))
		// put_prev_set_next_task(): the fair entity of the old donor
		// goes back into the tree, the new one becomes cfs_rq->curr.
		if prev == r.cfsCurr && prev != nil {
			r.putPrevEntity(prev)
		}
		if p != r.Idle && p.SE.Policy.Fair() {
			r.setNextEntity(p)
		}
	}
	if wasHi, isHi := hiClassDonor(prev), hiClassDonor(p); wasHi != isHi {
		if wasHi {
			r.hiClass += c.Now - r.hiSince
		} else {
			r.hiSince = c.Now
		}
	}
	r.donor = p
	if r.SRQCfg != nil && prev != p {
		r.srqSwitchDonor(c, prev, p)
	}
	r.checkpoint(c, true)
}

func hiClassDonor(p *task.Task) bool {
	return p != nil && !p.Idle && (p.SE.Policy.RT() || p.SE.Policy.DL())
}

// HiClassTime is the virtual time up to now this CPU spent with an RT or
// deadline donor. The rq lock is held, or every CPU is parked.
func (r *RQ) HiClassTime(now int64) int64 {
	if hiClassDonor(r.donor) && now > r.hiSince {
		return r.hiClass + now - r.hiSince
	}
	return r.hiClass
}

// srqSwitchDonor runs the shared_runq hooks of put_prev_entity and
// set_next_entity: the old donor, still queued here, goes back into the
// tree (__enqueue_entity: pushed, v3/v4; not a sched_delayed sleeper,
// which proxysim keeps off the shards); the new one leaves it
// (__dequeue_entity; v2: "removed when picked").
func (r *RQ) srqSwitchDonor(c *percpu.Ctx, prev, next *task.Task) {
	if r.SRQCfg.Hooks != SRQHooksV2 && prev != r.Idle && prev.SE.Policy.Fair() && prev.SE.Queued && !prev.SE.Delayed && prev.SE.QueueCPU == r.CPU {
		r.srqPush(c, prev, false)
	}
	if next != r.Idle && next.SE.Policy.Fair() {
		r.srqRemove(c, next)
	}
}

// NrRT returns the number of queued RT tasks (READ_ONCE).
func (r *RQ) NrRT() int { return int(r.nrRT.Load()) }

// NrRunning returns nr_running (READ_ONCE).
func (r *RQ) NrRunning() int { return int(atomic.LoadInt32(r.nrRunning)) }

// IsIdle is idle_cpu(): nothing queued and the idle task executing.
func (r *RQ) IsIdle() bool { return atomic.LoadInt32(r.nrRunning) == 0 && r.curr.Load() == r.Idle }

// NeedResched is test_tsk_need_resched(rq->curr): TIF_NEED_RESCHED of
// the task this CPU executes (need_resched() when the CPU asks about
// itself). The flag is the task's (task.Task.TestTskNeedResched): a
// switch to another task leaves it behind.
func (r *RQ) NeedResched() bool { return r.curr.Load().TestTskNeedResched() }

// SetNeedResched is resched_curr() by the CPU on its own runqueue:
// TIF_NEED_RESCHED on rq->curr, no IPI needed.
func (r *RQ) SetNeedResched() { r.curr.Load().SetTskNeedResched() }

// ReschedCurr is resched_curr(): mark rq->curr for rescheduling and, if
// this is another CPU, send it an IPI; nothing when curr's flag is set
// already. The rq lock must be held.
func (r *RQ) ReschedCurr(c *percpu.Ctx) {
	r.AssertHeld(c)
	if r.curr.Load().TestAndSetTskNeedResched() {
		return
	}
	if r.CPU != c.ID && r.Kick != nil {
		r.Kick(c, r.CPU)
	}
}

// UpdateClock is update_rq_clock(): only the owning CPU advances its rq
// clock; a remote CPU holding the lock leaves it as it is.
func (r *RQ) UpdateClock(c *percpu.Ctx) {
	r.AssertHeld(c)
	if c.ID == r.CPU && c.Now > r.Clock {
		r.Clock = c.Now
	}
}

// setRDOverloaded is add_nr_running()'s set_rd_overloaded(rq->rd, 1):
// the flag is tested before it is written (READ_ONCE, then WRITE_ONCE).
func (r *RQ) setRDOverloaded() {
	if o := r.RDOverloaded; o != nil && !o.Load() {
		o.Store(true)
	}
}

// Tasks returns every queued task, RT first (audits and reports).
func (r *RQ) Tasks() []*task.Task {
	out := make([]*task.Task, 0, len(r.dl)+len(r.rt)+len(r.fair))
	out = append(out, r.dl...)
	out = append(out, r.rt...)
	return append(out, r.fair...)
}

// Enqueue puts p into its class queue (enqueue_task). The rq lock must be
// held; p.on_rq is the caller's business (ActivateTask does both).
// EnqueueDelayed requeues a delayed fair entity that is still queued
// (requeue_delayed_entity).
func (r *RQ) Enqueue(c *percpu.Ctx, p *task.Task, flags int) {
	r.AssertHeld(c)
	se := &p.SE
	if flags&EnqueueDelayed != 0 {
		r.coreEnqueueBeforeClass(c, p)
		if r.requeueDelayedEntity(c, p) {
			r.coreEnqueueAfterClass(c, p)
			if r.SRQCfg != nil && p != r.donor {
				// back in the tree (v3/v4's __enqueue_entity), and a
				// wakeup that is no migration (v2's hook): relinked, as
				// it left the shard when its dequeue was delayed
				// (proxysim's rule: a delayed task is on no shard).
				r.srqPush(c, p, true)
			}
		}
		return
	}
	if se.Queued {
		c.Warn(check.InvOneQueue, p.ID, p.String(), "enqueue_task: %v already queued on cpu%d (enqueue on cpu%d)", p, se.QueueCPU, r.CPU)
		return
	}
	r.coreEnqueueBeforeClass(c, p)
	r.seq++
	se.QueueSeq = r.seq
	if se.Policy.DL() {
		se.Queued = true
		se.QueueCPU = r.CPU
		r.watchWrite(trace.FieldQueued, int64(p.ID))
		r.enqueueTaskDL(c, p, flags)
		r.coreEnqueueAfterClass(c, p)
		return
	}
	if se.Policy.RT() {
		r.rt = append(r.rt, p)
		if r.nrRT.Add(1) == 2 && r.RTO != nil {
			// rt_set_overload: the mask bit, then the count.
			r.RTOMask.set(r.CPU)
			r.RTO.Add(1)
		}
	} else {
		r.enqueueFair(c, p, flags)
	}
	se.Queued = true
	se.QueueCPU = r.CPU
	r.watchWrite(trace.FieldQueued, int64(p.ID))
	nr := atomic.AddInt32(r.nrRunning, 1)
	if nr == 2 {
		r.setRDOverloaded() // add_nr_running: prev_nr < 2 && nr_running >= 2
	}
	r.coreEnqueueAfterClass(c, p)
	if r.SRQCfg != nil {
		r.srqEnqueue(c, p, flags, nr-1)
	}
}

// Dequeue removes p from its class queue (dequeue_task). It returns false
// when the fair class keeps a sleeper queued as sched_delayed
// (DELAY_DEQUEUE): p stays queued and counted in nr_running.
func (r *RQ) Dequeue(c *percpu.Ctx, p *task.Task, flags int) bool {
	r.AssertHeld(c)
	se := &p.SE
	if !se.Queued || se.QueueCPU != r.CPU {
		c.Warn(check.InvOneQueue, p.ID, p.String(), "dequeue_task: %v not queued on cpu%d (queued=%v on cpu%d)", p, r.CPU, se.Queued, se.QueueCPU)
		return true
	}
	if r.CoreEnabled() {
		r.coreDequeue(c, p, flags)
	}
	if r.SRQCfg != nil {
		// __dequeue_entity (v3/v4), dequeue_task_fair (v2): whatever
		// its class now (a fair task turned DL by sched_setattr while
		// linked leaves the shard too); a sleeper the fair class keeps
		// queued as sched_delayed leaves it as well (the series
		// predates delayed dequeue: proxysim's rule, docs/kernel-map.md)
		r.srqRemove(c, p)
	}
	if se.Policy.DL() {
		r.dequeueTaskDL(c, p)
		se.Queued = false
		se.QueueCPU = -1
		r.watchWrite(trace.FieldQueued, -int64(p.ID))
		return true
	}
	return r.dequeueTask(c, p, flags)
}

// dequeueTask is the class dequeue (dequeue_task_fair / dequeue_rt_task)
// and the nr_running update.
func (r *RQ) dequeueTask(c *percpu.Ctx, p *task.Task, flags int) bool {
	se := &p.SE
	if se.Policy.RT() {
		if !remove(&r.rt, p) {
			c.Warn(check.InvOneQueue, p.ID, p.String(), "dequeue_task: %v marked queued on cpu%d but missing from its class queue", p, r.CPU)
			return true
		}
		if r.nrRT.Add(-1) == 1 && r.RTO != nil {
			// rt_clear_overload: the count, then the mask bit.
			r.RTO.Add(-1)
			r.RTOMask.clear(r.CPU)
		}
		se.Queued = false
	} else if !r.dequeueFair(c, p, flags) {
		return false
	}
	se.QueueCPU = -1
	r.watchWrite(trace.FieldQueued, -int64(p.ID))
	atomic.AddInt32(r.nrRunning, -1)
	return true
}

// remove takes p out of class queue q; false if it is not there.
func remove(q *[]*task.Task, p *task.Task) bool {
	s := *q
	for i, t := range s {
		if t == p {
			copy(s[i:], s[i+1:])
			s[len(s)-1] = nil
			*q = s[:len(s)-1]
			return true
		}
	}
	return false
}

// ActivateTask is activate_task() of the full series: take p off the
// list of a sleeping owner it may still be parked on, then enqueue it and
// mark it on_rq QUEUED under p's blocked_lock, which orders the store
// against find_proxy_task's second look at on_rq under the same lock
// before it parks a donor on p.
func (r *RQ) ActivateTask(c *percpu.Ctx, p *task.Task, flags int) {
	if c.Proxy {
		p.RemoveFromSleepingOwner(c.CPU)
	}
	p.BlockedLock.Lock(c.CPU)
	r.Enqueue(c, p, flags)
	p.SE.Runnable, p.SE.RunnableHi = c.Now, r.HiClassTime(c.Now)
	p.SetOnRQ(task.OnRQQueued)
	p.BlockedLock.Unlock(c.CPU)
}

// BlockTask is block_task(): p goes to sleep in state st and leaves the
// runqueue (on_rq 0 last, __block_task), unless the fair class delays the
// dequeue (DELAY_DEQUEUE): then p stays queued, on_rq QUEUED and
// sched_delayed, until a pick dequeues it or a wake-up requeues it. A
// special state (is_special_task_state: TASK_DEAD, TASK_WAKING) adds
// DEQUEUE_SPECIAL, which is never delayed. A TASK_UNINTERRUPTIBLE sleep
// counts in this rq's nr_uninterruptible (sched_contributes_to_load)
// when p actually leaves; the activation that wakes p takes it back on
// whatever rq it wakes on, so one rq's count may go negative: only the
// sum means something. Reports whether p left (false: delayed).
func (r *RQ) BlockTask(c *percpu.Ctx, p *task.Task, st task.State) bool {
	p.ContributesToLoad = st.Uninterruptible()
	flags := DequeueSleep
	if task.IsSpecialTaskState(st) {
		flags |= DequeueSpecial
	}
	if !r.Dequeue(c, p, flags) {
		return false
	}
	if p.ContributesToLoad {
		r.NrUninterruptible++
	}
	p.SetOnRQ(task.OnRQNone)
	return true
}

// DeactivateTask is deactivate_task(): a move (DequeueMigrating) marks
// on_rq MIGRATING first, so that lockless observers see "moving" while
// the mover still owns the task. Sleeps go through BlockTask.
func (r *RQ) DeactivateTask(c *percpu.Ctx, p *task.Task, flags int) {
	p.SetOnRQ(task.OnRQMigrating)
	r.Dequeue(c, p, flags)
}

// better reports whether a should run before b (RT by prio then FIFO
// order; fair by vruntime then FIFO order; RT before fair): the order of
// the walks that do not pick. The core tree orders fair tasks by
// cfs_prio_less, i.e. by vruntime (sched_core_find, the cookie lists);
// balancing candidates keep the same order. The fair pick itself is
// pickEEVDF.
func better(a, b *task.Task) bool {
	if ad, bd := a.SE.Policy.DL(), b.SE.Policy.DL(); ad || bd {
		if ad != bd {
			return ad
		}
		return dlLess(a, b)
	}
	ar, br := a.SE.Policy.RT(), b.SE.Policy.RT()
	if ar != br {
		return ar
	}
	if ar {
		if a.SE.Prio != b.SE.Prio {
			return a.SE.Prio < b.SE.Prio
		}
		return a.SE.QueueSeq < b.SE.QueueSeq
	}
	if a.SE.Vruntime != b.SE.Vruntime {
		return a.SE.Vruntime < b.SE.Vruntime
	}
	return a.SE.QueueSeq < b.SE.QueueSeq
}

// PickNextTask is pick_next_task(): the best queued task, or idle. The
// fair pick may dequeue delayed entities on its way (pick_task_fair).
func (r *RQ) PickNextTask(c *percpu.Ctx) *task.Task {
	r.AssertHeld(c)
	if len(r.dl) > 0 {
		return r.pickNextDLEntity()
	}
	if len(r.rt) > 0 {
		best := r.rt[0]
		for _, t := range r.rt[1:] {
			if better(t, best) {
				best = t
			}
		}
		return best
	}
	if p := r.pickTaskFair(c); p != nil {
		return p
	}
	return r.Idle
}

// PickBest returns the best queued task for which ok returns true, or nil.
// Delayed entities are never candidates (they are not runnable; the core
// tree and the balancers skip them).
func (r *RQ) PickBest(ok func(*task.Task) bool) *task.Task {
	var best *task.Task
	for _, q := range [3][]*task.Task{r.dl, r.rt, r.fair} {
		for _, t := range q {
			// the cheap order test first: ok may take locks
			if (best == nil || better(t, best)) && !t.SE.Delayed && ok(t) {
				best = t
			}
		}
		if best != nil {
			return best
		}
	}
	return nil
}

// UpdateCurr is update_curr() for the proxy split (6.17 update_se): the time
// since the last update is execution time of rq.curr and class time
// (vruntime, RT slice) of rq.donor. Only the owning CPU calls it. A fair
// donor whose request is done or whose protected slice is over, with
// others queued, gets need_resched (resched_curr_lazy).
func (r *RQ) UpdateCurr(c *percpu.Ctx) {
	r.AssertHeld(c)
	if r.updateCurr(c, false) {
		r.ReschedCurr(c)
	}
}

// UpdateCurrSchedule is __schedule's charge on entry, before the pick.
// The reference has no update_curr there: a fair donor is charged by
// pick_task_fair's update_curr (or by a blocking prev's dequeue) at about
// the same point, but a SCHED_DEADLINE donor only when it is put
// (put_prev_task_dl, the donor changes) or dequeued. The execution time
// is charged now, as the model's accounting needs; a DL donor's budget
// charge is owed (dlOwed) until one of those, or the next tick, so that
// its throttle happens where the reference's does (finding F17's window
// depends on it).
func (r *RQ) UpdateCurrSchedule(c *percpu.Ctx) {
	r.AssertHeld(c)
	if r.updateCurr(c, true) {
		r.ReschedCurr(c)
	}
}

// settleDLOwed charges the DL donor what it owes (update_curr_dl from
// put_prev_task_dl or dequeue_task_dl).
func (r *RQ) settleDLOwed(c *percpu.Ctx) {
	owed := r.dlOwed
	if owed == 0 {
		return
	}
	r.dlOwed = 0
	if d := r.donor; d != nil && d != r.Idle && d.SE.Policy.DL() {
		r.updateCurrDL(c, &d.SE, owed)
	}
}

// PeekDLOwed returns dlOwed (the charge ledger, rq lock held).
func (r *RQ) PeekDLOwed() int64 { return r.dlOwed }

func (r *RQ) updateCurr(c *percpu.Ctx, deferDL bool) bool {
	if r.uncharged {
		// the newidle window: an enqueue's update_curr (the pulled
		// task's placement, wakeup preemption) charges nobody
		r.SkipUncharged(c)
		return false
	}
	r.UpdateClock(c)
	delta := r.Clock - r.execStart
	if delta <= 0 {
		if !deferDL {
			r.settleDLOwed(c)
		}
		return false
	}
	r.execStart = r.Clock
	curr, donor := r.curr.Load(), r.donor
	if curr != r.Idle {
		curr.SE.SumExecRuntime += delta
	}
	if donor == r.Idle {
		return false
	}
	if donor != curr {
		donor.SE.DonatedRuntime += delta
	}
	se := &donor.SE
	if mutantChargeCurr() && curr != r.Idle {
		se = &curr.SE // the mistake: class time charged to the execution context
	}
	if se.Policy.DL() {
		if se == &donor.SE {
			if deferDL {
				r.dlOwed += delta
				return false
			}
			delta += r.dlOwed
			r.dlOwed = 0
		}
		r.updateCurrDL(c, se, delta)
		return false
	}
	if se.Policy.RT() {
		// update_curr_rt: the RT bandwidth (not modelled); an RR
		// quantum is counted in ticks, by Tick
		return false
	}
	se.Vruntime += calcDeltaFair(delta, se)
	resched := r.updateDeadline(se)
	r.updateMinVruntime()
	if len(r.fair) <= 1 || r.cfsCurr == nil {
		return false
	}
	return resched || !protectSlice(&r.cfsCurr.SE)
}

// SetNextTask starts accounting for a new curr/donor pair
// (set_next_task): charging restarts now.
func (r *RQ) SetNextTask(c *percpu.Ctx) {
	r.AssertHeld(c)
	r.checkpoint(c, false)
	r.UpdateClock(c)
	r.execStart = r.Clock
	r.checkpoint(c, true)
	d := r.donor
	d.SE.PrevSumExec = d.SE.SumExecRuntime
}

// SkipUncharged moves the charge point to now without charging anyone:
// time this CPU spent on newidle balancing after __schedule's
// update_curr (the kernel's put_prev has charged prev by then), which
// --newidle-cost makes non-zero. The rq lock must be held.
func (r *RQ) SkipUncharged(c *percpu.Ctx) {
	r.AssertHeld(c)
	r.checkpoint(c, false)
	r.UpdateClock(c)
	r.execStart = r.Clock
	r.checkpoint(c, true)
}

// BeginUncharged opens the newidle window: from now until EndUncharged
// every update_curr on this runqueue moves the charge point without
// charging anyone. prev was charged up to here by __schedule; the
// balancing time (--newidle-cost) is idle time (invariant 20), and the
// pulled task's enqueue, whose EEVDF placement runs update_curr, must not
// charge it to prev. The kernel differs (docs/kernel-map.md). The rq lock
// must be held; only the owning CPU calls it.
func (r *RQ) BeginUncharged(c *percpu.Ctx) {
	r.SkipUncharged(c)
	r.uncharged = true
}

// EndUncharged closes the newidle window: the time since the last update
// is charged to nobody and charging resumes. The rq lock must be held.
func (r *RQ) EndUncharged(c *percpu.Ctx) {
	r.uncharged = false
	r.SkipUncharged(c)
}

// CheckPreemptCurr is wakeup_preempt(): should p, just enqueued here,
// preempt the donor? RT beats fair; fair by EEVDF. The donor's
// promise is then checked (invariant 65, checkWakeupPreempt).
func (r *RQ) CheckPreemptCurr(c *percpu.Ctx, p *task.Task) {
	r.AssertHeld(c)
	r.wakeupPreempt(c, p)
	r.checkWakeupPreempt(c, p)
}

func (r *RQ) wakeupPreempt(c *percpu.Ctx, p *task.Task) {
	d := r.donor
	if d == r.Idle {
		r.ReschedCurr(c)
		return
	}
	switch {
	case p.SE.Policy.DL() || d.SE.Policy.DL():
		r.wakeupPreemptDL(c, p, d)
	case p.SE.Policy.RT() && !d.SE.Policy.RT():
		r.ReschedCurr(c)
	case p.SE.Policy.RT() && d.SE.Policy.RT():
		if mutantRTPrioInverted() {
			if p.SE.Prio > d.SE.Prio {
				r.ReschedCurr(c)
			}
		} else if p.SE.Prio < d.SE.Prio {
			r.ReschedCurr(c)
		}
	case !p.SE.Policy.RT() && !d.SE.Policy.RT():
		r.checkPreemptWakeupFair(c, p)
	}
}

// checkPreemptWakeupFair is check_preempt_wakeup_fair(): after charging
// the donor, p preempts if it is now what pick_eevdf would choose (a
// shorter slice first cancels the donor's protection, PREEMPT_SHORT).
// No NEXT_BUDDY (off by default), no idle or batch policies.
func (r *RQ) checkPreemptWakeupFair(c *percpu.Ctx, p *task.Task) {
	d := r.donor
	if d == p || r.NeedResched() {
		return
	}
	if r.updateCurrFair(c) {
		r.ReschedCurr(c)
		return
	}
	se := &d.SE
	short := r.feat(FeatPreemptShort) && p.SE.Slice < se.Slice
	if pk, _ := r.pickEEVDF(!short); pk == p {
		if short {
			cancelProtectSlice(se)
		}
		r.ReschedCurr(c)
		return
	}
	if r.feat(FeatRunToParity) && short {
		r.updateProtectSlice(se)
	}
}

// Tick is the class part of sched_tick(): donor->sched_class->task_tick
// (tick is the virtual ns between ticks, TICK_NSEC). Only the donor's
// own class looks: task_tick_idle does nothing, and no class reschedules
// because a task of a higher class is queued (that is wakeup_preempt's
// business, at the enqueue). Returns true if it set need_resched.
func (r *RQ) Tick(c *percpu.Ctx, tick int64) bool {
	r.AssertHeld(c)
	resched := r.updateCurr(c, false) && !r.NeedResched()
	if resched {
		r.ReschedCurr(c)
	}
	d := r.donor
	if d == r.Idle {
		return false // task_tick_idle
	}
	se := &d.SE
	switch se.Policy {
	case task.Deadline:
		// task_tick_dl: update_curr_dl above did the work (a throttle
		// reschedules from there).
		return false
	case task.FIFO:
		return false
	case task.RR:
		// task_tick_rt: --p->rt.time_slice, one tick at a time
		// however long the donor ran since the last one
		se.TimeSlice -= tick
		if se.TimeSlice > 0 {
			return false
		}
		se.TimeSlice = RRTimeslice
		// Requeue at the tail of its priority if others share it.
		for _, t := range r.rt {
			if t != d && t.SE.Prio == se.Prio {
				r.seq++
				se.QueueSeq = r.seq
				r.SetNeedResched()
				return true
			}
		}
		return false
	}
	if r.CoreEnabled() && !c.Bug(bugs.CoreFINoTick) && r.coreTickForceIdle(se) {
		r.SetNeedResched()
		return true
	}
	// The fair slice end was found by update_curr above (update_deadline,
	// protect_slice): it set need_resched through resched_curr_lazy.
	return resched
}

// YieldTask is yield_task(): RT moves the donor behind its peers; fair
// is yield_task_fair(): after charging, the donor's deadline moves one
// request later, so that an eligible peer with an earlier deadline runs
// next.
func (r *RQ) YieldTask(c *percpu.Ctx, p *task.Task) {
	r.AssertHeld(c)
	if p.SE.Policy.DL() {
		r.yieldTaskDL(c, p)
		return
	}
	r.seq++
	p.SE.QueueSeq = r.seq
	if !p.SE.Policy.RT() {
		if len(r.fair) <= 1 {
			return
		}
		r.updateCurrFair(c)
		if p == r.cfsCurr {
			p.SE.Deadline += calcDeltaFair(p.SE.Slice, &p.SE)
		}
	}
}

// QueueBalanceCallback is queue_balance_callback().
func (r *RQ) QueueBalanceCallback(c *percpu.Ctx, cb BalanceCallback) {
	r.AssertHeld(c)
	r.balanceCallbacks = append(r.balanceCallbacks, cb)
	r.watchWrite(trace.FieldBalanceCallbacks, int64(len(r.balanceCallbacks)))
}

// BalanceCallbacks returns the number of queued balance callbacks.
func (r *RQ) BalanceCallbacks() int {
	r.watchRead(trace.FieldBalanceCallbacks, int64(len(r.balanceCallbacks)))
	return len(r.balanceCallbacks)
}

// ZapBalanceCallbacks drops callbacks of an abandoned pick
// (zap_balance_callbacks).
func (r *RQ) ZapBalanceCallbacks(c *percpu.Ctx) {
	r.AssertHeld(c)
	for i := range r.balanceCallbacks {
		r.balanceCallbacks[i] = BalanceCallback{}
	}
	if len(r.balanceCallbacks) > 0 {
		r.watchWrite(trace.FieldBalanceCallbacks, 0)
	}
	r.balanceCallbacks = r.balanceCallbacks[:0]
}

// RunBalanceCallbacks runs and clears the queued callbacks.
func (r *RQ) RunBalanceCallbacks(c *percpu.Ctx) {
	for len(r.balanceCallbacks) > 0 {
		cb := r.balanceCallbacks[0]
		r.balanceCallbacks = r.balanceCallbacks[1:]
		r.watchWrite(trace.FieldBalanceCallbacks, int64(len(r.balanceCallbacks)))
		cb.Fn(c, r)
	}
	r.balanceCallbacks = r.balanceCallbacks[:0:0]
}

// lockLess is rq_order_less(): the order in which two rq locks are
// taken: by the runqueue's (core, CPU) key, rq->core->cpu first, whatever
// rq_lockp() is at the time (siblings order by CPU id, which the flip's
// sched_core_lock relies on; the order must not change under a flip).
// --bug core-lock-cpu-order orders by CPU id alone (before the core-id
// rule: AB-BA between {0,3} and {1,2} when cores are {0,2} and {1,3}).
func lockLess(c *percpu.Ctx, a, b *RQ) bool {
	if c.Bug(bugs.CoreLockCPUOrder) {
		return a.CPU < b.CPU
	}
	return a.own.Sub() < b.own.Sub()
}

// DoubleLock is double_rq_lock(): the first in rq_order_less order, then
// the other unless rq_lockp() is the same (SMT siblings under core
// scheduling, or one runqueue twice): the first lock held pins its
// core's pointers, so the compare is stable for siblings.
func DoubleLock(c *percpu.Ctx, a, b *RQ) {
	if lockLess(c, b, a) {
		a, b = b, a
	}
	a.Lock(c)
	if a.lockp() != b.lockp() {
		b.Lock(c)
	}
}

// DoubleUnlock is double_rq_unlock(): the second lock (if distinct) is
// released first, while the first one still pins the pointers the
// compare reads; a shared lock is released once. --bug core-lock-flip
// restores the 2021 posting's order (the first released, then the
// compare made with no lock of a's core held).
func DoubleUnlock(c *percpu.Ctx, a, b *RQ) {
	if c.Bug(bugs.CoreLockFlip) {
		a.Unlock(c)
		if a.lockp() != b.lockp() {
			b.Unlock(c)
		}
		return
	}
	if a.lockp() != b.lockp() {
		b.Unlock(c)
	}
	a.Unlock(c)
}

// DoubleLockBalance is double_lock_balance() (the _double_lock_balance
// "unfair" form): this_rq is held; take busiest too. If busiest's lock
// orders first, this_rq's lock is dropped and both are retaken in order,
// and the return value is true: whatever the caller saw under this_rq's
// lock may have changed and must be checked again.
func DoubleLockBalance(c *percpu.Ctx, thisRQ, busiest *RQ) bool {
	thisRQ.AssertHeld(c)
	if thisRQ.lockp() == busiest.lockp() {
		return false
	}
	if lockLess(c, thisRQ, busiest) {
		busiest.Lock(c)
		return false
	}
	thisRQ.Unlock(c)
	DoubleLock(c, thisRQ, busiest)
	return true
}

// DoubleUnlockBalance is double_unlock_balance(): drop busiest, keep
// this_rq.
func DoubleUnlockBalance(c *percpu.Ctx, thisRQ, busiest *RQ) {
	if thisRQ.lockp() != busiest.lockp() {
		busiest.Unlock(c)
	}
}

// SetTaskCPU is set_task_cpu(): p is MIGRATING (or WAKING) and pinned by
// the caller's locks; the home CPU (wake_cpu) follows unless this is a
// proxy move (proxy_set_task_cpu keeps it).
func SetTaskCPU(c *percpu.Ctx, p *task.Task, cpu int, keepWakeCPU bool, reason trace.MigrateReason) {
	from := p.CPU()
	if from == cpu {
		return
	}
	if !keepWakeCPU {
		// set_task_cpu()'s WARNs (proxy_set_task_cpu has none): a
		// sleeper is moved only while TASK_WAKING; a queued fair
		// TASK_RUNNING task only while MIGRATING.
		st, on := p.State(), p.OnRQ()
		if st != task.Running && st != task.Waking && on == task.OnRQNone {
			c.Warn(check.InvQueuedHere, p.ID, p.String(), "set_task_cpu: %v (%v, on_rq 0) moved to cpu%d while asleep", p, st, cpu)
		}
		if st == task.Running && !p.SE.Policy.RT() && !p.SE.Policy.DL() && on == task.OnRQQueued {
			c.Warn(check.InvQueuedHere, p.ID, p.String(), "set_task_cpu: running fair %v moved to cpu%d while queued, not MIGRATING", p, cpu)
		}
		if c.CPUOnline != nil && !c.CPUOnline(cpu) {
			c.Warn(check.InvOffline, p.ID, p.String(), "set_task_cpu: %v moved to offline cpu%d", p, cpu)
		}
		// Proxy execution moves a blocked task's scheduling context
		// without its migrate-disabled execution context; the wake-up
		// path returns it (the reference's exemption).
		if p.MigrationDisabled > 0 && !(c.Proxy && p.IsBlocked() && from != p.WakeCPU) {
			c.Warn(check.InvMigrateDisabled, p.ID, p.String(), "set_task_cpu: migrate-disabled %v (depth %d) moved cpu%d->cpu%d", p, p.MigrationDisabled, from, cpu)
		}
	}
	p.SetCPU(cpu)
	if !keepWakeCPU {
		p.SetWakeCPU(cpu)
	}
	c.Inc(stats.Migrations)
	stats.Bump(&c.Stats.MigrateBy[reason], 1)
	c.Emit(trace.EvMigrate, int32(p.ID), int32(from), int32(cpu), int32(reason))
}

// Stats returns the class queue lengths (reports).
func (r *RQ) Stats() (nrRT, nrFair int) { return len(r.rt), len(r.fair) }

// NrDLQueued returns the length of the dl tree (reports, audits).
func (r *RQ) NrDLQueued() int { return len(r.dl) }

// PeekDonor returns rq->donor without the lock: only for audits and
// reports with every CPU parked.
func (r *RQ) PeekDonor() *task.Task { return r.donor }

// PeekExecStart returns when curr/donor were last charged (audits).
func (r *RQ) PeekExecStart() int64 { return r.execStart }

// OverloadMask is a cpumask of RT-overloaded runqueues (the root domain's
// rto_mask). A runqueue's bit is set and cleared under its rq lock with
// atomic bit operations (cpumask_set_cpu, cpumask_clear_cpu) and read
// without a lock, as pull_rt_task does.
type OverloadMask []atomic.Uint64

// NewOverloadMask returns an empty mask for n CPUs.
func NewOverloadMask(n int) OverloadMask { return make(OverloadMask, (n+63)/64) }

func (m OverloadMask) set(cpu int) {
	if m != nil {
		m[cpu/64].Or(1 << (cpu % 64))
	}
}

func (m OverloadMask) clear(cpu int) {
	if m != nil {
		m[cpu/64].And(^uint64(1 << (cpu % 64)))
	}
}

// ForEach calls fn for every CPU in the mask below n, in order from start
// and wrapping round, until fn returns false. Each word is read once
// (READ_ONCE), so a bit that changes during the walk may or may not be
// seen, as with for_each_cpu on a live mask.
func (m OverloadMask) ForEach(start, n int, fn func(cpu int) bool) {
	if n <= 0 {
		return
	}
	for i := 0; i < n; {
		cpu := (start + i) % n
		w := m[cpu/64].Load() >> (cpu % 64)
		span := min(64-cpu%64, n-cpu) // bits of this word from cpu on, before the wrap
		for w != 0 {
			b := bits.TrailingZeros64(w)
			if b >= span || i+b >= n {
				break
			}
			if !fn(cpu + b) {
				return
			}
			w &^= 1 << b
		}
		i += span
	}
}

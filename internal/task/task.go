package task

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/trace"
)

// State is __state.
type State int32

// Task states. WAKING is owned by try_to_wake_up: the task is off every
// runqueue and only the waker, holding p.PiLock, may move it on.
const (
	Running State = iota
	Interruptible
	Uninterruptible
	Waking
	Dead
	// Killable is TASK_KILLABLE (TASK_WAKEKILL | TASK_UNINTERRUPTIBLE):
	// woken by what wakes UNINTERRUPTIBLE sleepers and by fatal signals.
	Killable
	// NewTask is TASK_NEW: forked (sched_fork) and visible, not yet woken by
	// wake_up_new_task; no wake-up matches it.
	NewTask
)

var stateNames = [...]string{"RUNNING", "INTERRUPTIBLE", "UNINTERRUPTIBLE", "WAKING", "DEAD", "KILLABLE", "NEW"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", int32(s))
}

// Matches reports whether s is one of the states a wakeup with the given
// mask wakes (ttwu_state_match).
func (s State) Matches(mask StateMask) bool {
	switch s {
	case Interruptible:
		return mask&WakeInterruptible != 0
	case Uninterruptible:
		return mask&WakeUninterruptible != 0
	case Killable:
		return mask&(WakeUninterruptible|WakeKill) != 0
	}
	return false
}

// IsSpecialTaskState is is_special_task_state(): the states that do not
// use the normal wait-loop pattern, which block_task dequeues with
// DEQUEUE_SPECIAL (never delayed). The kernel's set is __TASK_STOPPED,
// __TASK_TRACED, TASK_PARKED, TASK_DEAD, TASK_WAKING and TASK_FROZEN
// (include/linux/sched.h); of those the model has TASK_DEAD and
// TASK_WAKING. TASK_WAKING makes proxy_needs_return's
// block_task(rq, p, TASK_WAKING) a special dequeue.
func IsSpecialTaskState(s State) bool { return s == Dead || s == Waking }

// Uninterruptible reports whether s has TASK_UNINTERRUPTIBLE set
// (UNINTERRUPTIBLE or KILLABLE): such a sleep counts in nr_uninterruptible.
func (s State) Uninterruptible() bool { return s == Uninterruptible || s == Killable }

// StateMask selects which sleep states a wakeup wakes (TASK_NORMAL etc.).
type StateMask uint8

const (
	WakeInterruptible   StateMask = 1
	WakeUninterruptible StateMask = 2
	WakeKill            StateMask = 4 // TASK_WAKEKILL: a fatal signal's wake-up
	WakeNormal                    = WakeInterruptible | WakeUninterruptible
)

// on_rq values.
const (
	OnRQNone      int32 = 0
	OnRQQueued    int32 = 1
	OnRQMigrating int32 = 2
)

// Policy is the scheduling policy.
type Policy uint8

const (
	Normal     Policy = iota // SCHED_NORMAL (fair)
	FIFO                     // SCHED_FIFO
	RR                       // SCHED_RR
	IdlePolicy               // the per-CPU idle task
	Deadline                 // SCHED_DEADLINE (EDF + CBS)
)

var policyNames = [...]string{"normal", "fifo", "rr", "idle", "deadline"}

func (p Policy) String() string { return policyNames[p] }

// RT reports whether the policy is a real-time one (FIFO or RR; not
// DEADLINE, which is its own class above RT).
func (p Policy) RT() bool { return p == FIFO || p == RR }

// DL reports whether the policy is SCHED_DEADLINE (dl_policy).
func (p Policy) DL() bool { return p == Deadline }

// Fair reports the fair class's policies (SCHED_NORMAL and friends): not
// RT, not deadline, not the idle task's.
func (p Policy) Fair() bool { return !p.RT() && !p.DL() && p != IdlePolicy }

// Kernel priority values.
const (
	DLPrio      = -1 // MAX_DL_PRIO - 1: every SCHED_DEADLINE task
	MaxRTPrio   = 100
	DefaultPrio = 120 // nice 0
	IdlePrio    = 140
)

// Weights is sched_prio_to_weight[]: the load weight of nice -20..19.
var Weights = [40]int64{
	88761, 71755, 56483, 46273, 36291,
	29154, 23254, 18705, 14949, 11916,
	9548, 7620, 6100, 4904, 3906,
	3121, 2501, 1991, 1586, 1277,
	1024, 820, 655, 526, 423,
	335, 272, 215, 172, 137,
	110, 87, 70, 56, 45,
	36, 29, 23, 18, 15,
}

// NiceWeight returns the load weight for a nice value.
func NiceWeight(nice int) int64 { return Weights[nice+20] }

// Lock is what blocked_on points at: a kernel mutex. It is declared here
// and satisfied by internal/mutex, which keeps the import graph acyclic.
type Lock interface {
	// WaitLock returns the mutex's wait_lock.
	WaitLock() *spinlock.Lock
	// OwnerTask reads the owner word without a lock (__mutex_owner).
	OwnerTask() *Task
	// ID is the mutex's index in the machine.
	ID() int
	String() string
}

// SchedEntity is the class state of a task (sched_entity / sched_rt_entity).
// Protected by the rq lock of task_cpu(p).
type SchedEntity struct {
	Policy     Policy
	Prio       int   // effective kernel prio: 0..99 RT (lower is higher), 100..139 fair
	Nice       int   // -20..19, fair only
	RTPriority int   // 1..99, RT only
	Weight     int64 // load weight, fair only

	Vruntime int64 // fair virtual runtime
	Vlag     int64 // EEVDF virtual lag V - v saved at dequeue (update_entity_lag), applied by place_entity
	Slice    int64 // fair: the request size r_i (se->slice)
	// TimeSlice is p->rt.time_slice, in virtual ns: what is left of a
	// SCHED_RR quantum. sched_fork sets it; only task_tick_rt changes it,
	// a tick's worth at each tick the task is the donor, so it survives
	// sleeps, migrations and policy changes as the kernel's does. rq lock.
	TimeSlice int64
	Deadline  int64 // EEVDF virtual deadline vd_i = ve_i + r_i/w_i (fair)
	Vprot     int64 // se->vprot: the vruntime up to which the running entity is protected (RUN_TO_PARITY)
	// RelDeadline is se->rel_deadline: a non-sleep dequeue kept the
	// deadline relative to vruntime (PLACE_REL_DEADLINE).
	RelDeadline bool
	// Delayed is se->sched_delayed: the task went to sleep while not
	// eligible and stays queued (DELAY_DEQUEUE) until picked or woken.
	// Written under the rq lock; lockless readers use Task.SchedDelayed.
	Delayed bool
	// TreeSeq orders insertions into the EEVDF tree (__enqueue_entity):
	// among equal deadlines the earlier-inserted entity is leftmost.
	TreeSeq  uint64
	QueueSeq uint64 // enqueue order within the class queue (FIFO order)
	Queued   bool   // in a class queue (mirrors on_rq for the class's bookkeeping)
	QueueCPU int    // whose class queue

	ExecStart      int64 // rq clock when it last started executing or being charged
	SumExecRuntime int64 // time spent executing (charged to the execution context)
	DonatedRuntime int64 // class time charged while another task executed for it (proxy)
	PrevSumExec    int64 // SumExecRuntime at the start of the current slice
	// Runnable is the clock (of the CPU that did it) when the task last
	// started waiting to run: enqueued, or switched out while queued.
	Runnable int64
	// RunnableHi is its runqueue's HiClassTime at that moment (the
	// progress invariant does not count the time the CPU then spent on
	// RT or deadline donors, which outrank any waiter's claim to run).
	// Protected by the rq lock.
	RunnableHi int64

	// DL is sched_dl_entity (SCHED_DEADLINE only; see internal/rq/dl.go).
	DL DLEntity
}

// DLParams are a SCHED_DEADLINE task's sched_attr: runtime <= deadline <=
// period, in ns.
type DLParams struct {
	Runtime  int64
	Deadline int64
	Period   int64
}

// DLEntity is struct sched_dl_entity. Protected by the rq lock of
// task_cpu(p), as the rest of SchedEntity.
type DLEntity struct {
	DLParams       // dl_runtime, dl_deadline, dl_period
	BW       int64 // dl_bw: to_ratio(dl_period, dl_runtime)
	Density  int64 // dl_density: to_ratio(dl_deadline, dl_runtime)
	Runtime  int64 // runtime: what is left of this instance's budget
	Deadline int64 // deadline: the absolute deadline (rq clock)
	// Throttled is dl_throttled: the budget is exhausted; the entity is
	// off the dl tree (the task stays on_rq) until the dl_timer
	// replenishes it.
	Throttled bool
	// OnDLRQ is on_dl_rq(): in the runqueue's dl tree (counted in
	// nr_running). A throttled task is queued (on_rq) but not here.
	OnDLRQ bool
	// TimerQueued is hrtimer_is_queued(&dl_timer): a replenishment timer
	// is armed for this task; TimerCPU and TimerID name it on its CPU's
	// timer list (the kernel has one hrtimer per task, re-armed in place;
	// the model's list entries are told apart by id, so that an entry
	// left behind by a policy change is ignored when it fires).
	TimerQueued bool
	TimerCPU    int
	TimerID     uint64
	Yielded     bool // dl_yielded: sched_yield throttles until the next period
}

// BWShift is BW_SHIFT: bandwidths are fixed-point fractions of 2^20.
const BWShift = 20

// ToRatio is to_ratio(period, runtime): runtime/period as a BW_SHIFT
// fixed-point fraction.
func ToRatio(period, runtime int64) int64 {
	if period == 0 {
		return 0
	}
	return (runtime << BWShift) / period
}

// Task is struct task_struct.
type Task struct {
	ID    int    // 1-based; 0 means "no task" in mutex owner words
	Name  string // comm
	Group int    // index of its task group in the workload
	Idle  bool   // the per-CPU idle task

	// Accessed without lock (READ_ONCE/WRITE_ONCE in the kernel).
	state atomic.Int32 // __state: set by the task itself, or by ttwu under PiLock
	onRQ  atomic.Int32 // on_rq: written under the rq lock of task_cpu
	onCPU atomic.Int32 // on_cpu: 1 from switch-in until switch-out has finished
	cpu   atomic.Int32 // task_cpu: written under the rq lock (and PiLock on wake)
	// needResched is TIF_NEED_RESCHED in the task's thread_info flags:
	// set on rq->curr by resched_curr and on rq->idle by
	// proxy_resched_idle's set_tsk_need_resched, both under the task's
	// rq lock; cleared for prev by __schedule (clear_tsk_need_resched,
	// rq lock held); tested without a lock by the task itself
	// (need_resched()) and by other CPUs (test_tsk_need_resched(rq->curr)).
	// Atomic bit operations on thread_info->flags in the kernel. The flag
	// belongs to the task, not the CPU: a flag left set on a task that
	// is switched out (the idle task after proxy_resched_idle, a prev
	// that left through keep_resched) is still set when it next runs.
	needResched atomic.Bool

	// PiLock serialises wakeups of this task.
	PiLock spinlock.Lock
	// WakeCPU is the home CPU for wakeups and return migration. Guarded
	// like task_cpu: PiLock while the task is off every runqueue (ttwu),
	// the rq lock while it is queued (set_task_cpu in a migration).
	// Proxy migration moves cpu but keeps WakeCPU.
	WakeCPU int
	// CoreCookie is p->core_cookie (core scheduling, 5.14 prctl
	// PR_SCHED_CORE): 0 untagged. Written under task_rq_lock (PiLock and
	// the rq lock of task_cpu, sched_core_update_cookie); read under the
	// rq lock by the core-wide pick (siblings share that lock).
	CoreCookie uint64
	// CoreOccupation is p->core_occupation: busy siblings when the core
	// pick chose p. Written and read under the core lock.
	CoreOccupation int
	// CoreNode is p->core_node, the task's link in rq->core_tree of the
	// runqueue it is queued on (internal/rq/coretree.go). Guarded by
	// that runqueue's lock (with core scheduling on, the core's lock).
	CoreNode CoreNode
	// CPUsMask is the affinity of the execution context. Written with
	// PiLock and the rq lock held; read under either.
	CPUsMask      Mask
	NrCPUsAllowed int
	// maskOnce mirrors CPUsMask for lockless readers (PublishMask).
	maskOnce atomic.Pointer[Mask]
	// SRQ is p->shared_runq_node (SHARED_RUNQ): the shard it is linked on.
	SRQ            SRQNode
	MigrationReady bool // protected by the rq lock: affinity moved away from a running task; move it when it switches out
	// MigrationDest is affine_move_task's pending->arg.dest_cpu: where
	// the stopper moves the task (or points its wake_cpu, if it is no
	// longer queued by then). Set under pi_lock by every affinity change
	// (a later one updates a pending move, as the kernel's does).
	MigrationDest int
	// StopFailed (rq lock): the stopper could not move the task off a CPU
	// its mask no longer allows, because the destination went inactive
	// meanwhile (migration_cpu_stop's "XXX __migrate_task() can fail ...
	// we might end up running on a dodgy CPU ... only during CPU
	// hotplug"). The kernel tolerates it until the task's next placement;
	// so do the affinity checks. Cleared when it next runs on an allowed
	// CPU.
	StopFailed bool
	// MigrationDisabled is p->migration_disabled, the migrate_disable()
	// nesting depth. Written by the task itself while it runs (the kernel
	// does so with preemption off); read by its own CPU, or by others only
	// while the task is off every CPU (after on_cpu's release), as
	// is_migration_disabled() callers do.
	MigrationDisabled int
	// PinnedCPU is p->cpus_ptr when it is not &p->cpus_mask: the CPU a
	// migrate-disabled task was switched out on (migrate_disable_switch,
	// under that rq lock), -1 otherwise. Cleared by migrate_enable's
	// __set_cpus_allowed_ptr (pi_lock and rq lock).
	PinnedCPU int
	// ContributesToLoad is sched_contributes_to_load: set by block_task
	// from the state the task sleeps in (TASK_UNINTERRUPTIBLE counts in
	// its rq's nr_uninterruptible); the activation that wakes it takes
	// the count back on its own rq. Written under the rq lock of the rq
	// it blocks on; read by its waker, which owns the sleeping task.
	ContributesToLoad bool

	// SE is protected by the rq lock of task_cpu(p).
	SE SchedEntity

	// schedDelayed mirrors SE.Delayed for lockless readers
	// (find_proxy_task's owner->se.sched_delayed test, which runs without
	// the owner's rq lock); written with SE.Delayed under the rq lock.
	schedDelayed atomic.Bool

	// BlockedLock guards the proxy-execution fields below.
	BlockedLock spinlock.Lock
	blockedOn   Lock // blocked_on: protected by BlockedLock (see blocked.go for the writers)
	// blockedOnOnce mirrors blocked_on != nil for task_is_blocked(), which
	// reads it without a lock (finding F5's fix: READ_ONCE/WRITE_ONCE).
	// Stored with blockedOn, under BlockedLock.
	blockedOnOnce atomic.Bool
	// isBlocked is is_blocked: written with the rq lock of task_cpu(p)
	// held (try_to_block_task, ttwu_do_wakeup, find_proxy_task); read
	// under that rq lock or by p itself. isBlockedOnce mirrors it for
	// do_activate_blocked_waiter, which reads it under p's pi_lock alone
	// (READ_ONCE: finding F4's fix; the kernel reads the plain field).
	// isBlocked is 0 or 1 in a word of its own: the race detector keeps
	// a few accesses per 8-byte word, and neighbours could push the
	// record of a racing access out of it.
	isBlocked     int64
	isBlockedOnce atomic.Bool
	// blockedDonor is who donates to us right now. Written with the rq
	// lock of task_cpu(p) held by __schedule and find_proxy_task while p
	// is queued there, and cleared by p itself in mutex unlock while it
	// runs; read by that unlock without a lock. The kernel's argument
	// (mutex.c: preemption is off in the unlock, and only the CPU p runs
	// on writes the field) is what keeps this a plain field: the race
	// detector checks it.
	blockedDonor *Task
	// UnblockedAt is the clock of the CPU that last cleared blocked_on.
	// Protected by BlockedLock.
	UnblockedAt int64
	// BlockedHead lists the donors parked on this task while it sleeps
	// holding a lock (proxy_enqueue_on_owner). Protected by this task's
	// BlockedLock.
	BlockedHead []*Task
	// SleepingOwner is the owner on whose BlockedHead this task is parked,
	// or nil. Written under that owner's BlockedLock; read without lock by
	// the waker of this task to find the list to lock.
	SleepingOwner atomic.Pointer[Task]
	// OnActivationList: this task is on an activate_blocked_waiters work
	// list. Protected by BlockedLock.
	OnActivationList bool
	// BatchSeq numbers the batches detached from this task's BlockedHead.
	// Protected by BlockedLock.
	BatchSeq uint64
	// ParkedBatch is the batch (of its SleepingOwner's list) this waiter
	// sits in, 0 while on the live list: the slice form of the kernel's
	// intrusive blocked_node, which stays linked in a detached batch until
	// it is activated or unlinks itself. Protected by the BlockedLock of
	// SleepingOwner.
	ParkedBatch uint64

	// WakeEntry links the task on a CPU's wake list (llist). Written by the
	// waker holding PiLock, consumed by the target CPU.
	WakeEntry atomic.Pointer[Task]
	// WakeTime is the waker's clock at the last full wakeup. Written under
	// PiLock while off-queue; read by the CPU that switches the task in.
	WakeTime int64

	// CompLock guards CompDone: a struct completion's wait.lock and done
	// counter (wait_for_completion / complete), used by the wait and wake
	// instructions so that a wake before the wait is not lost.
	CompLock spinlock.Lock
	CompDone int
	// CompAt holds the waker's clock at each complete() not yet consumed,
	// oldest first (at most MaxCompAt; later ones are not timed): the
	// start of a request for the request latency of the wait instruction.
	CompAt []int64

	// SigLock is sighand->siglock: it guards the pending set (sigUsr,
	// sigKill's writes) and is held by the sender across the wake-up
	// (signal_wake_up_state), so it ranks outside pi_lock.
	SigLock spinlock.Lock
	// sigPending is TIF_SIGPENDING: set by the sender under SigLock
	// (set_tsk_thread_flag, an atomic bitop), cleared by the task itself
	// under SigLock when it dequeues the signals (recalc_sigpending); read
	// without a lock by the task (signal_pending).
	sigPending atomic.Bool
	// sigKill is SIGKILL in the pending set: written under SigLock, read
	// without a lock by __fatal_signal_pending (a racy read of the set in
	// the kernel, so an atomic here).
	sigKill atomic.Bool
	// sigUsr is a pending non-fatal signal (one with a handler). Protected
	// by SigLock.
	sigUsr bool

	// usage is tsk->usage (refcount_t, get_task_struct/put_task_struct):
	// the task's own reference from fork, dropped at its last switch-out
	// after do_exit (finish_task_switch), plus one per holder (a wake_q
	// entry). freed is set when it drops to zero: the task struct is
	// gone, and any later use is a use-after-free (invariant 53).
	usage atomic.Int32
	freed atomic.Bool
	// released is set at the dead task's last switch-out, when its own
	// reference is handed to call_rcu (put_task_struct_rcu_user): from
	// then on a pid lookup no longer finds it, while the struct itself
	// stays valid until the grace period ends (the epoch barrier).
	released atomic.Bool

	// Exec is the task's own execution state: touched only by the CPU that
	// runs the task.
	Exec ExecState

	// Wait is the task's wait queue entry (OpSys waits); its fields say
	// which lock guards them.
	Wait WaitEntry

	// Stats is written only by the CPU running the task (or its waker,
	// under PiLock); read after the run stops.
	Stats TaskStats

	// Watch, when an explanation replay runs, records the reads and
	// writes of the task's protocol state (trace.Watch); nil otherwise.
	// Set before the task first runs, read-only after.
	Watch *trace.Watch
}

// TaskStats holds per-task latency statistics.
type TaskStats struct {
	MutexWait   stats.Hist // slow-path acquisitions: time from the failed fast path (contention_begin: spin, then wait list) to acquisition (contention_end)
	WakeLatency stats.Hist // time from a full wakeup to first running
	Acquires    uint64
	Contended   uint64
	Wakeups     uint64
	Switches    uint64
	// ForceidleSum is p->stats.core_forceidle_sum: forced-idle ns of its
	// core charged to it while it ran there (__sched_core_account_forceidle,
	// under the core lock of the core it runs on).
	ForceidleSum int64
	// Requests counts completions consumed by the wait instruction;
	// ReqLatency is, per consumed completion, the time from its
	// complete() to the task's next wait (or exit): how long the request
	// it stood for took to serve. ExitAt is the clock at do_exit (0: the
	// task has not exited). Benchmarks' figures of merit come from these.
	Requests   uint64
	ReqLatency stats.Hist
	ExitAt     int64
	// UserWake is the wake-up latency a benchmark measures itself, in
	// user space (schbench: from the waker's timestamp before its
	// FUTEX_WAKE to the sleeper's after FUTEX_WAIT returns).
	UserWake stats.Hist
	// MutexMarks log the task's slow-path acquisitions and its releases
	// of the mutexes a scenario traces (a chain's head and end: the
	// unwinding is measured from them), up to MaxMutexMarks.
	MutexMarks []MutexMark
}

// MaxMutexMarks bounds TaskStats.MutexMarks.
const MaxMutexMarks = 1 << 16

// MutexMark is one acquisition (Start: when its wait began) or release
// (Start < 0) of a traced mutex, at virtual time At.
type MutexMark struct {
	Mutex     int32
	Start, At int64
}

// MarkMutex logs an acquisition (start >= 0) or a release (start < 0) of
// traced mutex id at time at.
func (s *TaskStats) MarkMutex(id int, start, at int64) {
	if len(s.MutexMarks) < MaxMutexMarks {
		s.MutexMarks = append(s.MutexMarks, MutexMark{int32(id), start, at})
	}
}

// MaxCompAt bounds Task.CompAt.
const MaxCompAt = 4096

// ExecState is the program counter and friends of a task's program.
type ExecState struct {
	Prog      *Program
	PC        int
	Loops     []int // per-op loop counters
	Left      int64 // compute time left in the current op
	Phase     int   // sub-step of a multi-step op (mutex slow path)
	WaitStart int64 // when the current mutex wait began
	Held      []int // mutexes held, innermost last
	Rand      *rand.Rand
	Exited    bool
	Killed    bool   // it exited handling SIGKILL (do_group_exit), not by its program's exit
	TimerCPU  int    // CPU whose timer list holds our sleep timer, -1 if none
	TimerID   uint64 // that timer's id
	ReqStart  int64  // when the request being served began (its complete()); 0: none
	SpinTurns int64  // turns of the current optimistic spin
	Reaped    bool   // the last switch-out after exit dropped the task's own reference
	// WW is the open ww_acquire_ctx (ww_acquire_init .. _fini), or nil.
	WW *WWCtx
	// Sys is the state of the system call the program is in (OpSys).
	Sys SysState
}

// RRTimeslice is sched_rr_timeslice (RR_TIMESLICE, 100 ms) in virtual ns.
const RRTimeslice = 100_000_000

// New returns a task with the given id and name, fair at nice 0, allowed
// on all of ncpu CPUs, and placed on cpu.
func New(id int, name string, ncpu, cpu int) *Task {
	p := &Task{ID: id, Name: name}
	p.PiLock.Init(spinlock.ClassPiLock, id)
	p.BlockedLock.Init(spinlock.ClassBlockedLock, id)
	p.CompLock.Init(spinlock.ClassOther, id)
	p.SigLock.Init(spinlock.ClassSigLock, id)
	p.CPUsMask = MaskAll(ncpu)
	p.NrCPUsAllowed = ncpu
	p.PublishMask()
	p.SetNice(0)
	p.SE.TimeSlice = RRTimeslice // sched_fork
	p.cpu.Store(int32(cpu))
	p.WakeCPU = cpu
	p.SE.QueueCPU = -1
	p.Exec.TimerCPU = -1
	p.Exec.Sys.Slot = -1
	p.PinnedCPU = -1
	p.usage.Store(1)
	return p
}

// AllowedOn is cpumask_test_cpu(cpu, p->cpus_ptr): the pinned CPU of a
// migrate-disabled task that was switched out, else its mask.
func (p *Task) AllowedOn(cpu int) bool {
	if p.PinnedCPU >= 0 {
		return cpu == p.PinnedCPU
	}
	return p.CPUsMask.Has(cpu)
}

// GetTaskStruct is get_task_struct(p).
func (p *Task) GetTaskStruct() { p.usage.Add(1) }

// TryGetTaskStruct is refcount_inc_not_zero(&p->usage): a reference,
// unless the last one is gone (a pid lookup that finds the task released:
// kill(2) gets ESRCH).
func (p *Task) TryGetTaskStruct() bool {
	if p.released.Load() {
		return false
	}
	for {
		n := p.usage.Load()
		if n <= 0 {
			return false
		}
		if p.usage.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// PutTaskStruct is put_task_struct(p); it reports whether that was the
// last reference (the task struct is freed).
func (p *Task) PutTaskStruct() bool {
	if p.usage.Add(-1) == 0 {
		p.freed.Store(true)
		return true
	}
	return false
}

// PutTaskStructRCUUser is the first half of put_task_struct_rcu_user(p)
// for a dead task at its last switch-out: the task is released (pid
// lookups fail) and its own reference is to be dropped by the RCU
// callback (delayed_put_task_struct), which the caller queues; the
// callback calls PutTaskStruct.
func (p *Task) PutTaskStructRCUUser() { p.released.Store(true) }

// Freed reports whether p's last reference was dropped.
func (p *Task) Freed() bool { return p.freed.Load() }

// Refs is refcount_read(&p->usage).
func (p *Task) Refs() int32 { return p.usage.Load() }

// SetNice makes the task fair at the given nice value. The caller holds
// the rq lock or owns the task before it is visible to the machine.
func (p *Task) SetNice(nice int) {
	p.SE.Policy = Normal
	p.SE.Nice = nice
	p.SE.Prio = DefaultPrio + nice
	p.SE.Weight = NiceWeight(nice)
	p.SE.RTPriority = 0
}

// SetRT makes the task real-time with rtprio 1..99.
func (p *Task) SetRT(policy Policy, rtprio int) {
	p.SE.Policy = policy
	p.SE.RTPriority = rtprio
	p.SE.Prio = MaxRTPrio - 1 - rtprio
	p.SE.Weight = NiceWeight(0)
}

// SetDL makes the task SCHED_DEADLINE with the given parameters
// (__setparam_dl): the static values only; the first enqueue under the
// new policy sets the runtime and the absolute deadline. A zero period
// means the deadline. The caller holds the rq lock or owns the task.
func (p *Task) SetDL(a DLParams) {
	if a.Period == 0 {
		a.Period = a.Deadline
	}
	p.SE.Policy = Deadline
	p.SE.Prio = DLPrio
	p.SE.RTPriority = 0
	p.SE.Weight = NiceWeight(0)
	dl := &p.SE.DL
	dl.DLParams = a
	dl.BW = ToRatio(a.Period, a.Runtime)
	dl.Density = ToRatio(a.Deadline, a.Runtime)
	dl.Yielded = false
}

// DLTask is dl_task(p): the task's policy is SCHED_DEADLINE.
func (p *Task) DLTask() bool { return p.SE.Policy.DL() }

// CheckDLParams is __checkparam_dl without the sysctl period bounds'
// defaults changed: deadline != 0, runtime >= 1024 ns (DL_SCALE),
// runtime <= deadline <= period, period within 100 us .. ~4.2 s. It
// returns what is wrong, or "".
func CheckDLParams(a DLParams) string {
	period := a.Period
	if period == 0 {
		period = a.Deadline
	}
	switch {
	case a.Deadline == 0:
		return "deadline must not be 0"
	case a.Runtime < 1<<10:
		return fmt.Sprintf("runtime %d ns below 1024 ns (DL_SCALE)", a.Runtime)
	case a.Deadline < a.Runtime:
		return fmt.Sprintf("deadline %d ns below runtime %d ns", a.Deadline, a.Runtime)
	case period < a.Deadline:
		return fmt.Sprintf("period %d ns below deadline %d ns", period, a.Deadline)
	case period < 100_000 || period > (1<<22)*1000:
		return fmt.Sprintf("period %d ns outside 100us..%dus (sched_deadline_period_min/max_us)", period, 1<<22)
	}
	return ""
}

func (p *Task) String() string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s/%d", p.Name, p.ID)
}

// WatchRead and WatchWrite record a read or a write of field f of p, of
// value v, for an explanation replay (trace.Watch); nothing when no watch
// runs. Code that touches a watched field directly (a list) calls them
// itself. The accessors below test p.Watch first and call out of line
// only when a watch runs (watched*), so that they stay small enough for
// the compiler to inline on the hot path.
//
//go:noinline
func (p *Task) WatchRead(f trace.Field, v int64) {
	if p.Watch != nil {
		p.Watch.Read(trace.ObjTask, int32(p.ID), f, v)
	}
}

// WatchWrite: see WatchRead.
//
//go:noinline
func (p *Task) WatchWrite(f trace.Field, v int64) {
	if p.Watch != nil {
		p.Watch.Write(trace.ObjTask, int32(p.ID), f, v)
	}
}

// WatchID is p's value in a watched pointer field: its id, 0 for nil.
func WatchID(p *Task) int64 {
	if p == nil {
		return 0
	}
	return int64(p.ID)
}

// State returns __state (READ_ONCE).
func (p *Task) State() State {
	if p.Watch != nil {
		return p.watchedState()
	}
	return State(p.state.Load())
}

//go:noinline
func (p *Task) watchedState() State {
	s := State(p.state.Load())
	p.WatchRead(trace.FieldState, int64(s))
	return s
}

// SetState sets __state (WRITE_ONCE / set_current_state).
func (p *Task) SetState(s State) {
	p.state.Store(int32(s))
	if p.Watch != nil {
		p.WatchWrite(trace.FieldState, int64(s))
	}
}

// OnRQ returns on_rq (READ_ONCE).
func (p *Task) OnRQ() int32 {
	if p.Watch != nil {
		return p.watchedOnRQ()
	}
	return p.onRQ.Load()
}

//go:noinline
func (p *Task) watchedOnRQ() int32 {
	v := p.onRQ.Load()
	p.WatchRead(trace.FieldOnRQ, int64(v))
	return v
}

// SetOnRQ sets on_rq; the caller holds the rq lock of task_cpu(p).
func (p *Task) SetOnRQ(v int32) {
	p.onRQ.Store(v)
	if p.Watch != nil {
		p.WatchWrite(trace.FieldOnRQ, int64(v))
	}
}

// Queued is task_on_rq_queued.
func (p *Task) Queued() bool { return p.OnRQ() == OnRQQueued }

// Migrating is task_on_rq_migrating.
func (p *Task) Migrating() bool { return p.OnRQ() == OnRQMigrating }

// OnCPU returns on_cpu (smp_load_acquire).
func (p *Task) OnCPU() bool {
	if p.Watch != nil {
		return p.watchedOnCPU()
	}
	return p.onCPU.Load() != 0
}

//go:noinline
func (p *Task) watchedOnCPU() bool {
	v := p.onCPU.Load()
	p.WatchRead(trace.FieldOnCPU, int64(v))
	return v != 0
}

// SetOnCPU sets on_cpu (smp_store_release when clearing).
func (p *Task) SetOnCPU(on bool) {
	if p.Watch != nil {
		p.watchedSetOnCPU(on)
		return
	}
	if on {
		p.onCPU.Store(1)
	} else {
		p.onCPU.Store(0)
	}
}

//go:noinline
func (p *Task) watchedSetOnCPU(on bool) {
	v := int32(0)
	if on {
		v = 1
	}
	p.onCPU.Store(v)
	p.WatchWrite(trace.FieldOnCPU, int64(v))
}

// TestTskNeedResched is test_tsk_need_resched(p); need_resched() is
// this on current.
func (p *Task) TestTskNeedResched() bool {
	if p.Watch != nil {
		return p.watchedNeedResched()
	}
	return p.needResched.Load()
}

//go:noinline
func (p *Task) watchedNeedResched() bool {
	v := p.needResched.Load()
	p.WatchRead(trace.FieldNeedResched, b2i(v))
	return v
}

// SetTskNeedResched is set_tsk_need_resched(p).
func (p *Task) SetTskNeedResched() {
	p.needResched.Store(true)
	if p.Watch != nil {
		p.WatchWrite(trace.FieldNeedResched, 1)
	}
}

// TestAndSetTskNeedResched sets TIF_NEED_RESCHED and reports whether it
// was set already (__resched_curr's test, then set, under the rq lock).
func (p *Task) TestAndSetTskNeedResched() bool {
	old := p.needResched.Swap(true)
	if p.Watch != nil && !old {
		p.WatchWrite(trace.FieldNeedResched, 1)
	}
	return old
}

// ClearTskNeedResched is clear_tsk_need_resched(p).
func (p *Task) ClearTskNeedResched() {
	if p.Watch != nil && p.needResched.Load() {
		p.WatchWrite(trace.FieldNeedResched, 0)
	}
	p.needResched.Store(false)
}

// CPU is task_cpu(p).
func (p *Task) CPU() int {
	if p.Watch != nil {
		return p.watchedCPU()
	}
	return int(p.cpu.Load())
}

//go:noinline
func (p *Task) watchedCPU() int {
	v := int(p.cpu.Load())
	p.WatchRead(trace.FieldCPU, int64(v))
	return v
}

// SetCPU is __set_task_cpu without the wake_cpu update. The caller holds
// the locks that pin the task (rq lock while MIGRATING, or PiLock while
// WAKING).
func (p *Task) SetCPU(cpu int) {
	p.cpu.Store(int32(cpu))
	if p.Watch != nil {
		p.WatchWrite(trace.FieldCPU, int64(cpu))
	}
}

// WakeCPUOf reads p->wake_cpu (see WakeCPU for its locking).
func (p *Task) WakeCPUOf() int {
	if p.Watch != nil {
		p.WatchRead(trace.FieldWakeCPU, int64(p.WakeCPU))
	}
	return p.WakeCPU
}

// SetWakeCPU writes p->wake_cpu (see WakeCPU for its locking).
func (p *Task) SetWakeCPU(cpu int) {
	p.WakeCPU = cpu
	if p.Watch != nil {
		p.WatchWrite(trace.FieldWakeCPU, int64(cpu))
	}
}

// ReadSleepingOwner reads p->sleeping_owner without a lock
// (data_race(READ_ONCE)).
func (p *Task) ReadSleepingOwner() *Task {
	o := p.SleepingOwner.Load()
	p.WatchRead(trace.FieldSleepingOwner, WatchID(o))
	return o
}

// RT reports whether the task's effective policy is real-time. Caller
// holds the rq lock (or owns the task).
func (p *Task) RT() bool { return p.SE.Policy.RT() }

// BlockedOn returns blocked_on; p.BlockedLock must be held by c.
func (p *Task) BlockedOn(c *spinlock.CPU) Lock {
	p.BlockedLock.AssertHeld(c)
	p.WatchRead(trace.FieldBlockedOn, lockID(p.blockedOn))
	return p.blockedOn
}

// RemoveFromSleepingOwner is proxy_remove_from_sleeping_owner(): take p
// off the list of the sleeping owner it is parked on, if any. The owner
// is read without a lock (data_race(READ_ONCE)) and checked again under
// its blocked_lock; if p moved to another list meanwhile, try again.
// Called by every activation (activate_task) before p is enqueued.
func (p *Task) RemoveFromSleepingOwner(c *spinlock.CPU) {
	for {
		so := p.ReadSleepingOwner()
		if so == nil {
			return
		}
		so.BlockedLock.Lock(c)
		if p.ReadSleepingOwner() != so {
			so.BlockedLock.Unlock(c)
			continue
		}
		for i, w := range so.BlockedHead {
			if w == p {
				so.BlockedHead = append(so.BlockedHead[:i], so.BlockedHead[i+1:]...)
				so.WatchWrite(trace.FieldBlockedHead, -int64(p.ID))
				break
			}
		}
		p.ParkedBatch = 0 // out of a detached batch too (list_del_init)
		p.UnlinkSleepingOwner()
		so.BlockedLock.Unlock(c)
		PutSleepingOwner(so)
		return
	}
}

// LinkSleepingOwner sets sleeping_owner to owner, taking the reference
// the link holds (proxy_enqueue_on_owner: get_task_struct, then
// WRITE_ONCE). owner's blocked_lock is held.
func (p *Task) LinkSleepingOwner(owner *Task) {
	owner.GetTaskStruct()
	p.SleepingOwner.Store(owner)
	p.WatchWrite(trace.FieldSleepingOwner, WatchID(owner))
}

// UnlinkSleepingOwner clears sleeping_owner and returns what it pointed
// to (nil if nothing): whoever clears the link puts its reference, with
// PutSleepingOwner once it has dropped that owner's blocked_lock.
func (p *Task) UnlinkSleepingOwner() *Task {
	o := p.SleepingOwner.Swap(nil)
	if o != nil {
		p.WatchWrite(trace.FieldSleepingOwner, 0)
	}
	return o
}

// PutSleepingOwner drops the reference of a link UnlinkSleepingOwner
// cleared (nil: there was none).
func PutSleepingOwner(owner *Task) {
	if owner != nil {
		owner.PutTaskStruct()
	}
}

// BlockedDonor returns blocked_donor (see the field for who may read it).
func (p *Task) BlockedDonor() *Task {
	if p.Watch != nil {
		return p.watchedBlockedDonor()
	}
	return p.blockedDonor
}

//go:noinline
func (p *Task) watchedBlockedDonor() *Task {
	p.WatchRead(trace.FieldBlockedDonor, WatchID(p.blockedDonor))
	return p.blockedDonor
}

// SetBlockedDonor sets blocked_donor (see the field for who may write it).
func (p *Task) SetBlockedDonor(d *Task) {
	p.blockedDonor = d
	if p.Watch != nil {
		p.WatchWrite(trace.FieldBlockedDonor, WatchID(d))
	}
}

// Peek returns the blocked fields without asserting a lock: only for
// stop-the-world audits and reports, when every CPU is parked.
func (p *Task) Peek() (m Lock, isBlocked bool, donor *Task) {
	return p.blockedOn, p.isBlocked != 0, p.blockedDonor
}

// SignalPending is signal_pending(p): TIF_SIGPENDING, read without a lock.
func (p *Task) SignalPending() bool { return p.sigPending.Load() }

// FatalSignalPending is fatal_signal_pending(p).
func (p *Task) FatalSignalPending() bool { return p.sigPending.Load() && p.sigKill.Load() }

// SignalPendingState is signal_pending_state(state, p): a sleep in state
// st would be cut short by a pending signal. INTERRUPTIBLE sleeps by any
// signal, KILLABLE ones by a fatal signal, UNINTERRUPTIBLE ones never.
func (p *Task) SignalPendingState(st State) bool {
	if st != Interruptible && st != Killable {
		return false
	}
	if !p.SignalPending() {
		return false
	}
	return st == Interruptible || p.sigKill.Load()
}

// QueueSignal is the pending-set half of send_signal: SIGKILL (fatal) or a
// signal with a handler is added and TIF_SIGPENDING set. SigLock must be
// held; the caller then wakes p (signal_wake_up) before dropping it.
func (p *Task) QueueSignal(c *spinlock.CPU, fatal bool) {
	p.SigLock.AssertHeld(c)
	if fatal {
		p.sigKill.Store(true)
	} else {
		p.sigUsr = true
	}
	p.sigPending.Store(true)
}

// DequeueSignals is get_signal's dequeue by p itself, SigLock held: the
// pending set is emptied and TIF_SIGPENDING cleared (recalc_sigpending).
// It reports whether SIGKILL was among them.
func (p *Task) DequeueSignals(c *spinlock.CPU) (fatal bool) {
	p.SigLock.AssertHeld(c)
	fatal = p.sigKill.Load()
	p.sigKill.Store(false)
	p.sigUsr = false
	p.sigPending.Store(false)
	return fatal
}

// SchedDelayed reads se.sched_delayed without the task's rq lock (the
// kernel's plain read of the byte in find_proxy_task; see
// docs/kernel-map.md).
func (p *Task) SchedDelayed() bool {
	if p.Watch != nil {
		return p.watchedSchedDelayed()
	}
	return p.schedDelayed.Load()
}

//go:noinline
func (p *Task) watchedSchedDelayed() bool {
	v := p.schedDelayed.Load()
	p.WatchRead(trace.FieldDelayed, b2i(v))
	return v
}

// SetSchedDelayed sets se.sched_delayed; the rq lock of task_cpu(p) is
// held.
func (p *Task) SetSchedDelayed(on bool) {
	p.SE.Delayed = on
	p.schedDelayed.Store(on)
	p.WatchWrite(trace.FieldDelayed, b2i(on))
}

func b2i(v bool) int64 {
	if v {
		return 1
	}
	return 0
}

// CoreNode is struct task_struct's core_node (an rb_node of rq->core_tree)
// with the model's record of the key the task was linked with. Guarded
// by the lock of the runqueue whose tree holds it (Linked).
type CoreNode struct {
	Parent, Left, Right *Task
	Red                 bool
	// Linked is !RB_EMPTY_NODE(&p->core_node): sched_core_enqueued(p).
	Linked bool
	// TreeCPU is the runqueue whose core_tree holds the task (the
	// audit's check that a task is linked where it is queued).
	TreeCPU int
	// Key is the priority the task carried when sched_core_enqueue
	// linked it: the order rb_add gave it and keeps (the model's record,
	// for invariant 62; the kernel does not store it).
	Key CoreKey
}

// CoreKey is what __sched_core_less compares after the cookie: the
// class rank __task_prio and, within a class, the deadline
// (SCHED_DEADLINE) or vruntime (fair); RT ranks by prio alone.
type CoreKey struct {
	Prio  int
	Value int64
}

package check

import (
	"fmt"
	"sync"
)

// Invariant identifies a checked property. Numbers 1..22 are those of
// the protocol's checkable invariants (this list is their reference);
// larger ones are proxysim's own.
type Invariant int

const (
	InvSingleRun         Invariant = 1  // a task executes on at most one CPU; on_cpu on at most one
	InvAffinity          Invariant = 2  // a task executes only on a CPU in its mask
	InvBlockedNotCurr    Invariant = 3  // a mutex-blocked task is never switched in to execute
	InvCurrDonor         Invariant = 4  // curr == donor, or curr ends donor's chain, or idle
	InvQueuedHere        Invariant = 5  // donor, chain links and the returned owner are queued here
	InvOneQueue          Invariant = 6  // on_rq QUEUED <=> in exactly one class queue, that of task_cpu
	InvOnCPUNoEnqueue    Invariant = 7  // on_rq 0 and on_cpu 1: nobody enqueues it
	InvWakeCPU           Invariant = 8  // queued with cpu != wake_cpu => blocked (proxy-migrated); wake_cpu itself may lie outside the mask (select_task_rq places the wake-up)
	InvRunnableInMask    Invariant = 9  // no runnable task stays queued outside its mask
	InvWakingReturns     Invariant = 10 // a woken donor (blocked_on cleared, is_blocked, queued) is run, returned or deactivated in time
	InvDonorHandoff      Invariant = 11 // blocked_donor's lock is owned by the task it donates to
	InvOneOwner          Invariant = 12 // a mutex has one owner; wait list agrees with waiters
	InvSleepingOwner     Invariant = 13 // parked on at most one list; parked => on_rq 0
	InvParkedOwner       Invariant = 14 // a parked waiter's owner is asleep and owns its lock
	InvNoStrandedWaiter  Invariant = 15 // owner wake => parked waiters re-activated
	InvNoStaleRef        Invariant = 16 // no rq reference to a task survives an rq-lock drop
	InvBalanceCallbacks  Invariant = 17 // balance callbacks empty at pick_again and at lock drops
	InvFPTNoWait         Invariant = 18 // find_proxy_task never waits for ttwu holding the rq lock
	InvRuntime           Invariant = 20 // sum of exec runtime == sum of CPU busy time
	InvLockOrder         Invariant = 21 // lock order pi_lock -> rq->lock -> wait_lock -> blocked_lock holds
	InvCounts            Invariant = 22 // nr_running and friends agree and never go negative
	InvProgress          Invariant = 30 // every runnable task makes progress within a bound
	InvRunningNotBlocked Invariant = 31 // TASK_RUNNING implies !is_blocked (Peter Zijlstra's rule)
	InvChainAcyclic      Invariant = 32 // blocked_on chains are acyclic (else: deadlock)
	InvHang              Invariant = 40 // the simulator makes progress in real time
	InvInternal          Invariant = 41 // a model assertion failed (panic)
	InvProxyMigrate      Invariant = 42 // proxy migration decisions: owner runnable, target remote
	InvMutexMisuse       Invariant = 43 // program unlocks a mutex it does not hold
	InvHandoffLiveness   Invariant = 33 // a task given a mutex runs (or is woken) within a bound
	InvWaitAge           Invariant = 34 // a mutex waiter whose owner makes no progress waits at most a bound
	InvLostWakeup        Invariant = 35 // a TASK_UNINTERRUPTIBLE sleeper is referenced by something that will wake it
	InvLivelock          Invariant = 36 // re-picks per context switch stay near the run's own baseline
	InvChargeLedger      Invariant = 37 // class time to the donor, execution time to curr, per proxied interval
	InvCoreCookie        Invariant = 44 // SMT siblings never execute (rq->curr) tasks of different cookies at once
	InvCoreStarve        Invariant = 45 // an untagged runnable task on a forced-idle CPU waits at most a bound
	InvIRQLockUsage      Invariant = 46 // a lock class is never both taken in an IRQ context and taken (or held) with that IRQ enabled (lockdep: inconsistent lock state)
	InvIRQLockOrder      Invariant = 47 // no IRQ-safe lock class is ordered before an IRQ-unsafe one (lockdep: irq lock inversion, safe -> unsafe order)
	InvOffline           Invariant = 48 // nothing runs on an offline CPU, nothing is queued or moved there
	InvMigrateDisabled   Invariant = 49 // a migrate-disabled task changes CPU only by proxy migration (set_task_cpu's exemption)
	InvRQLockIdentity    Invariant = 50 // the lock a CPU holds for an rq is rq_lockp(rq); siblings agree on it
	InvForceIdleAcct     Invariant = 51 // forced-idle time charged to tasks == forced-idle CPU time (count x elapsed)
	InvCoreTieMax        Invariant = 52 // a core pick gives the core away (forcing idle its untagged first max, or dropping a proxy re-pick's owner swap) only to a task that strictly beats it
	InvUseAfterFree      Invariant = 53 // no task struct is used after its last reference is dropped (get/put_task_struct)
	InvDLBudget          Invariant = 54 // a SCHED_DEADLINE entity with no budget left (runtime <= 0) is throttled or replenished at its next update
	InvEEVDFLag          Invariant = 55 // EEVDF: the weighted lags of a runqueue's fair entities sum to zero
	InvTaskRefs          Invariant = 60 // at the barrier a task's refcount is its own reference (until reaped) plus one per waiter parked on it
	InvCoreClass         Invariant = 61 // after a core-wide pick no task left queued on a forced-idle sibling is of a higher class than the core's max
	InvCoreTree          Invariant = 62 // rq->core_tree holds exactly the rq's queued, non-delayed tasks with a cookie, each linked with its key after the class enqueue
	InvExitedDead        Invariant = 63 // a task that ran do_exit stays TASK_DEAD: never woken, enqueued or run again
	InvDLThrottledPick   Invariant = 64 // pick_next_task never returns a throttled SCHED_DEADLINE task (one off the dl tree waiting for its dl_timer)
	InvDonorOutranked    Invariant = 65 // a queued RT/DL task that outranks rq->donor (class, prio, deadline) has need_resched set on its CPU at once after wakeup_preempt, and within a tick whatever queued it
)

var invNames = map[Invariant]string{
	InvSingleRun: "single-run", InvAffinity: "affinity", InvBlockedNotCurr: "blocked-not-curr",
	InvCurrDonor: "curr-donor", InvQueuedHere: "queued-here", InvOneQueue: "one-queue",
	InvOnCPUNoEnqueue: "on-cpu-no-enqueue", InvWakeCPU: "wake-cpu", InvRunnableInMask: "runnable-in-mask",
	InvWakingReturns: "waking-returns", InvDonorHandoff: "donor-handoff", InvOneOwner: "one-owner",
	InvSleepingOwner: "sleeping-owner", InvParkedOwner: "parked-owner", InvNoStrandedWaiter: "no-stranded-waiter",
	InvNoStaleRef: "no-stale-rq-ref", InvBalanceCallbacks: "balance-callbacks", InvFPTNoWait: "fpt-no-wait",
	InvRuntime: "runtime", InvLockOrder: "lock-order", InvCounts: "counts", InvProgress: "progress",
	InvRunningNotBlocked: "running-not-blocked", InvChainAcyclic: "chain-acyclic", InvHang: "hang",
	InvInternal: "internal", InvProxyMigrate: "proxy-migrate", InvMutexMisuse: "mutex-misuse",
	InvHandoffLiveness: "handoff-liveness", InvWaitAge: "wait-age", InvLostWakeup: "lost-wakeup",
	InvLivelock: "livelock", InvChargeLedger: "charge-ledger",
	InvCoreCookie: "core-cookie", InvCoreStarve: "core-starve",
	InvIRQLockUsage: "irq-lock-usage", InvIRQLockOrder: "irq-lock-order",
	InvOffline: "offline-cpu", InvMigrateDisabled: "migrate-disabled",
	InvRQLockIdentity: "rq-lock-identity", InvForceIdleAcct: "forceidle-acct", InvCoreTieMax: "core-tie-max",
	InvUseAfterFree:    "use-after-free",
	InvDLBudget:        "dl-budget",
	InvEEVDFLag:        "eevdf-lag",
	InvTaskRefs:        "task-refs",
	InvCoreClass:       "core-class",
	InvCoreTree:        "core-tree",
	InvExitedDead:      "exited-dead",
	InvDLThrottledPick: "dl-throttled-pick",
	InvDonorOutranked:  "donor-outranked",
}

// Name returns the invariant's stable name (metric label, JSON).
func (i Invariant) Name() string {
	if n, ok := invNames[i]; ok {
		return n
	}
	return fmt.Sprintf("inv-%d", int(i))
}

// AllInvariants lists every invariant, in number order.
func AllInvariants() []Invariant {
	out := make([]Invariant, 0, len(invNames))
	for i := Invariant(0); i < 100; i++ {
		if _, ok := invNames[i]; ok {
			out = append(out, i)
		}
	}
	return out
}

// Violation is one broken invariant.
type Violation struct {
	Invariant Invariant `json:"-"`
	Name      string    `json:"invariant"`
	CPU       int       `json:"cpu"`
	Task      int       `json:"task"`
	TaskName  string    `json:"task_name,omitempty"`
	Message   string    `json:"message"`
	Time      int64     `json:"time_ns"`
	Seq       uint64    `json:"event_seq"`
}

func (v Violation) String() string {
	return fmt.Sprintf("invariant %d (%s) on cpu %d, task %s: %s", int(v.Invariant), v.Name, v.CPU, v.TaskName, v.Message)
}

// Reporter collects violations. The first one stops the machine (through
// OnFirst); later ones are kept, up to a limit, as evidence.
type Reporter struct {
	mu         sync.Mutex
	violations []Violation
	counts     map[Invariant]uint64
	// OnFirst runs once, for the first violation, outside the lock.
	OnFirst func(Violation)
}

// NewReporter returns an empty reporter.
func NewReporter() *Reporter { return &Reporter{counts: map[Invariant]uint64{}} }

// Report records a violation.
func (r *Reporter) Report(v Violation) {
	v.Name = v.Invariant.Name()
	r.mu.Lock()
	first := len(r.violations) == 0
	if len(r.violations) < 64 {
		r.violations = append(r.violations, v)
	}
	r.counts[v.Invariant]++
	r.mu.Unlock()
	if first && r.OnFirst != nil {
		r.OnFirst(v)
	}
}

// Violations returns what was reported.
func (r *Reporter) Violations() []Violation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Violation(nil), r.violations...)
}

// Counts returns violations per invariant.
func (r *Reporter) Counts() map[Invariant]uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[Invariant]uint64, len(r.counts))
	for k, v := range r.counts {
		out[k] = v
	}
	return out
}

// Failed reports whether any violation was seen.
func (r *Reporter) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.violations) > 0
}

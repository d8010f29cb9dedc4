package bugs

import (
	"fmt"
	"sort"
	"strings"
)

// ID names a bug.
type ID uint8

// Set is a set of enabled bugs. Read-only once the machine starts.
type Set uint64

// Has reports whether bug b is switched on.
func (s Set) Has(b ID) bool { return s&(1<<b) != 0 }

// With returns s plus b.
func (s Set) With(b ID) Set { return s | 1<<b }

// Names lists the enabled bugs.
func (s Set) Names() []string {
	var out []string
	for _, b := range Catalogue {
		if s.Has(b.ID) {
			out = append(out, b.Name)
		}
	}
	return out
}

// The bugs. Number is the bug's number in the list of known races of the
// series that this project started from (kept for cross-reference).
const (
	LateActivationOnCPU    ID = iota // 1
	SkippedWaking                    // 2
	CPUBeforeOnRQ                    // 3
	FusedOnRQLoads                   // 4
	OwnerMidReturn                   // 5
	ActivationLivelock               // 6
	RunnableWithoutReturn            // 7
	DanglingDonor                    // 8
	StaleBalanceCallbacks            // 9
	WakeCPUOutsideMask               // 14
	OwnerCPUReadTwice                // 15
	NeedReschedCleared               // 16
	BlockTaskNotLast                 // 18
	WakelistMigrating                // 25
	ParkDonorNotLink                 // 19
	TTWUKeepsBlocked                 // v22's wake path, fixed by v29's is_blocked
	EarlyActivation                  // finding F1 (model decision 8)
	ProxyKeepsDonor                  // finding F2 (model decision 5)
	IsBlockedPlainRead               // finding F4
	CoreschedStall                   // core scheduling v3: pick_task favours its first argument on ties
	CoreStealDonor                   // try_steal_cookie moves a proxy-exec donor (v30 1/7)
	BlockedOnPlainRead               // finding F5
	SRQPullsDonor                    // finding F6: SHARED_RUNQ pulls a mutex-blocked donor / rq->donor (no proxy rule)
	UpdateDomainsIRQsOn              // SHARED_RUNQ v3: update_domains_fair takes rq locks with IRQs on (lockdep splat at boot)
	SRQDrainIRQsOn                   // SHARED_RUNQ v3/v4: __shared_runq_drain takes the shard lock with IRQs on
	ReturnToOffline                  // 13
	CoreLockFlip                     // K8: rq_lockp() read with no lock held, no re-validation; double_rq_unlock order
	CoreLockCPUOrder                 // K9: double_rq_lock orders core-wide locks by CPU id (AB-BA)
	CoreForceIdleAcct                // K11: forced idle charged only to cookied tasks, started only with a core cookie
	CoreFlipRepick                   // finding F7: the core-wide pick carries on after a flip-off during its lock drops
	CoreFlipStalePick                // finding F8: a core_pick survives a flip off and on, and the fast path takes it
	CoreFIVruntime                   // K2: cross-CPU vruntime compare against the current min_vruntime (0 vs 0), no min_vruntime_fi
	CoreFINoTick                     // K4: no forced-idle tick (task_tick_core): the forced-idle sibling waits for a schedule event
	CoreFIChargeStale                // finding F9: forced-idle time charged to a stale core_pick, a task another core may be charging
	WWNoClearBlockedOn               // 12: ww die/wound leave blocked_on set (v16 hang)
	WWNestedBlockedLock              // 24: ww die/wound under current's blocked_lock (v21 AB-BA)
	WWWoundWrongLock                 // 23: wound clears the owner's blocked_on for the wrong lock (6.17-rc2 syzbot WARN)
	DelayedPlainRead                 // finding F11: find_proxy_task reads owner->se.sched_delayed without the owner's rq lock
	ProxyMigrateOffline              // finding F12: find_proxy_task migrates donors to an offline CPU (a throttled DL owner's)
	DonorAffinityExempt              // finding F13: affine_move_task exempts rq->donor even once it is runnable again
	CoreDLTie                        // finding F14: prio_less gives deadline ties to the other sibling; the proxy re-pick livelocks
	CoreRTForceidle                  // K5: the pre-fix per-class core pick skips a class empty here for every sibling: tagged CFS runs, a sibling's RT is forced idle
	CoreTreeStaleKey                 // K7: sched_core_enqueue before the class enqueue: core_tree ranks a waking task by its pre-placement vruntime
	ActivateExited                   // finding F15: activate_blocked_waiters enqueues a waiter that was woken meanwhile and has exited
	CoreReplenishStalePick           // finding F16: dl_task_timer's replenish leaves a sibling's core-wide selection valid; the re-pick after a proxy migration takes it and idles
	CoreThrottleStalePick            // finding F17: update_curr_dl's throttle of a proxy's donor leaves a sibling's core-wide selection of that donor valid; the fast path picks it throttled
	CoreOffForcedIdle                // __sched_core_disable reschedules no sibling: one the last core pick left forced idle keeps idling with tasks queued
	NumBugs
)

// Kinds of catalogue entries.
const (
	// Historical: a race the series had and fixed upstream (FixedIn names
	// the version); --bug restores the code before the fix.
	Historical = "historical"
	// Finding: a hole proxysim found in the reference kernel's code,
	// open there; the model runs the proposed fix by default and --bug
	// restores the kernel's code (docs/findings.md).
	Finding = "finding"
)

// Bug is one catalogue entry.
type Bug struct {
	ID     ID     `json:"-"`
	Number int    `json:"number"` // in the list of known races the project started from (0: not in it)
	Name   string `json:"name"`
	// Kind is Historical or Finding.
	Kind        string `json:"kind"`
	FixedIn     string `json:"fixed_in"` // historical: the upstream version; finding: "open in <reference>"`
	Description string `json:"description"`
	// Detector says what catches it in proxysim.
	Detector string `json:"detector"`
}

// Catalogue lists every bug, in ID order.
var Catalogue = []Bug{
	{LateActivationOnCPU, 1, "late-activation-on-cpu", Historical, "v18",
		"activate_blocked_waiters enqueues a waiter from a stale batch that meanwhile was woken, ran and blocked again (still on_cpu, or parked anew): it is queued while parked, or runs on two CPUs",
		"audit: parked waiter on a runqueue (invariant 13); switch-in check (invariant 1)"},
	{SkippedWaking, 2, "skipped-waking", Historical, "v13/v18/v22",
		"the v13..v22 wake paths did not send a woken chain link home (v22: a WAKING link walked as blocked, never returned); in the reference's form: find_proxy_task runs a link whose blocked_on was cleared where it is queued, instead of proxy_deactivate leaving it to its wake-up to place: a proxy-migrated waiter runs away from home",
		"inline switch-in check: task runs outside its affinity mask (invariant 2); audit: runnable task queued outside its mask (invariant 9)"},
	{CPUBeforeOnRQ, 3, "cpu-before-on-rq", Historical, "v18",
		"find_proxy_task tests task_cpu(owner) before owner->on_rq, so a donor is proxy-migrated towards an owner that is asleep",
		"inline check in proxy_migrate_task: migration target chosen for a sleeping owner"},
	{FusedOnRQLoads, 4, "fused-on-rq-loads", Historical, "v18",
		"find_proxy_task reuses one load of owner->on_rq for its later checks (compiler-fused READ_ONCE): a stale decision hands a dequeued owner to the CPU",
		"inline switch-in check (task not queued / on two CPUs)"},
	{OwnerMidReturn, 5, "owner-mid-return", Historical, "v9",
		"find_proxy_task trusts a stale task_cpu of an owner that is being moved (MIGRATING) instead of letting it land: the owner runs on a CPU it is not queued on",
		"inline switch-in check (task_cpu / on_rq), invariant 5"},
	{ActivationLivelock, 6, "activation-livelock", Historical, "v9/v11",
		"activate_blocked_waiters keeps draining an owner's list while donors re-park on it instead of detaching a finite batch: endless loop",
		"watchdog: CPU makes no progress"},
	{RunnableWithoutReturn, 7, "runnable-without-return", Historical, "v9/v14",
		"ttwu_runnable makes a queued donor runnable without the return check (proxy_needs_return), also when it is still queued on a CPU outside its mask: the donor runs there",
		"inline switch-in check: task runs outside its affinity mask (invariant 2)"},
	{DanglingDonor, 8, "dangling-donor", Historical, "v9/v18/v22",
		"proxy migration drops the rq lock while rq->donor still points at the migrated task: the source CPU charges and preempts a task another CPU owns",
		"lock-drop check (invariant 16); race detector on the donor's sched entity"},
	{StaleBalanceCallbacks, 9, "stale-balance-callbacks", Historical, "v9/v20-v23",
		"balance callbacks queued by an abandoned pick survive the lock drop of a proxy migration and run on a later pick",
		"lock-drop check and pick_again check (invariant 17)"},
	{WakeCPUOutsideMask, 14, "wake-cpu-outside-mask", Historical, "v11",
		"before v11 the return migration put a proxy-migrated task straight back on its wake_cpu, which an affinity change leaves where it was (the reference leaves it too, but returns the task through try_to_wake_up's select_task_rq, which places it inside its mask): a task whose new mask excludes its old home is returned there. --bug returns a task away from home straight to wake_cpu",
		"inline switch-in check: task runs outside its mask (invariant 2); audit: runnable task queued outside its mask (invariant 9)"},
	{OwnerCPUReadTwice, 15, "owner-cpu-read-twice", Historical, "v11",
		"find_proxy_task reads task_cpu(owner) twice; the owner moves in between and the donor is 'migrated' to its own CPU",
		"inline check in proxy_migrate_task: migration to this CPU"},
	{NeedReschedCleared, 16, "need-resched-cleared", Historical, "v10/v11",
		"__schedule clears need_resched after find_proxy_task returned idle: the CPU idles until the next tick with a donor queued",
		"audit: runnable donor starved on an idle CPU beyond the progress bound"},
	{BlockTaskNotLast, 18, "block-task-not-last", Historical, "v14",
		"proxy_enqueue_on_owner takes the waiter off the runqueue before the owner's sleep is re-checked under its blocked_lock, then links it anyway: an owner that woke in between never activates it",
		"audit: waiter stranded on an awake owner's list (invariant 15)"},
	{WakelistMigrating, 25, "wakelist-migrating", Historical, "v23",
		"v22/v23's proxy_needs_return dequeued a returning task as a migration (on_rq MIGRATING), and ttwu then queued the still-MIGRATING task on a remote wake list: the remote CPU waits in task_rq_lock for a move that needs it (the reference dequeues it with block_task(TASK_WAKING), which --bug undoes)",
		"wake-list check: a queued entry is not off-queue (invariant 6); watchdog if a CPU spins in task_rq_lock"},
	{ParkDonorNotLink, 19, "park-donor-not-link", Historical, "v14",
		"proxy_enqueue_on_owner parks the donor instead of the last link before the sleeping owner: wakeups of mid-chain tasks are lost",
		"audit: parked task's sleeping owner is not its lock owner (invariant 14)"},
	{TTWUKeepsBlocked, 0, "ttwu-keeps-blocked", Historical, "v29",
		"v22's try_to_wake_up made a mutex waiter TASK_RUNNING and left its blocked_on_state BO_BLOCKED (a delayed wake of a waiter that had re-armed); v29 added is_blocked, cleared by ttwu_do_wakeup with TASK_RUNNING. --bug leaves is_blocked set in ttwu_do_wakeup: TASK_RUNNING yet blocked",
		"audit: TASK_RUNNING with is_blocked (invariant 31); inline: is_blocked task switched in (invariant 3), try_to_block_task on an is_blocked task"},
	{EarlyActivation, 0, "early-activation", Finding, "open@014c4be7",
		"try_to_wake_up runs activate_blocked_waiters at its end on every path, also when the owner went onto a remote wake list and is not enqueued yet: a donor that parks on the owner (still on_rq 0) after that pass is stranded on a running owner",
		"audit: waiter stranded on an awake owner's list (invariant 15)"},
	{ProxyKeepsDonor, 0, "proxy-keeps-donor", Finding, "open@014c4be7",
		"nothing reschedules a CPU whose proxy's donor chain is broken under it: a proxy that releases the lock its donor waits for hands it over and wakes the donor (ttwu_runnable's wakeup_preempt compares the donor with itself), and a wake-up of the donor or of a link of its chain (ttwu_runnable, proxy_needs_return: only a returned donor reschedules), or a balancer taking a sleeping link whose blocked_on a ww wound cleared (the load balancer's detach_task, core scheduling's try_steal_cookie), leaves the proxy running on the scheduling context of a donor that is no longer blocked on it",
		"audit: curr is neither the donor nor the end of its chain, with no reschedule pending (invariant 4)"},
	{IsBlockedPlainRead, 0, "is-blocked-plain-read", Finding, "open@014c4be7",
		"do_activate_blocked_waiter reads p->is_blocked holding only p's pi_lock, while try_to_block_task (rq lock only) and sched_ttwu_pending's ttwu_do_wakeup (rq lock only) write it: a plain concurrent read and write (KCSAN's data race). The checks that follow (TASK_WAKING, on_rq, on_cpu) make the decision right either way; the fix is READ_ONCE/WRITE_ONCE",
		"race detector only (build with -race): DATA RACE between doActivateBlockedWaiter and tryToBlockTask or ttwuDoWakeup"},
	{CoreschedStall, 0, "coresched-stall", Historical, "core scheduling v3 (CORESCHED_STALL_FIX, Jun 2019)",
		"core scheduling v3's pick_task, when the core cookie is 0 (the max so far is untagged), keeps a tagged candidate unless prio_less(candidate, max): on a tie (v3's cross-CPU vruntime normalisation makes one-task-per-CPU compares tie) the tagged task wins, becomes max and forces the untagged sibling idle, for as long as the tagged side keeps running. --bug restores that comparison (NO_CORESCHED_STALL_FIX); the fix is max && !prio_less(max, candidate). Needs --core-sched v3",
		"inline, after each core pick: the untagged task chosen first lost the core to a tagged one that does not strictly beat it (invariant 52); starvation beyond the bound (invariant 45: 1 s under v3, whose K2/K3 waits reach 0.5 s with the fix too)"},
	{CoreStealDonor, 0, "core-steal-donor", Historical, "v30 (\"sched/core: Don't steal a proxy-exec donor\", July 2026)",
		"try_steal_cookie, the forced-idle balancer, skipped only src->core_pick and src->curr: it could move src's rq->donor (a blocked donor a proxy runs for) or another mutex-blocked donor to a forced-idle CPU by a non-proxy path. The reference skips p == src->donor and task_is_blocked(p); --bug removes both skips (the v30 patch body was not read: the mechanism is inferred from its title and the reference's code). Needs --core-sched",
		"audit: donor not queued on its rq / stale donor reference (invariants 4, 5, 16); lost blocked chains (liveness)"},
	{BlockedOnPlainRead, 0, "blocked-on-plain-read", Finding, "open@014c4be7",
		"task_is_blocked() reads p->blocked_on with no lock, from other CPUs (can_migrate_task, the RT pushable tests, try_steal_cookie, holding only a runqueue's lock) and from __schedule on prev, while the mutex code writes it holding only p's blocked_lock (__set_task_blocked_on in the slow path; __clear_task_blocked_on in the unlocker's hand-off, a wake-up of current, proxy_needs_return, find_proxy_task): a plain concurrent read and write (KCSAN's data race). The callers re-check under their locks or tolerate either answer; the fix is READ_ONCE/WRITE_ONCE (or data_race() with a comment)",
		"race detector only (build with -race): DATA RACE between TaskIsBlocked and SetBlockedOn or ClearBlockedOn"},
	{SRQPullsDonor, 0, "srq-pulls-donor", Finding, "open@014c4be7 + SHARED_RUNQ v4 (Dec 2023, never merged; predates merged proxy execution, has no such rule)",
		"SHARED_RUNQ with v3/v4 hooks links every task __enqueue_entity inserts, a mutex-blocked donor too (it stays in the tree), and its pull rechecks under task_rq_lock only queued, !task_on_cpu (v4: migration-disabled, allowed). rq->donor is off the tree but not on_cpu while its proxy runs: popped just before its CPU picked it as donor, it passes every recheck and move_queued_task takes it, leaving that CPU's rq->donor dangling; a blocked donor is moved by a non-proxy path. proxysim's rule: push skips task_is_blocked, the pull rechecks !task_is_blocked && !task_current_donor (as can_migrate_task does upstream); --bug removes both. Needs --sched-features SHARED_RUNQ",
		"inline at __schedule entry and audit: rq->donor not queued on its runqueue (invariant 16); race detector on the donor's sched entity"},
	{UpdateDomainsIRQsOn, 0, "update-domains-irqs-on", Historical, "SHARED_RUNQ v3 (Aug 2023; reported by K Prateek Nayak, 31 Aug 2023; v4 as posted still uses rq_lock, the series was never merged; fix: rq_lock_irq)",
		"David Vernet's SHARED_RUNQ added update_domains_fair(), run from sched_update_domains() on every sched domain rebuild (sched_init_domains at boot, partition_sched_domains later): it walks every CPU taking its rq lock with rq_lock(), with IRQs on, from process context (kernel_init at boot), while the tick takes the same lock class in hard-IRQ context. A tick on that CPU while the rebuild holds the lock spins on it forever. K Prateek Nayak's lockdep run hit it at boot: \"inconsistent {IN-HARDIRQ-W} -> {HARDIRQ-ON-W} usage\" of rq->__lock from update_domains_fair <- sched_update_domains <- sched_init_domains <- sched_init_smp. --bug takes the rq locks of the model's domain rebuild (boot, and stress --domain-rebuild-interval) with rq_lock() instead of rq_lock_irq()",
		"IRQ-usage lockdep: inconsistent lock state of rq->lock (invariant 46), at the first tick after the boot rebuild"},
	{SRQDrainIRQsOn, 0, "srq-drain-irqs-on", Historical, "SHARED_RUNQ v3/v4 as posted (Aug-Dec 2023, never merged; inferred from the same splat's cause, design note B8; fix: raw_spin_lock_irq)",
		"__shared_runq_drain(), run by update_domains_fair() and by the SHARED_RUNQ feature toggle, takes each shard's raw spinlock with plain raw_spin_lock from process context, IRQs on, while __enqueue_entity's push takes the same lock class from a wake-up in hard-IRQ context (a timer or the wake-list IPI): a tick arriving while a drain holds the shard lock deadlocks on it. Lockdep reports only the first splat (update-domains-irqs-on at boot) and then turns itself off, so this one was never seen. --bug takes the drain's shard lock with IRQs on. Needs --sched-features SHARED_RUNQ and rebuilds or toggles (the hunt runs --srq-toggle-interval)",
		"IRQ-usage lockdep on the shard lock, at the first drain: an irq lock inversion (it nests inside the HARDIRQ-safe rq->lock; invariant 47) or an inconsistent lock state (invariant 46)"},
	{ReturnToOffline, 13, "return-to-offline", Historical, "v16",
		"before v16 the return migration of a proxy-migrated donor put it straight back on its wake_cpu; if that CPU went offline while the donor was away, the task was queued on a dead CPU and never ran. v16 dequeues it and wakes it, so select_task_rq's is_cpu_allowed / select_fallback_rq place it (the reference: proxy_needs_return, then ttwu). --bug skips select_task_rq for a returning task and uses wake_cpu. Needs CPU hotplug (bugs --hunt turns on --hotplug-interval 2ms)",
		"set_task_cpu's offline WARN and the offline-CPU audit (invariant 48)"},
	{CoreLockFlip, 0, "core-lock-flip", Historical, "5.14 (9edeaea1bc45 \"sched: Core-wide rq->lock\", from the 2021 v2 posting's soft lockup)",
		"switching core scheduling on or off changes rq_lockp() (rq->core_enabled, flipped with every sibling's __lock held). The 2021 posting read the pointer, took that lock and trusted it: a CPU that read the old pointer and waited through a flip holds its own __lock while its siblings serialise on the core's: two CPUs 'hold the rq lock' of one runqueue. double_rq_unlock released rq1 first and then compared rq_lockp(rq1) and rq_lockp(rq2) with no lock of rq1's core held. The fix re-reads rq_lockp() after the acquire and retries, and releases rq2 first. --bug restores both. Needs --core-sched and flips (--core-sched-toggle-interval, or the coreflip instruction)",
		"inline: lockdep_assert_rq_held / raw_spin_rq_unlock find this CPU holding the other candidate lock (invariant 50); race detector on the runqueue's fields"},
	{CoreLockCPUOrder, 0, "core-lock-cpu-order", Historical, "5.14 (rq_order_less(), core id first; before 2021 by rq address)",
		"with core-wide rq locks, ordering double_rq_lock by CPU id is AB-BA: cores {0,2} and {1,3}, double_rq_lock(0,3) takes core 0 then core 1, double_rq_lock(1,2) core 1 then core 0. rq_order_less() orders by rq->core->cpu first. --bug orders by CPU id. Needs --core-sched",
		"lock-order validator on lock identity (invariant 21); a real deadlock reported by the watchdog (invariant 40)"},
	{CoreForceIdleAcct, 0, "core-forceidle-acct", Historical, "b171501f2580 (\"sched/core: Accounting forceidle time for all tasks except idle task\", Jan 2022)",
		"forced-idle accounting (core_forceidle_sum) started an episode only when the core cookie was non-zero and charged only cookied tasks: a core forced idle by an untagged max (a tagged task left idle beside an untagged one) was never charged, so one cookie's side of a mirror setup reported 20% and the other 80% for the same one-CPU loss. The fix starts every episode and charges every non-idle core_pick ?: curr. --bug restores both tests. Needs --core-sched",
		"audit: forced-idle time charged to tasks equals count x elapsed forced-idle time (invariant 51)"},
	{CoreFlipRepick, 0, "core-flip-repick", Finding, "open@014c4be7",
		"pick_next_task tests sched_core_enabled(rq) once, on entry; prev_balance() (newidle balancing) then drops and retakes the rq lock, and so does the proxy re-pick's find_proxy_task. __sched_core_disable() runs __sched_core_flip(false) with no synchronize_rcu(), so a flip in that window is possible: raw_spin_rq_lock re-validates and hands back the CPU's own __lock, and the core-wide pick carries on under it, reading and writing its siblings' runqueues (core_pick, the class queues) and the core's state while the siblings hold their own __locks. The proposed fix re-checks sched_core_enabled(rq) after the lock drops and picks the plain way (__pick_next_task). --bug restores the reference. Needs --core-sched and flips",
		"lockdep_assert_rq_held on a sibling's runqueue (invariant 50); race detector on the siblings' runqueue fields"},
	{CoreFlipStalePick, 0, "core-flip-stale-pick", Finding, "open@014c4be7",
		"a core-wide pick leaves core_pick set for each sibling it IPIs. If core scheduling is switched off before that sibling schedules, nothing clears it: the plain pick ignores it, and enqueues and dequeues no longer bump core_task_seq (sched_core_enqueue/dequeue run only when enabled). When it is switched on again, the sibling's next pick_next_task finds core_pick_seq == core_task_seq != core_sched_seq and core_pick set, and takes the stale pick on the fast path: a task that may have slept, moved to another CPU, or changed cookie meanwhile. The kernel clears core_pick for an offline CPU for the same reason (\"core_pick would already be migrated\"), not across a flip. The proposed fix clears every sibling's core_pick in __sched_core_flip under sched_core_lock (Peter Zijlstra, Nov 2021: \"perhaps we should do better here and explicitly initialize more state\"). --bug restores the reference. Needs --core-sched and flips",
		"inline: switch-in checks (task not queued here, invariants 1/5/6) and invariant 44 (cookie of siblings)"},
	{CoreFIVruntime, 0, "core-fi-vruntime", Historical, "5.14 (c6047c2e3af6, Joel Fernandes' min_vruntime_fi snapshot, v8 of the series)",
		"the core-wide pick compared fair tasks on different CPUs by vruntime normalised with each runqueue's current min_vruntime: with one task per CPU each side is its runqueue's min_vruntime, both normalise to 0, every compare ties, and the tie goes to the CPU that picks, which is the runner's own when its forced-idle tick fires. The fix snapshots min_vruntime into min_vruntime_fi when forced idle begins, so the runner's vruntime grows against a frozen base and the waiting side wins. --bug compares against the current min_vruntime. Needs --core-sched (hunted on coresched-hog, at most 4 CPUs)",
		"audit: a runnable task on a forced-idle CPU waits at most 100 ms (invariant 45)"},
	{CoreFINoTick, 0, "core-fi-no-tick", Historical, "5.14 (8039e96fcc1d, Vineeth Pillai: the forced-idle tick, task_tick_core)",
		"with one long-running task on a core and its sibling forced idle, nothing schedules: no wake-up, no sleep, no preemption, so the forced-idle sibling waits as long as the runner computes. task_tick_core reschedules the runner once it used half its slice while the core is forced idle with one fair task queued (MIN_NR_TASKS_DURING_FORCEIDLE). --bug removes the tick check. Needs --core-sched (hunted on coresched-hog, at most 4 CPUs: on larger machines try_steal_cookie pairs cookies first)",
		"audit: a runnable task on a forced-idle CPU waits at most 100 ms (invariant 45)"},
	{CoreFIChargeStale, 0, "core-fi-charge-stale", Finding, "open@014c4be7",
		"__sched_core_account_forceidle charges (core_sched.c as of b171501f2580, upstream: the reference does not carry the file) rq_i->core_pick ?: rq_i->curr for each sibling. core_pick is left set for a sibling the last core pick IPIed; an enqueue or dequeue since (core_task_seq moved on: the fast path would not take it) may have moved that task to another core, where it runs and is charged by that core's accounting under that core's lock: two CPUs add to p->stats.core_forceidle_sum under different locks (a plain read-modify-write: KCSAN's data race, lost updates), and the first core charges a task that no longer runs there. The proposed fix charges core_pick only while core_pick_seq == core_task_seq, else curr. --bug restores the reference",
		"race detector (the two cores' read-modify-writes of core_forceidle_sum); inline, a charge to a task freed since its core_pick was set (invariant 53: the SM_IDLE fast path can leave a core_pick behind its exited task, scenario core_idle_fastpath.txt)"},
	{WWNoClearBlockedOn, 12, "ww-no-clear-blocked-on", Historical, "v16",
		"ww_mutex die and wound only woke their victim (mainline's wake_up_process) and left its blocked_on in place: a Wound-Wait owner wounded while it waits on another ww_mutex keeps pointing at it, so the blocked_on chains hold a cycle (A waits for B's lock, B for A's) until B runs; v13..v16 made die/wound mark the victim (BO_WAKING), the reference clears blocked_on under its blocked_lock. --bug removes the clear (the wake-up stays)",
		"find_proxy_task's bounded walk: a blocked_on cycle (invariant 32) where the kernel's walk spun holding the rq lock (the hang); audit: chain cycle"},
	{WWNestedBlockedLock, 24, "ww-nested-blocked-lock", Historical, "v21",
		"before v21 __mutex_lock_common took current's blocked_lock right after wait_lock and held it across __ww_mutex_add_waiter and __ww_mutex_check_waiters, whose die and wound took the victim's blocked_lock nested (SINGLE_DEPTH_NESTING hides it from lockdep): a wounder holding its own blocked_lock meets an owner whose unlock holds its blocked_lock and nests the wounder's (it is the owner's stale blocked_donor), an AB-BA between two owners. --bug restores the older lock holding",
		"lockdep keyed by role (invariant 21, lock-order): the first wound that nests the owner's blocked_lock inside the waiter's inverts the unlock hand-off's owner -> waiter nesting; the deadlock itself (two CPUs spinning on each other's blocked_lock, invariant 40) needs both nestings at one instant and is not met by stress. TestWWNestedBlockedLockABBA (internal/cpu) shows that instant deterministically"},
	{WWWoundWrongLock, 23, "ww-wound-wrong-lock", Historical, "6.17-rc2 (syzbot)",
		"__ww_mutex_wound cleared the wounded owner's blocked_on with __clear_task_blocked_on(owner, lock): the owner may be blocked on a different mutex, and the helper's WARN_ON_ONCE(blocked_on && blocked_on != lock) fired (syzbot, 6.17-rc2); the fix passes NULL. --bug passes the lock",
		"the helper's WARN: blocked_on cleared for another lock (invariant 43, mutex-misuse)"},
	{DelayedPlainRead, 0, "delayed-plain-read", Finding, "open@014c4be7",
		"find_proxy_task tests owner->se.sched_delayed (twice: before and after taking the owner's blocked_lock) holding its own rq lock, the mutex's wait_lock and a blocked_lock, but not the rq lock of the owner's CPU, while dequeue_entity (set_delayed), requeue_delayed_entity and the pick's delayed dequeue (clear_delayed) write it under that rq lock only: a plain concurrent read and write (KCSAN's data race). The decision stays right (a delayed owner parks the donor, and the owner's ttwu_runnable requeue is followed by activate_blocked_waiters under the owner's blocked_lock); the fix is READ_ONCE/WRITE_ONCE",
		"race detector only (build with -race): DATA RACE between FindProxyTask and SetSchedDelayed"},
	{ProxyMigrateOffline, 0, "proxy-migrate-offline", Finding, "open@014c4be7",
		"find_proxy_task sends a donor to task_cpu(owner) whenever the owner is on_rq elsewhere, and proxy_migrate_task attaches it there unconditionally (\"leave that CPU to sort things out\"). A SCHED_DEADLINE owner that ran out of budget holding the mutex is throttled: still on_rq, but not in nr_running, so its CPU can go offline under it (dl_task_offline_migration moves it when its dl_timer fires). Donors that block on its mutex meanwhile are proxy-migrated to the offline CPU, where nothing will ever run or move them: they are stranded until that CPU comes back. The model's fix treats an owner on an offline CPU like a migrating one (proxy_resched_idle: retry once its timer has moved it); --bug restores the unconditional migration",
		"offline CPU with queued tasks (invariant 48), on that CPU's own loop and in the audit"},
	{DonorAffinityExempt, 0, "donor-affinity-exempt", Finding, "open@014c4be7",
		"affine_move_task is done at once when the task is rq->donor and not rq->curr (\"boosting a lock-holding proxy\"), and leaves wake_cpu alone unless it moves the task. A donor stays rq->donor after the proxy's unlock hands it the lock and wakes it (ttwu_runnable: is_blocked cleared, runnable), until the proxy schedules: a mask change that excludes the CPU in that window moves nothing and sends no stopper, and the next pick runs the task outside its new mask. A donor still blocked when its mask changes keeps its old wake_cpu: at the hand-off proxy_needs_return sees task_cpu == wake_cpu and wakes it in place, outside its mask; likewise a blocked task whose mask changed while it was proxy-migrated onto an allowed CPU and that is migrated back to its old home, where find_proxy_task finds its lock free and runs it there (p->wake_cpu == task_cpu). The model's fix exempts only a donor that is still is_blocked (a runnable one goes to the stopper, which preempts the proxy and moves it), and has the \"at home\" tests of proxy_needs_return and find_proxy_task require the CPU to be in the mask; --bug restores the reference",
		"inline switch-in check: task runs outside its affinity mask (invariant 2)"},
	{CoreDLTie, 0, "core-dl-tie", Finding, "open@014c4be7",
		"prio_less(a, b) is 'a has strictly lower priority' for every class but deadline, where it is !dl_time_before(a->dl.deadline, b->dl.deadline): equal deadlines are less both ways, so restart_multi (\"Tie-break prio towards the current CPU\") gives a deadline tie to whichever sibling it iterates last. sched_core_proxy_pick relies on the re-pick resolving as the first pick did: it swaps the owner in only if this CPU is still core_pick_leader with its donor as core_pick. Two SMT siblings whose deadline donors tie, each proxying for an owner of another cookie, never get there: each CPU's first pick leads and asks for the re-pick (sched_core_swap_pick: RETRY_TASK), the re-pick from that CPU hands max to the sibling's donor, the donor's cookie stands, the owner mismatches and the CPU is forced idle (not the leader any more), and its IPI sends the sibling through the same two steps. Neither owner runs; virtual time advances only by the picks. The model's fix makes the deadline compare strict (dl_time_before(b, a)), as the other classes are; --bug restores the reference. Needs --core-sched and deadline donors",
		"concurrent runs: runnable task starved on a forced-idle CPU (invariant 45); deterministic runs: no epoch completes (invariant 40)"},
	{CoreRTForceidle, 0, "core-rt-forceidle", Historical, "5.14 (7afbba119f0d \"sched: Fix priority inversion of cookied task with sibling\", Joel Fernandes; posted as -tip 10/32 and 12/32, Nov 2020)",
		"the core-wide pick before the fix went class by class (pick_task(rq, class, max, in_fi), the merged prio_less with min_vruntime_fi) and, when this CPU had no task of a class and need_sync was false (no core cookie, no forced idle), skipped that class for every sibling: an untagged RT task on a sibling was never seen, a tagged CFS task here became max, and the RT sibling was forced idle (Joel saw RT tasks force-idled constantly on ChromeOS). Any cookie will do on the RT side: the class is never looked at. The fix does the full unconstrained pick on this CPU first and takes the core-wide selection unless that pick is untagged. --bug restores the per-class selection. Needs --core-sched",
		"after every core-wide pick: no task left queued on a forced-idle sibling is of a higher class than the core's max (invariant 61)"},
	{CoreTreeStaleKey, 0, "core-tree-stale-key", Historical, "5.14 (-tip 11/32 \"sched: Enqueue task into core queue only after vruntime is updated\", Joel Fernandes, Nov 2020)",
		"enqueue_task called sched_core_enqueue before the class's enqueue_task, so a waking task was linked into rq->core_tree (ordered by priority at insertion, never re-sorted) with the vruntime it had before place_entity moved it (or a SCHED_DEADLINE task with its deadline before the replenishment): a long sleeper's old, small vruntime ranks it leftmost and sched_core_find picks it for a sibling ahead of tasks that are owed more (an artificial boost). The fix links it after the class enqueue. --bug restores the old order (a delayed task being requeued is then still sched_delayed and not linked at all). Needs --core-sched",
		"inline after enqueue_task: a linked task's key equals its key after the class enqueue; audit: core_tree holds exactly the queued, non-delayed tasks with a cookie (invariant 62)"},
	{ActivateExited, 0, "activate-exited", Finding, "open@014c4be7",
		"activate_blocked_waiters unlinks a parked waiter from its waking owner's list (__proxy_remove_from_sleeping_owner, under the owner's blocked_lock), drops that lock and only then takes the waiter's pi_lock in do_activate_blocked_waiter. In between, the waiter is an ordinary sleeper no list points at: the owner's unlock (or SIGKILL) wakes it, it runs, takes and releases the mutex and exits. Its last __schedule sets is_blocked and dequeues it, so every test of do_activate_blocked_waiter passes (is_blocked, not TASK_WAKING, off the runqueue, not on a CPU) and the dead task is enqueued, holding no reference: its struct is freed one grace period later while it is still queued, unless a pick reaches it first (find_proxy_task then sees blocked_on clear and proxy_deactivate takes it off). The model's fix also returns on TASK_DEAD, which set_special_state stores under pi_lock, so the test is stable there; --bug restores the reference",
		"inline in do_activate_blocked_waiter: the task activated is TASK_DEAD (invariant 63); audit: a queued task that exited (invariant 63, and 6), or freed (53)"},
	{CoreReplenishStalePick, 0, "core-replenish-stale-pick", Finding, "open@014c4be7",
		"dl_task_timer puts a throttled SCHED_DEADLINE task back with enqueue_task_dl(ENQUEUE_REPLENISH), not enqueue_task(): the task never left core_tree (throttling dequeues only the dl entity), so sched_core_enqueue is not called and core_task_seq does not move. A sibling's core-wide selection made while the task was throttled stays valid for the fast path (core_pick_seq == core_task_seq). When this CPU's __schedule has dropped the core-wide rq lock in find_proxy_task (proxy_migrate_task) and the timer fires meanwhile, the pick_again takes that stale pick. If it is idle, the idle task's TIF_NEED_RESCHED (set by proxy_resched_idle) makes the CPU re-pick at once and the DL task runs; if it is a runnable task of lower priority (a fair task the sibling chose), that task runs and picked: clears prev's flag, where the timer's resched_curr landed: the replenished DL task waits queued behind it with no reschedule pending, for as long as it keeps the CPU. The model's fix bumps core_task_seq after the replenish; --bug restores the reference. Needs --core-sched",
		"scenario finding_core_replenish_stale_pick_fair.txt (a DL task queued behind a fair one, no reschedule pending); in stress, only a wait past the liveness bound (invariant 30)"},
	{CoreThrottleStalePick, 0, "core-throttle-stale-pick", Finding, "open@014c4be7",
		"The mirror of F16. A sibling's core-wide selection picks this CPU's blocked donor (pick_task returns the donor; rq->curr is its proxy), and the reschedule-siblings loop keeps rq_i->core_pick because rq_i->curr != rq_i->core_pick, and IPIs. If this CPU's tick then runs out the donor's SCHED_DEADLINE budget before it reschedules (the proxy has preemption or interrupts off), update_curr_dl_se throttles with dequeue_dl_entity, not dequeue_task: sched_core_dequeue is not called and core_task_seq does not move. The fast path takes the stale pick, the throttled donor, put_prev_set_next_task returns at once (next == prev) and find_proxy_task runs the owner on the throttled donor's context: a DL scheduling context with no budget, off the dl tree and uncharged (update_curr_dl returns for an entity not on the dl_rq), until its dl_timer replenishes it, up to a period later. Mainline cannot get here: without proxy execution only a running task is charged, and a pick equal to rq_i->curr is cleared. The model's fix bumps core_task_seq at the throttle (as F16's does at the replenish); --bug restores the reference. Needs --core-sched and DL donors",
		"inline where the pick becomes rq->donor: it is a throttled SCHED_DEADLINE task (invariant 64)"},
	{CoreOffForcedIdle, 0, "core-off-forced-idle", Finding, "open@014c4be7",
		"Mainline core scheduling, not specific to proxy execution. A sibling that the last core-wide pick left forced idle, with tasks queued, waits for the core's next scheduling edge: the cookie changes that follow (sched_core_update_cookie) reschedule only a task that is on a CPU (its comment defers the forced-idle change \"to the next scheduling edge, rather than always forcing a reschedule here\") and dequeue with DEQUEUE_SAVE, so sched_core_dequeue's forced-idle reschedule does not fire. When the task running on the other sibling is untagged, nothing on the core reschedules; if the last cookie's put work then switches core scheduling off (__sched_core_put -> __sched_core_disable -> __sched_core_flip(false), which only clears core_enabled and core_forceidle_start), no core-wide pick and no task_tick_core will come either, and that CPU idles with runnable tasks until something else kicks it (a wake-up to it, a balancer's pull). The model's fix reschedules, in __sched_core_flip(false) under sched_core_lock, every sibling that is idle with tasks queued; --bug restores the reference. Needs --core-sched and a switch-off (the toggler takes every cookie away)",
		"audit: a CPU idles with tasks queued and no reschedule pending (invariant 30)"},
}

// raceOnly are the entries only the race detector catches.
var raceOnly = Set(0).With(IsBlockedPlainRead).With(BlockedOnPlainRead).With(CoreFIChargeStale).With(DelayedPlainRead)

// RaceOnly says that only the race detector catches b (a data race, no
// invariant): hunts need a race build and skip it otherwise.
func (b Bug) RaceOnly() bool { return raceOnly.Has(b.ID) }

// HuntSkip says why a hunt by invariants does not include b, or "".
func (b Bug) HuntSkip() string {
	switch {
	case b.RaceOnly():
		return "only the race detector catches it: 'proxysim bugs --hunt --race' hunts it, counting the data race report (docs/findings.md)"
	case b.ID == ProxyMigrateOffline:
		return "needs a throttled DL owner alone on a CPU as it goes down: a hunt with --only (16 CPUs) catches it 3/3 at a median of 3-4 s, but its worst run took 47 s, too close to the catalogue test's 60 s; internal/cpu/testdata/finding_proxy_migrate_offline.txt pins it deterministically"
	case b.ID == ActivateExited:
		return "needs a waiter to be woken, run and exit inside the few instructions between activate_blocked_waiters' unlock of the owner's blocked_lock and do_activate_blocked_waiter's pi_lock: 2 of 4 stress runs at 16 CPUs in 60 s (about 36 s each), 0 of 2 at 64 CPUs, and no deterministic strategy in 20 s; internal/cpu/testdata/finding_activate_exited.txt pins it deterministically"
	case b.ID == CoreReplenishStalePick:
		return "needs a DL task's dl_timer to fire between a sibling's core-wide selection that gave this CPU a lower-priority task and this CPU's re-pick after a proxy migration's lock drop; no invariant fires inline (the DL task waits queued behind the other): internal/cpu/testdata/finding_core_replenish_stale_pick_fair.txt pins it deterministically"
	case b.ID == NeedReschedCleared:
		return "with TIF_NEED_RESCHED a flag of the task, clearing prev's flag after find_proxy_task returned idle strands a CPU only when prev is the idle task, and the reference's paths that return idle to an idle prev (an owner migrating in, a hand-off pending) end in an attach or wake-up that kicks it: 0 of 1 hunt at 256 CPUs and 0 of 3 at 64 CPUs in 60 s each"
	case b.ID == DonorAffinityExempt:
		return "needs a mask change in the window between a proxy's unlock waking its donor and the next schedule: 1/3 runs at 64 CPUs in 60 s, 2/3 at 16 CPUs with --shuffle-interval 1ms in 30 s (4 s and 23 s); internal/cpu/testdata/finding_donor_affinity_exempt.txt pins it deterministically"
	}
	return ""
}

// Reference is the kernel code the model follows (docs/kernel-map.md).
const Reference = "johnstultz-work/linux-dev@014c4be7"

// ReferenceFull names every file of the reference with its commit.
const ReferenceFull = "johnstultz-work/linux-dev kernel/sched/core.c@014c4be7310b1b27276ea16789904f6134f19607, " +
	"kernel/locking/mutex.c@663edfe3177933d419c5a9e761a73cd089480291, kernel/sched/rt.c@84014e78ee6203655639bd5823bd89408f62a0a6 " +
	"(blocked_on and is_blocked as in core.c)"

func init() {
	if len(Catalogue) != int(NumBugs) {
		panic(fmt.Sprintf("bugs: catalogue has %d entries, want %d", len(Catalogue), NumBugs))
	}
	for i, b := range Catalogue {
		if int(b.ID) != i {
			panic("bugs: catalogue out of order at " + b.Name)
		}
	}
}

// Lookup finds a bug by name.
func Lookup(name string) (Bug, bool) {
	for _, b := range Catalogue {
		if b.Name == name {
			return b, true
		}
	}
	return Bug{}, false
}

// Parse turns names into a set, or names the first unknown one.
func Parse(names []string) (Set, error) {
	var s Set
	for _, n := range names {
		b, ok := Lookup(strings.TrimSpace(n))
		if !ok {
			all := make([]string, 0, len(Catalogue))
			for _, c := range Catalogue {
				all = append(all, c.Name)
			}
			sort.Strings(all)
			return 0, fmt.Errorf("unknown bug %q (see 'proxysim bugs'; known: %s)", n, strings.Join(all, ", "))
		}
		s = s.With(b.ID)
	}
	return s, nil
}

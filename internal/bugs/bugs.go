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
	LateActivationOnCPU   ID = iota // 1
	SkippedWaking                   // 2
	CPUBeforeOnRQ                   // 3
	FusedOnRQLoads                  // 4
	OwnerMidReturn                  // 5
	ActivationLivelock              // 6
	RunnableWithoutReturn           // 7
	DanglingDonor                   // 8
	StaleBalanceCallbacks           // 9
	WakeCPUOutsideMask              // 14
	OwnerCPUReadTwice               // 15
	NeedReschedCleared              // 16
	BlockTaskNotLast                // 18
	WakelistMigrating               // 25
	ParkDonorNotLink                // 19
	TTWUKeepsBlocked                // v22's wake path, fixed by v29's is_blocked
	EarlyActivation                 // finding F1 (model decision 8)
	ProxyKeepsDonor                 // finding F2 (model decision 5)
	IsBlockedPlainRead              // finding F4
	CoreschedStall                  // core scheduling v3: pick_task favours its first argument on ties
	CoreStealDonor                  // try_steal_cookie moves a proxy-exec donor (v30 1/7)
	WWNoClearBlockedOn              // 12: ww die/wound leave blocked_on set (v16 hang)
	WWNestedBlockedLock             // 24: ww die/wound under current's blocked_lock (v21 AB-BA)
	WWWoundWrongLock                // 23: wound clears the owner's blocked_on for the wrong lock (6.17-rc2 syzbot WARN)
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
		"an affinity change leaves wake_cpu on a CPU that is no longer allowed; return migration sends the task there",
		"inline switch-in check: task runs outside its mask (invariant 2), audit invariant 8"},
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
		"nothing reschedules a CPU whose proxy's donor chain is broken under it: a proxy that releases the lock its donor waits for hands it over and wakes the donor (ttwu_runnable's wakeup_preempt compares the donor with itself), and a wake-up of the donor or of a link of its chain (ttwu_runnable, proxy_needs_return: only a returned donor reschedules) leaves the proxy running on the scheduling context of a donor that is no longer blocked on it",
		"audit: curr is neither the donor nor the end of its chain, with no reschedule pending (invariant 4)"},
	{IsBlockedPlainRead, 0, "is-blocked-plain-read", Finding, "open@014c4be7",
		"do_activate_blocked_waiter reads p->is_blocked holding only p's pi_lock, while try_to_block_task (rq lock only) and sched_ttwu_pending's ttwu_do_wakeup (rq lock only) write it: a plain concurrent read and write (KCSAN's data race). The checks that follow (TASK_WAKING, on_rq, on_cpu) make the decision right either way; the fix is READ_ONCE/WRITE_ONCE",
		"race detector only (build with -race): DATA RACE between doActivateBlockedWaiter and tryToBlockTask or ttwuDoWakeup"},
	{CoreschedStall, 0, "coresched-stall", Historical, "core scheduling v3 (CORESCHED_STALL_FIX, Jun 2019)",
		"core scheduling v3's pick_task, when the core cookie is 0 (the max so far is untagged), keeps a tagged candidate unless prio_less(candidate, max): on a tie (v3's cross-CPU vruntime normalisation makes one-task-per-CPU compares tie) the tagged task wins, becomes max and forces the untagged sibling idle, for as long as the tagged side keeps running. --bug restores that comparison (NO_CORESCHED_STALL_FIX); the fix is max && !prio_less(max, candidate). Needs --core-sched v3",
		"audit: untagged runnable task starved on a forced-idle CPU beyond the bound (invariant 45)"},
	{CoreStealDonor, 0, "core-steal-donor", Historical, "v30 (\"sched/core: Don't steal a proxy-exec donor\", July 2026)",
		"try_steal_cookie, the forced-idle balancer, skipped only src->core_pick and src->curr: it could move src's rq->donor (a blocked donor a proxy runs for) or another mutex-blocked donor to a forced-idle CPU by a non-proxy path. The reference skips p == src->donor and task_is_blocked(p); --bug removes both skips (the v30 patch body was not read: the mechanism is inferred from its title and the reference's code). Needs --core-sched",
		"audit: donor not queued on its rq / stale donor reference (invariants 4, 5, 16); lost blocked chains (liveness)"},
	{WWNoClearBlockedOn, 12, "ww-no-clear-blocked-on", Historical, "v16",
		"ww_mutex die and wound only woke their victim (mainline's wake_up_process) and left its blocked_on in place: a Wound-Wait owner wounded while it waits on another ww_mutex keeps pointing at it, so the blocked_on chains hold a cycle (A waits for B's lock, B for A's) until B runs; v13..v16 made die/wound mark the victim (BO_WAKING), the reference clears blocked_on under its blocked_lock. --bug removes the clear (the wake-up stays)",
		"find_proxy_task's bounded walk: a blocked_on cycle (invariant 32) where the kernel's walk spun holding the rq lock (the hang); audit: chain cycle"},
	{WWNestedBlockedLock, 24, "ww-nested-blocked-lock", Historical, "v21",
		"before v21 __mutex_lock_common took current's blocked_lock right after wait_lock and held it across __ww_mutex_add_waiter and __ww_mutex_check_waiters, whose die and wound took the victim's blocked_lock nested (SINGLE_DEPTH_NESTING hides it from lockdep): a wounder holding its own blocked_lock meets an owner whose unlock holds its blocked_lock and nests the wounder's (it is the owner's stale blocked_donor), an AB-BA between two owners. --bug restores the older lock holding",
		"watchdog only: two CPUs spin on each other's blocked_lock (invariant 40, hang); not caught by the hunt yet (HuntSkip). TestWWNestedBlockedLockABBA (internal/cpu) shows its precondition deterministically: the wounder waits for the owner's blocked_lock holding its own"},
	{WWWoundWrongLock, 23, "ww-wound-wrong-lock", Historical, "6.17-rc2 (syzbot)",
		"__ww_mutex_wound cleared the wounded owner's blocked_on with __clear_task_blocked_on(owner, lock): the owner may be blocked on a different mutex, and the helper's WARN_ON_ONCE(blocked_on && blocked_on != lock) fired (syzbot, 6.17-rc2); the fix passes NULL. --bug passes the lock",
		"the helper's WARN: blocked_on cleared for another lock (invariant 43, mutex-misuse)"},
}

// raceOnly are the entries only the race detector catches.
var raceOnly = Set(0).With(IsBlockedPlainRead)

// RaceOnly says that only the race detector catches b (a data race, no
// invariant): hunts need a race build and skip it otherwise.
func (b Bug) RaceOnly() bool { return raceOnly.Has(b.ID) }

// HuntSkip says why a hunt by invariants does not include b, or "".
func (b Bug) HuntSkip() string {
	switch {
	case b.RaceOnly():
		return "only the race detector catches it (a race build and GORACE=halt_on_error=1; docs/findings.md)"
	case b.ID == CoreschedStall:
		return "its starvation shows in the stall table (README), but no invariant yet tells v3's pick from the fixed one (issue 17)"
	case b.ID == WWNestedBlockedLock:
		return "the AB-BA needs a wounder and an owner whose unlock nests the wounder as a stale blocked_donor at the same instant: not met in 3 x 60 s of 256-CPU stress (0/3); lockdep's nesting annotation hides it, as in the kernel"
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

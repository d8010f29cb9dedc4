package stats

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// Counter names a per-CPU event counter.
type Counter int

// The counters. Names (CounterNames) are the keys of the summary's
// "counters" object and, with a _total suffix, of the metrics.
const (
	ContextSwitches Counter = iota
	Wakeups
	WakeupsRemote // via a remote CPU's wake list (ttwu_queue_wakelist)
	WakeupsRunnable
	Preemptions
	Ticks
	IPIs
	MutexAcquires
	MutexContentions
	MutexHandoffs
	ProxyPickSameRQ
	ProxyMigrations
	ReturnMigrations
	ProxyActivates
	SleepingOwnerEnqueues
	BlockedWaiterActivations
	DonorHandoffs
	FindProxyTaskCalls
	FindProxyTaskRetries
	FindProxyTaskSpins
	ProxyReschedIdle
	ProxyDeactivations
	LockJugglingRetries
	OnCPUWaits
	RTPushes
	RTPulls
	Audits
	Exits
	JitterInjected
	Migrations            // every change of task_cpu (se.nr_migrations); by reason in CPU.MigrateBy
	MutexWaitsDone        // waits that ended in an acquisition (contentions minus these = tasks waiting)
	AffinityShuffles      // stress: masks moved by the shuffler
	CorePicks             // core scheduling: core-wide selections (pick_next_task's slow path)
	CoreFastPicks         // core scheduling: a sibling's core_pick taken (pick_next_task's fast path)
	CoreForcedIdle        // core scheduling: a CPU left idle with tasks queued (forced idle), by a core pick or a cookie swap
	CoreSiblingIPIs       // core scheduling: sibling reschedules sent by core picks
	CoreCookieSwaps       // core scheduling: a proxy's owner mismatched the core cookie (sched_core_swap_pick), resolved by forced idle or a core re-pick with the owner
	CoreCookieSets        // core scheduling: cookie changes (prctl PR_SCHED_CORE)
	CoreCookieSetsRunning // ... of a task executing at the time (sched_core_update_cookie reschedules it)
	CoreSteals            // core scheduling: tasks moved to a forced-idle CPU by try_steal_cookie
	MutexEINTR            // interruptible/killable mutex waits ended by a signal (-EINTR)
	SignalsSent           // signals queued (stress --signal-rate, scenario commands)
	SignalWakeups         // signal_wake_up's wake_up_state calls that woke the task
	SignalsHandled        // pending signals dequeued by their task at an instruction boundary
	SignalSleepAborts     // try_to_block_task found a signal pending for the sleep state: stays RUNNING
	SpuriousWakes         // stress --spurious-wake-rate: wake_up_process of a mutex waiter
	SpuriousWakeups       // ... that woke it (it was asleep)
	MutexSpins            // optimistic spins started before queueing (mutex_optimistic_spin, OSQ spinner)
	MutexWaiterSpins      // spins of the first waiter on the owner (blocked_on cleared, still listed)
	MutexSpinTurns        // turns of either spin (SpinCost of virtual time each)
	MutexSpinAcquires     // locks taken by spinning
	// SHARED_RUNQ (--sched-features SHARED_RUNQ; internal/rq/srq.go,
	// internal/cpu/srq.go).
	SRQPushes              // tasks linked on a shard (shared_runq_push_task)
	SRQRemoves             // tasks unlinked by dequeue / set_next (shared_runq_dequeue_task)
	SRQPullAttempts        // shared_runq_pick_next_task calls that looked at the shards
	SRQShardEmpty          // ... that found every shard empty (the lockless peek)
	SRQHeadNotAllowed      // pops whose shard head was not allowed on this CPU (left at the head: head-of-line blocking)
	SRQPops                // tasks popped off a shard
	SRQPulls               // popped tasks moved here (move_queued_task) or found here
	SRQRecheckDequeued     // failed recheck under task_rq_lock: no longer queued
	SRQRecheckOnCPU        // ... running (task_on_cpu)
	SRQRecheckNotAllowed   // ... no longer allowed here (v4)
	SRQRecheckBlocked      // ... mutex-blocked donor (task_is_blocked; proxy rule)
	SRQRecheckDonor        // ... rq->donor of its runqueue (task_current_donor; proxy rule)
	SRQRecheckMoved        // task_rq_lock found it on another runqueue than at the push (pulled from there)
	SRQRTArrived           // v4: an RT task arrived while this rq's lock was dropped (-1)
	SRQBailOverload        // bailout (a): rd->overload clear
	SRQBailAvgIdle         // bailout (b): avg_idle < max_newidle_lb_cost
	SRQBailShardOverload   // bailout (c): the shard's overload flag clear
	SRQBailTTWUPending     // bailout (d): ttwu_pending after a failed pull
	SRQDiscarded           // bailout (e): non-migratable heads popped and dropped
	SRQCostCharged         // bailout (f): pulls charged to max_newidle_lb_cost
	SRQSkipLLC             // bailout (g): newidle domains <= LLC skipped
	SRQDrained             // tasks unlinked by a drain (feature off, domain rebuild)
	SRQRebuilds            // shard reassignments (domain rebuilds) and toggles run by stress
	DomainRebuilds         // sched domain rebuilds (sched_update_domains: at boot, and stress --domain-rebuild-interval)
	HotplugOffline         // CPUs taken offline (sched_cpu_deactivate ... take_cpu_down completed)
	HotplugOnline          // CPUs brought back online (sched_cpu_activate)
	HotplugPushed          // tasks pushed off a dying CPU (balance_push's stopper, __balance_push_cpu_stop)
	FallbackRQ             // select_fallback_rq selections (select_task_rq's pick not allowed, balance_push)
	AffinityBroken         // select_fallback_rq found no allowed active CPU and widened the mask (do_set_cpus_allowed)
	MigrateDisabledProxy   // a migrate-disabled task proxy-migrated as a donor, or run as a proxy for a donor
	CoreFlips              // core scheduling: cores switched on or off at run time (__sched_core_flip, per core)
	CoreLockRetries        // core scheduling: raw_spin_rq_lock found rq_lockp() changed by a flip after taking it, and retried
	CoreForceIdleNs        // core scheduling: forced-idle CPU time (core_forceidle_count x elapsed ns), the accounting's reference
	CoreForceIdleChargedNs // core scheduling: forced-idle ns charged to tasks (__sched_core_account_forceidle, core_forceidle_sum)
	CoreFlipRepicks        // core scheduling: a core-wide pick found core scheduling switched off after a lock drop and picked the plain way (finding F7's re-check)
	WWWounds               // ww_mutex Wound-Wait: a younger holder's context wounded (__ww_mutex_wound)
	WWDies                 // ww_mutex Wait-Die: a younger waiter woken to die (__ww_mutex_die)
	WWEDEADLK              // ww_mutex waits that returned -EDEADLK (died, or wounded)
	WWBackoffs             // ww acquire contexts that backed off after -EDEADLK (released their locks)
	WWAcquires             // ww_mutexes taken under an acquire context
	ExitsWithRefs          // do_exit with references outstanding (a wake_q entry) or a proxy list pointing at the task
	Forks                  // tasks forked to replace an exited one (stress: respawn; wake_up_new_task at the barrier)
	DLThrottles            // SCHED_DEADLINE: budgets exhausted (dl_throttled set)
	DLReplenishments       // SCHED_DEADLINE: budgets refilled (replenish_dl_entity, a new period)
	DLPushes               // SCHED_DEADLINE: tasks pushed to a later-deadline CPU (push_dl_task)
	DLPulls                // SCHED_DEADLINE: tasks pulled from a DL-overloaded CPU (pull_dl_task)
	DLDonorPicks           // SCHED_DEADLINE: picks where a DL donor runs another task (its mutex owner)
	DLAdmissionFails       // SCHED_DEADLINE: sched_setattr refused by admission control (-EBUSY)
	DLAffinityRefused      // SCHED_DEADLINE: sched_setaffinity of a DL task, or sched_setattr to DL of a task, whose mask does not span the root domain (-EBUSY, -EPERM)
	DLEqualPreempts        // SCHED_DEADLINE: wake-ups with the donor's deadline that rescheduled it (check_preempt_equal_dl)
	DelayedDequeues        // EEVDF: sleep dequeues kept queued as sched_delayed (DELAY_DEQUEUE)
	DelayedRequeues        // EEVDF: delayed entities requeued by a wake-up (ttwu_runnable, ENQUEUE_DELAYED)
	DelayedBlocks          // EEVDF: delayed entities dequeued for good when picked (__block_task)
	FPTDelayedOwners       // find_proxy_task met an owner that is sched_delayed (treated as sleeping)
	EEVDFPicksProtected    // fair picks that kept curr for its protected slice (RUN_TO_PARITY)
	EEVDFPicksSearched     // fair picks whose earliest deadline was not eligible (pick_eevdf's heap search)
	NewidleBalances        // sched_balance_newidle calls (a CPU about to go idle looked for work)
	NewidleDomains         // ... domains it balanced (sched_balance_rq with CPU_NEWLY_IDLE)
	NewidlePulls           // ... tasks it pulled
	NewidleCutTTWUPending  // newidle balance given up at once: a wake-up was queued for the CPU (ttwu_pending)
	NewidleCutOverload     // ... no runqueue of the root domain had a task waiting (rd->overloaded clear)
	NewidleCutAvgIdle      // ... the CPU's average idle period was shorter than its smallest domain's max_newidle_lb_cost
	NewidleCutDomain       // newidle domain walks stopped before a domain: avg_idle < the walk's cost so far + that domain's max_newidle_lb_cost
	NewidleCostNs          // virtual ns spent in newidle domain walks (their cost, charged to nobody)
	BlockedWaiterDeadSkips // do_activate_blocked_waiter found the waiter TASK_DEAD and left it (finding F15's fix)
	// The proxy-execution series' overheads charged in virtual time
	// (percpu.ProxyCosts): the ns charged, and the events charged.
	ProxyCostNs
	// Kernel objects of the benchmark workloads (internal/cpu/wait.go,
	// pipe.go, sock.go, futex.go).
	WaitQueueSleeps // schedule() calls in a wait loop (wait_event, __lock_sock, sk_wait_data, futex_wait)
	WaitQueueWakes  // tasks a wake-up of a wait queue or futex woke (try_to_wake_up succeeded)
	PipeFull        // pipe_write found the ring full and waited on wr_wait
	PipeEmpty       // pipe_read found the pipe empty and waited on rd_wait
	SndbufWaits     // sock_alloc_send_pskb found sk_wmem_alloc at sk_sndbuf and waited
	SockEmpty       // a socket reader found its receive queue empty and waited
	SockLockWaits   // lock_sock found the socket owned by another task (__lock_sock)
	SockBacklog     // segments the receive path put on the backlog: the socket's user owned it
	FutexWaits      // FUTEX_WAIT calls
	FutexWakes      // FUTEX_WAKE calls
	USpinTurns      // turns of a user-space trylock spin (schbench's per-CPU lock)
	USpinRetries    // per-CPU user locks released again: the task had moved to another CPU
	// MutexFastMisses are mutex_lock calls whose fast path failed (the
	// lock was owned): contention, whether a spin or the slow path
	// resolved it (mutex_contentions counts the waiters queued).
	MutexFastMisses
	SockLocks     // lock_sock acquisitions (sk_lock.owned taken)
	IPIsTaken     // IPIs taken by their target (sendings that found IPIs already pending are taken together)
	IPILatenessNs // virtual ns between an IPI's sending and its taking, summed (the clocks' skew as messages see it)
	SchedIdleFast // __schedule(SM_IDLE) with nothing queued: the idle task stays, no pick_next_task
	CoreTagRounds // stress: core-scheduling toggler rounds (every cookie taken away, or given back)
	NumCounters
)

// CounterNames are the stable names of the counters.
var CounterNames = [NumCounters]string{
	"context_switches", "wakeups", "wakeups_remote", "wakeups_runnable", "preemptions", "ticks", "ipis",
	"mutex_acquires", "mutex_contentions", "mutex_handoffs",
	"proxy_pick_same_rq", "proxy_migrations", "return_migrations", "proxy_activates",
	"sleeping_owner_enqueues", "blocked_waiter_activations", "donor_handoffs",
	"find_proxy_task_calls", "find_proxy_task_retries", "find_proxy_task_spins", "proxy_resched_idle",
	"proxy_deactivations", "lock_juggling_retries", "on_cpu_waits", "rt_pushes", "rt_pulls", "audits",
	"exits", "jitter_injected", "migrations", "mutex_waits_done", "affinity_shuffles",
	"core_picks", "core_fast_picks", "core_forced_idle", "core_sibling_ipis", "core_cookie_swaps", "core_cookie_sets", "core_cookie_sets_running", "core_steals",
	"mutex_eintr", "signals_sent", "signal_wakeups", "signals_handled", "signal_sleep_aborts",
	"spurious_wakes", "spurious_wakeups",
	"mutex_spins", "mutex_waiter_spins", "mutex_spin_turns", "mutex_spin_acquires",
	"srq_pushes", "srq_removes", "srq_pull_attempts", "srq_shard_empty", "srq_head_not_allowed", "srq_pops", "srq_pulls",
	"srq_recheck_dequeued", "srq_recheck_on_cpu", "srq_recheck_not_allowed", "srq_recheck_blocked", "srq_recheck_donor",
	"srq_recheck_moved", "srq_rt_arrived",
	"srq_bail_overload", "srq_bail_avg_idle", "srq_bail_shard_overload", "srq_bail_ttwu_pending", "srq_discarded",
	"srq_cost_charged", "srq_skip_llc", "srq_drained", "srq_rebuilds",
	"domain_rebuilds",
	"hotplug_offline", "hotplug_online", "hotplug_pushed", "fallback_rq", "affinity_broken", "migrate_disabled_proxy",
	"core_flips", "core_lock_retries", "core_forceidle_ns", "core_forceidle_charged_ns",
	"core_flip_repicks",
	"ww_wounds", "ww_dies", "ww_edeadlk", "ww_backoffs", "ww_acquires", "exits_with_refs", "forks",
	"dl_throttles", "dl_replenishments", "dl_pushes", "dl_pulls", "dl_donor_picks", "dl_admission_rejections", "dl_affinity_refused",
	"dl_equal_preempts",
	"delayed_dequeues", "delayed_requeues", "delayed_blocks", "fpt_delayed_owners",
	"eevdf_picks_protected", "eevdf_picks_searched",
	"newidle_balances", "newidle_domains", "newidle_pulls",
	"newidle_cut_ttwu_pending", "newidle_cut_overload", "newidle_cut_avg_idle", "newidle_cut_domain", "newidle_cost_ns",
	"blocked_waiter_dead_skips",
	"proxy_cost_ns",
	"wait_queue_sleeps", "wait_queue_wakes", "pipe_full", "pipe_empty", "sndbuf_waits", "sock_empty",
	"sock_lock_waits", "sock_backlog", "futex_waits", "futex_wakes", "uspin_turns", "uspin_retries",
	"mutex_fastpath_misses", "sock_locks",
	"ipis_taken", "ipi_lateness_ns",
	"sched_idle_fast", "core_tag_rounds",
}

// HistBuckets is the number of buckets of a CPU histogram: bucket i counts
// values v with 2^(i-1) <= v < 2^i (bucket 0: v == 0); the last bucket is
// open-ended.
const HistBuckets = 12

// CPUHist names a per-CPU small-integer histogram.
type CPUHist int

const (
	HistChainLength CPUHist = iota // links walked per find_proxy_task call
	HistFPTSpins                   // spins per resolved pick: the links of every call of the pick, plus one per retry
	NumCPUHists
)

// CPU is one CPU's counter block. Written only by its own CPU goroutine;
// atomics so that scrapes and summaries read without stopping it.
type CPU struct {
	C    [NumCounters]atomic.Uint64
	H    [NumCPUHists][HistBuckets]atomic.Uint64
	HSum [NumCPUHists]atomic.Uint64
	// SimTime is this CPU's virtual clock, published for scrapes.
	SimTime atomic.Int64
	// IPILateMax is the longest lateness of an IPI taken by this CPU
	// (IPITaken), in virtual ns.
	IPILateMax atomic.Int64
	// MigrateBy counts task_cpu changes by reason (trace.MigrateReason):
	// the one source of every per-kind migration figure.
	MigrateBy [MaxReasons]atomic.Uint64
	// pickSpins accumulates the spins of a pick whose find_proxy_task
	// calls asked for a re-pick, until one resolves (FindProxyTaskDone).
	pickSpins uint64
}

// MaxReasons bounds the migration reasons CPU.MigrateBy can count.
const MaxReasons = 16

// Inc adds one to counter k.
func (s *CPU) Inc(k Counter) { Bump(&s.C[k], 1) }

// Add adds n to counter k.
func (s *CPU) Add(k Counter, n uint64) { Bump(&s.C[k], n) }

// IPITaken records an IPI taken late virtual ns after it was sent.
func (s *CPU) IPITaken(late int64) {
	s.Inc(IPIsTaken)
	s.Add(IPILatenessNs, uint64(late))
	if late > s.IPILateMax.Load() {
		s.IPILateMax.Store(late)
	}
}

// Observe records v in histogram h.
func (s *CPU) Observe(h CPUHist, v uint64) {
	b := bits.Len64(v)
	if b >= HistBuckets {
		b = HistBuckets - 1
	}
	Bump(&s.H[h][b], 1)
	Bump(&s.HSum[h], v)
}

// FindProxyTaskDone records one find_proxy_task call that walked links
// blocked_on links: HistChainLength gets the call; HistFPTSpins gets the
// pick once a call resolves it (resolved: a task to run, idle included),
// with the links of every call of the pick plus one per retry. A pick
// whose retries end in a pick that needs no proxy carries its spins into
// the next resolved one.
func (s *CPU) FindProxyTaskDone(links uint64, resolved bool) {
	s.Observe(HistChainLength, links)
	s.pickSpins += links
	if !resolved {
		s.pickSpins++
		return
	}
	s.Observe(HistFPTSpins, s.pickSpins)
	s.pickSpins = 0
}

// Sum adds up counter k over CPUs.
func Sum(cpus []*CPU, k Counter) uint64 {
	var t uint64
	for _, c := range cpus {
		t += c.C[k].Load()
	}
	return t
}

// Hist is a log-linear latency histogram (8 sub-buckets per power of two,
// about 6% relative error) with exact max and count. Not safe for
// concurrent use: each belongs to one task and is written by whoever owns
// the task at that moment.
type Hist struct {
	B     [64 * 8]uint32
	N     uint64
	Max   int64
	Total int64
}

func histIndex(v int64) int {
	if v < 8 {
		if v < 0 {
			v = 0
		}
		return int(v)
	}
	e := bits.Len64(uint64(v)) - 1 // >= 3
	m := (uint64(v) >> (e - 3)) & 7
	return (e-2)*8 + int(m)
}

func histLower(i int) int64 {
	if i < 8 {
		return int64(i)
	}
	e := i/8 + 2
	m := int64(i % 8)
	return (8 + m) << (e - 3)
}

// Add records a value.
func (h *Hist) Add(v int64) {
	if v < 0 {
		v = 0
	}
	h.B[histIndex(v)]++
	h.N++
	h.Total += v
	if v > h.Max {
		h.Max = v
	}
}

// Merge adds o into h.
func (h *Hist) Merge(o *Hist) {
	for i, c := range o.B {
		h.B[i] += c
	}
	h.N += o.N
	h.Total += o.Total
	if o.Max > h.Max {
		h.Max = o.Max
	}
}

// QuantileBound returns an upper bound of quantile q (0..1): the largest
// value of the bucket holding it (buckets are about 12% wide), capped at
// Max. The quantile is at most this; printed figures say so ("<= X").
func (h *Hist) QuantileBound(q float64) int64 {
	if h.N == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.N)))
	if rank == 0 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.B {
		seen += uint64(c)
		if seen >= rank {
			if i+1 >= len(h.B) {
				return h.Max
			}
			return min(histLower(i+1)-1, h.Max)
		}
	}
	return h.Max
}

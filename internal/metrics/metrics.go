package metrics

import (
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/trace"
)

// Namespace prefixes every metric of this package.
const Namespace = "proxysim"

// Source is what a scrape reads from a running machine. *cpu.Machine
// satisfies it. Every method must be safe to call while the machine runs.
type Source interface {
	CPUStats() []*stats.CPU
	LockStats() []*spinlock.CPU
	ViolationCounts() map[check.Invariant]uint64
	EventCount() uint64
	NrRunning() []int
}

// RunInfo describes the run behind a Source (proxysim_run_info and
// proxysim_shards).
type RunInfo struct {
	Workload  string
	Seed      uint64
	ProxyExec bool
	Shard     int
	Shards    int
	// SkewBoundNs is the run's clock skew bound (virtual ns; 0: not
	// exported), the exactness of every latency the run measures
	// (proxysim_clock_skew_bound_seconds).
	SkewBoundNs int64
}

// Options configure a Collector.
type Options struct {
	// PerCPU adds a few per-CPU counter and gauge families
	// (proxysim_cpu_*{cpu}). Histograms are never per-CPU.
	PerCPU bool
}

// counterNameOverride renames a stats counter where the metric has a
// name of its own (without the proxysim_ prefix and the _total suffix).
var counterNameOverride = map[string]string{
	"proxy_pick_same_rq": "proxy_picks",
}

// counterSeconds lists stats counters of nanoseconds, exported in
// seconds (Prometheus base units) under these names.
var counterSeconds = map[string]string{
	"core_forceidle_ns":         "core_forceidle_seconds",
	"core_forceidle_charged_ns": "core_forceidle_charged_seconds",
	"newidle_cost_ns":           "newidle_cost_seconds",
	"proxy_cost_ns":             "proxy_cost_seconds",
	"ipi_lateness_ns":           "ipi_lateness_seconds",
}

// counterSkip lists stats counters exported some other way.
var counterSkip = map[string]string{
	// Every task_cpu change is counted, by reason, in
	// proxysim_migrations_total{reason} (from MigrateBy); the sum over
	// reasons equals this counter.
	"migrations": "proxysim_migrations_total{reason}",
	// The per-kind migration figures (load balance, affinity, chain, ...)
	// come only from the reasons, so that they cannot disagree.
}

// counterHelp is the help text of each stats counter's metric.
var counterHelp = map[string]string{
	"context_switches":           "Context switches (the schedule() path switching to another task), as in /proc/schedstat.",
	"wakeups":                    "Task wakeups (try_to_wake_up making a task runnable).",
	"wakeups_remote":             "Wakeups queued on a remote CPU's wake list (ttwu_queue_wakelist).",
	"wakeups_runnable":           "Wakeups of tasks that were still queued (ttwu_runnable).",
	"preemptions":                "Preemptions of the running task (wakeup or tick preemption).",
	"ticks":                      "Scheduler ticks handled.",
	"ipis":                       "Inter-processor interrupts sent (reschedule and wake-list IPIs).",
	"mutex_acquires":             "Kernel mutex acquisitions.",
	"mutex_contentions":          "Mutex lock attempts that had to wait because the mutex was owned.",
	"mutex_handoffs":             "Mutex hand-offs to a waiter on unlock.",
	"proxy_pick_same_rq":         "Picks that ran a lock owner on behalf of a blocked donor queued on the same runqueue (proxy execution).",
	"proxy_migrations":           "Calls of proxy_migrate_task that moved a blocked donor (with the donors queued behind it) to its lock owner's CPU; the tasks moved are proxysim_migrations_total{reason=~\"proxy|chain\"}.",
	"return_migrations":          "Woken donors away from home dequeued by proxy_needs_return (block_task(TASK_WAKING)) for a full wakeup; the moves that follow are proxysim_migrations_total{reason=\"return\"} (none when the wakeup lands where the task is).",
	"proxy_activates":            "Links find_proxy_task found blocked on a free lock away from home and woke with proxy_activate; the moves that follow are part of proxysim_migrations_total{reason=\"return\"}.",
	"sleeping_owner_enqueues":    "Blocked donors parked on a sleeping lock owner.",
	"blocked_waiter_activations": "Parked waiters re-activated when their lock owner woke.",
	"blocked_waiter_dead_skips":  "Parked waiters that had exited by the time their owner's wake-up activated them, left alone (finding F15's fix).",
	"sched_idle_fast":            "Reschedules of the idle task with nothing queued (__schedule(SM_IDLE)): no pick, the idle task stays.",
	"core_tag_rounds":            "Stress: core-scheduling toggler rounds (every task's cookie taken away, or given back).",
	"donor_handoffs":             "Mutex hand-offs to the blocked donor that was running the owner (blocked_donor).",
	"find_proxy_task_calls":      "Calls of find_proxy_task.",
	"find_proxy_task_retries":    "find_proxy_task calls that resolved no task and forced a re-pick.",
	"find_proxy_task_spins":      "Steps along blocked_on chains taken by find_proxy_task, summed over calls (the sum of proxysim_proxy_chain_length).",
	"proxy_resched_idle":         "Times proxy execution fell back to running idle (proxy_resched_idle).",
	"proxy_deactivations":        "Blocked donors deactivated instead of proxied (proxy_deactivate).",
	"lock_juggling_retries":      "Retries after dropping and retaking runqueue locks (lock-juggling windows).",
	"on_cpu_waits":               "Waits for a task's on_cpu to clear before moving or waking it.",
	"rt_pushes":                  "RT tasks pushed to another CPU.",
	"rt_pulls":                   "RT tasks pulled from another CPU.",
	"audits":                     "Stop-the-world invariant audits run.",
	"exits":                      "Task exits.",
	"jitter_injected":            "Stress jitter delays injected at lock yield points.",
	"migrations":                 "Task CPU changes (se.nr_migrations).",
	"mutex_waits_done":           "Mutex waits that ended in an acquisition.",
	"affinity_shuffles":          "Affinity masks changed by the stress shuffler.",
	"core_picks":                 "Core scheduling: core-wide selections (pick_next_task's slow path).",
	"core_fast_picks":            "Core scheduling: picks a sibling made for this CPU, taken on the fast path.",
	"core_forced_idle":           "Core scheduling: CPUs left idle with tasks queued (forced idle).",
	"core_sibling_ipis":          "Core scheduling: sibling reschedules sent by core picks.",
	"core_cookie_swaps":          "Core scheduling: proxy owners whose cookie did not match the core's (sched_core_swap_pick).",
	"core_cookie_sets":           "Core scheduling: task cookie changes (prctl PR_SCHED_CORE).",
	"core_cookie_sets_running":   "Core scheduling: cookie changes of a task executing at the time, which reschedules its CPU.",
	"core_steals":                "Core scheduling: tasks moved to a forced-idle CPU by try_steal_cookie.",
	"core_flips":                 "Core scheduling: cores switched on or off at run time (__sched_core_flip, per core).",
	"core_lock_retries":          "Core scheduling: rq lock acquires that found rq_lockp() changed by a flip and retried (raw_spin_rq_lock_nested).",
	"core_forceidle_ns":          "Core scheduling: forced-idle CPU time in seconds (core_forceidle_count times elapsed time).",
	"core_forceidle_charged_ns":  "Core scheduling: forced-idle seconds charged to tasks (__sched_core_account_forceidle).",
	"core_flip_repicks":          "Core scheduling: core-wide picks that found core scheduling switched off after a lock drop and picked the plain way (finding F7).",
	"mutex_eintr":                "Interruptible or killable mutex waits ended by a signal (-EINTR).",
	"signals_sent":               "Signals queued on tasks (stress --signal-rate).",
	"signal_wakeups":             "Signal deliveries whose wake-up (signal_wake_up) woke a sleeping task.",
	"signals_handled":            "Pending signals dequeued by their task on its way back to user mode.",
	"signal_sleep_aborts":        "Sleeps cut short in try_to_block_task by a pending signal (signal_pending_state).",
	"spurious_wakes":             "Spurious wake_up_process calls on mutex waiters (stress --spurious-wake-rate).",
	"domain_rebuilds":            "Sched domain rebuilds (sched_update_domains): one at boot, more with stress --domain-rebuild-interval.",
	"spurious_wakeups":           "Spurious wake-ups of mutex waiters that found the waiter asleep and woke it.",
	"mutex_spins":                "Optimistic spins on a running mutex owner before queueing (mutex_optimistic_spin).",
	"mutex_waiter_spins":         "Optimistic spins of the first mutex waiter on the owner (blocked_on cleared, still on the wait list).",
	"mutex_spin_turns":           "Turns of mutex optimistic spin loops.",
	"mutex_spin_acquires":        "Mutexes taken by optimistic spinning.",
	"srq_pushes":                 "SHARED_RUNQ: tasks linked on a shared_runq shard (shared_runq_push_task).",
	"srq_removes":                "SHARED_RUNQ: tasks unlinked from a shard by dequeue or set_next_entity.",
	"srq_pull_attempts":          "SHARED_RUNQ: newidle pulls that looked at the shards (shared_runq_pick_next_task).",
	"srq_shard_empty":            "SHARED_RUNQ: pull attempts that found every shard empty.",
	"srq_head_not_allowed":       "SHARED_RUNQ: pops whose shard head was not allowed on the CPU (left at the head).",
	"srq_pops":                   "SHARED_RUNQ: tasks popped off a shard.",
	"srq_pulls":                  "SHARED_RUNQ: popped tasks that passed the rechecks under task_rq_lock and were moved here.",
	"srq_recheck_dequeued":       "SHARED_RUNQ: pulls refused under task_rq_lock: the task was no longer queued.",
	"srq_recheck_on_cpu":         "SHARED_RUNQ: pulls refused under task_rq_lock: the task was running (task_on_cpu).",
	"srq_recheck_not_allowed":    "SHARED_RUNQ: pulls refused under task_rq_lock: the CPU no longer allowed (v4).",
	"srq_recheck_blocked":        "SHARED_RUNQ: pulls refused under task_rq_lock: mutex-blocked donor (task_is_blocked).",
	"srq_recheck_donor":          "SHARED_RUNQ: pulls refused under task_rq_lock: the runqueue's donor (task_current_donor).",
	"srq_recheck_moved":          "SHARED_RUNQ: popped tasks that task_rq_lock found on another runqueue than at the pop.",
	"srq_rt_arrived":             "SHARED_RUNQ: v4 pulls that returned -1 because an RT task arrived while the rq lock was dropped.",
	"srq_bail_overload":          "SHARED_RUNQ bailout (a): newidle ended because rd->overload was clear.",
	"srq_bail_avg_idle":          "SHARED_RUNQ bailout (b): newidle ended because avg_idle < max_newidle_lb_cost.",
	"srq_bail_shard_overload":    "SHARED_RUNQ bailout (c): shards skipped because their overload flag was clear.",
	"srq_bail_ttwu_pending":      "SHARED_RUNQ bailout (d): newidle ended after a failed pull because a wakeup was pending.",
	"srq_discarded":              "SHARED_RUNQ bailout (e): non-migratable shard heads popped and dropped.",
	"srq_cost_charged":           "SHARED_RUNQ bailout (f): pulls whose cost was charged to max_newidle_lb_cost.",
	"srq_skip_llc":               "SHARED_RUNQ bailout (g) and v4: newidle domains <= LLC skipped.",
	"srq_drained":                "SHARED_RUNQ: tasks unlinked by a drain (feature off, domain rebuild).",
	"srq_rebuilds":               "SHARED_RUNQ stress: domain rebuilds and feature toggles run.",
	"hotplug_offline":            "CPU hotplug: CPUs taken offline (sched_cpu_deactivate, balance_push, take_cpu_down).",
	"hotplug_online":             "CPU hotplug: CPUs brought back online (sched_cpu_activate).",
	"hotplug_pushed":             "CPU hotplug: tasks pushed off a dying CPU by balance_push's stopper (__balance_push_cpu_stop).",
	"fallback_rq":                "select_fallback_rq calls: a wake-up's or balance_push's CPU was not allowed (inactive or offline).",
	"affinity_broken":            "select_fallback_rq found no allowed active CPU and widened the task's mask to every CPU (\"no longer affine\").",
	"migrate_disabled_proxy":     "Migrate-disabled tasks in proxy execution: donors proxy-migrated (their execution context returns through the wake-up), and owners run as a proxy.",
	"ww_wounds":                  "ww_mutex Wound-Wait wounds: a younger holder's acquire context wounded (__ww_mutex_wound).",
	"ww_dies":                    "ww_mutex Wait-Die: younger waiters holding locks woken to die (__ww_mutex_die).",
	"ww_edeadlk":                 "ww_mutex lock calls that returned -EDEADLK (the context died or was wounded).",
	"ww_backoffs":                "ww acquire contexts that backed off (released their ww_mutexes) after -EDEADLK or -EINTR.",
	"ww_acquires":                "ww_mutexes taken under an acquire context.",
	"exits_with_refs":            "Task exits while a reference (a pending wake_q entry) or a proxy list (parked waiters on it, its place on a sleeping owner's list) still points at the task.",
	"forks":                      "Tasks forked (wake_up_new_task) to replace a task that exited and was reaped (stress respawn of SIGKILLed tasks, at the barrier).",
	"dl_throttles":               "SCHED_DEADLINE budgets exhausted: the task throttled until its replenishment timer.",
	"dl_replenishments":          "SCHED_DEADLINE budget refills (replenish_dl_entity, or a new period from the CBS wakeup rule).",
	"dl_pushes":                  "SCHED_DEADLINE tasks pushed to a CPU running a later deadline (push_dl_task).",
	"dl_pulls":                   "SCHED_DEADLINE tasks pulled from a DL-overloaded CPU (pull_dl_task).",
	"dl_donor_picks":             "Picks in which a SCHED_DEADLINE donor runs another task (its mutex owner) on its budget.",
	"dl_admission_rejections":    "sched_setattr calls refused by SCHED_DEADLINE admission control (-EBUSY).",
	"dl_equal_preempts":          "SCHED_DEADLINE wake-ups with the donor's deadline that rescheduled it: the donor could move, the woken task could not (check_preempt_equal_dl).",
	"dl_affinity_refused":        "SCHED_DEADLINE affinity refusals: sched_setaffinity of a deadline task, or sched_setattr to deadline of a task, whose mask does not cover the root domain (-EBUSY, -EPERM).",
	"delayed_dequeues":           "EEVDF sleep dequeues kept queued as sched_delayed (DELAY_DEQUEUE: the sleeper was not eligible).",
	"delayed_requeues":           "Delayed fair tasks requeued by a wake-up in ttwu_runnable (ENQUEUE_DELAYED).",
	"delayed_blocks":             "Delayed fair tasks dequeued for good when picked (pick_next_entity, __block_task).",
	"fpt_delayed_owners":         "find_proxy_task walks that met a lock owner that is sched_delayed (treated as a sleeping owner).",
	"eevdf_picks_protected":      "Fair picks (pick_eevdf) that kept the running entity for its protected slice (RUN_TO_PARITY).",
	"eevdf_picks_searched":       "Fair picks (pick_eevdf) whose earliest-deadline entity was not eligible (the heap search).",
	"newidle_balances":           "Newidle balance calls (sched_balance_newidle): a CPU about to go idle looked for work.",
	"newidle_domains":            "Sched domains balanced by newidle balance (sched_balance_rq with CPU_NEWLY_IDLE).",
	"newidle_pulls":              "Tasks pulled by newidle balance.",
	"newidle_cut_ttwu_pending":   "Newidle balances given up at once because a wake-up was queued for the CPU (ttwu_pending).",
	"newidle_cut_overload":       "Newidle balances given up at once because no runqueue had a task waiting (rd->overloaded clear).",
	"newidle_cut_avg_idle":       "Newidle balances given up at once because the CPU's average idle period was shorter than its smallest domain's max_newidle_lb_cost.",
	"newidle_cut_domain":         "Newidle domain walks stopped before a larger domain: avg_idle below the walk's cost so far plus that domain's max_newidle_lb_cost.",
	"newidle_cost_ns":            "Virtual seconds spent by newidle balancing in its domain walks (charged to nobody).",
	"proxy_cost_ns":              "Virtual seconds charged for the proxy-execution series' own work where it happens (find_proxy_task links, re-picks, proxy and return migrations, sleeping-owner parking and activation).",
	"wait_queue_sleeps":          "Benchmark paths: schedule() calls in a wait loop (wait_event, __lock_sock, sk_wait_data, futex_wait).",
	"wait_queue_wakes":           "Benchmark paths: tasks woken by a wake-up of a wait queue or a FUTEX_WAKE.",
	"pipe_full":                  "pipe_write found the pipe's ring full and waited on wr_wait.",
	"pipe_empty":                 "pipe_read found the pipe empty and waited on rd_wait.",
	"sndbuf_waits":               "sock_alloc_send_pskb found sk_wmem_alloc at sk_sndbuf and waited (sock_wait_for_wmem).",
	"sock_empty":                 "A socket reader (unix_stream_read_generic, tcp_recvmsg) found its receive queue empty and waited.",
	"sock_lock_waits":            "lock_sock found the socket owned by another task and slept on sk_lock.wq (__lock_sock).",
	"sock_backlog":               "Segments the loopback receive path put on the socket's backlog because its user owned it.",
	"futex_waits":                "FUTEX_WAIT calls.",
	"futex_wakes":                "FUTEX_WAKE calls.",
	"uspin_turns":                "Turns of a user-space trylock spin (schbench's per-CPU lock).",
	"uspin_retries":              "Per-CPU user locks released again because the task had moved to another CPU (schbench's sched_getcpu re-check).",
	"mutex_fastpath_misses":      "mutex_lock calls whose fast path failed because the lock was owned: contention resolved by spinning or by the slow path.",
	"sock_locks":                 "lock_sock acquisitions: a socket's sk_lock.owned taken (a spinlock and a flag, not a mutex).",
	"ipis_taken":                 "IPIs taken by their target CPU (several sent before the target takes them are taken together).",
	"ipi_lateness_ns":            "Virtual seconds between the sending of an IPI and its taking by the target, summed over proxysim_ipis_taken_total: the clocks' skew as messages between CPUs see it (bounded by proxysim_clock_skew_bound_seconds plus one step).",
}

// CounterHelp returns the help text of stats counter k's metric. A counter
// added to stats without an entry in counterHelp still gets a generic one
// (and fails TestCounterNames until it has its own).
func CounterHelp(k stats.Counter) string {
	n := stats.CounterNames[k]
	if h := counterHelp[n]; h != "" {
		return h
	}
	return "Simulator counter " + n + ", summed over CPUs."
}

// CounterInSeconds says whether stats counter k (nanoseconds) is exported
// in seconds.
func CounterInSeconds(k stats.Counter) bool {
	_, ok := counterSeconds[stats.CounterNames[k]]
	return ok
}

// CounterMetricName returns the metric name of stats counter k, or "" if
// k is exported some other way (see counterSkip).
func CounterMetricName(k stats.Counter) string {
	if k < 0 || k >= stats.NumCounters {
		return ""
	}
	n := stats.CounterNames[k]
	if _, skip := counterSkip[n]; skip {
		return ""
	}
	if o, ok := counterNameOverride[n]; ok {
		n = o
	}
	if o, ok := counterSeconds[n]; ok {
		n = o
	}
	return Namespace + "_" + n + "_total"
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// state is what SetSource swaps in.
type state struct {
	src  Source
	info RunInfo
}

// Collector is a prometheus.Collector over a Source. The zero value is not
// usable: use NewCollector.
type Collector struct {
	opts  Options
	state atomic.Pointer[state]

	counters         [stats.NumCounters]*prometheus.Desc // nil where skipped
	migrations       *prometheus.Desc
	violations       *prometheus.Desc
	simTime          *prometheus.Desc
	events           *prometheus.Desc
	runnable         *prometheus.Desc
	blocked          *prometheus.Desc
	lockAcquisitions *prometheus.Desc
	lockContended    *prometheus.Desc
	fptSpinsHist     *prometheus.Desc
	chainHist        *prometheus.Desc
	lockSpinsHist    *prometheus.Desc
	runInfo          *prometheus.Desc
	shards           *prometheus.Desc
	skewBound        *prometheus.Desc
	ipiLateMax       *prometheus.Desc

	cpuSwitches   *prometheus.Desc
	cpuMigrations *prometheus.Desc
	cpuProxyMigr  *prometheus.Desc
	cpuSimTime    *prometheus.Desc
	cpuNrRunning  *prometheus.Desc
}

// NewCollector returns a collector with no source: it exports nothing
// until SetSource.
func NewCollector(o Options) *Collector {
	c := &Collector{opts: o}
	for k := stats.Counter(0); k < stats.NumCounters; k++ {
		if name := CounterMetricName(k); name != "" {
			c.counters[k] = desc(name, CounterHelp(k))
		}
	}
	p := Namespace + "_"
	c.migrations = desc(p+"migrations_total", "Task CPU changes (sched_migrate_task), by reason.", "reason")
	c.violations = desc(p+"invariant_violations_total", "Invariant violations detected, by invariant (0 for every invariant not violated).", "invariant")
	c.simTime = desc(p+"sim_time_seconds_total", "Simulated (virtual) time elapsed: the furthest CPU clock, in seconds.")
	c.events = desc(p+"events_total", "Events recorded by the flight recorder.")
	c.runnable = desc(p+"runnable_tasks", "Runnable tasks: the sum of every CPU's nr_running.")
	c.blocked = desc(p+"blocked_tasks", "Tasks waiting on a kernel mutex: contentions minus waits that ended, floored at 0.")
	c.lockAcquisitions = desc(p+"spinlock_acquisitions_total", "Raw spinlock acquisitions (runqueue, pi, wait and blocked locks).")
	c.lockContended = desc(p+"spinlock_contentions_total", "Raw spinlock acquisitions whose first try failed.")
	c.fptSpinsHist = desc(p+"find_proxy_task_spins", "Spins per resolved proxy pick: the blocked_on links walked by every find_proxy_task call of the pick, plus one per call that forced a re-pick.")
	c.chainHist = desc(p+"proxy_chain_length", "blocked_on chain links walked per find_proxy_task call.")
	c.lockSpinsHist = desc(p+"spinlock_spins_per_acquisition", "Failed tries per contended-path raw spinlock acquisition (0 when the first try succeeded).")
	c.runInfo = desc(p+"run_info", "Information about the run; the value is always 1.", "workload", "seed", "proxy_exec", "shard")
	c.shards = desc(p+"shards", "Number of shards of the run this process belongs to.")
	c.skewBound = desc(p+"clock_skew_bound_seconds", "The run's clock skew bound (--max-skew, at most --epoch), virtual seconds: a latency between events on two CPUs is exact to this, plus one step, per cross-CPU event it spans.")
	c.ipiLateMax = desc(p+"ipi_lateness_max_seconds", "The longest a taken IPI waited between its sending and its taking, virtual seconds: the largest clock skew a message between CPUs met (above proxysim_clock_skew_bound_seconds only by one step).")
	if o.PerCPU {
		c.cpuSwitches = desc(p+"cpu_context_switches_total", "Context switches of one CPU.", "cpu")
		c.cpuMigrations = desc(p+"cpu_migrations_total", "Task CPU changes counted by one CPU.", "cpu")
		c.cpuProxyMigr = desc(p+"cpu_proxy_migrations_total", "Proxy migrations done by one CPU.", "cpu")
		c.cpuSimTime = desc(p+"cpu_sim_time_seconds", "One CPU's virtual clock, in seconds.", "cpu")
		c.cpuNrRunning = desc(p+"cpu_nr_running", "One CPU's nr_running.", "cpu")
	}
	return c
}

// SetSource atomically swaps the source and run description that the next
// scrapes read. A nil src leaves only the static series (proxysim_run_info
// and proxysim_shards).
func (c *Collector) SetSource(src Source, info RunInfo) {
	c.state.Store(&state{src: src, info: info})
}

func (c *Collector) all() []*prometheus.Desc {
	out := []*prometheus.Desc{
		c.migrations, c.violations, c.simTime, c.events, c.runnable, c.blocked,
		c.lockAcquisitions, c.lockContended, c.fptSpinsHist, c.chainHist, c.lockSpinsHist,
		c.runInfo, c.shards, c.skewBound, c.ipiLateMax,
	}
	for _, d := range c.counters {
		if d != nil {
			out = append(out, d)
		}
	}
	if c.opts.PerCPU {
		out = append(out, c.cpuSwitches, c.cpuMigrations, c.cpuProxyMigr, c.cpuSimTime, c.cpuNrRunning)
	}
	return out
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.all() {
		ch <- d
	}
}

// Collect implements prometheus.Collector. It only loads atomics (and
// takes the violation reporter's lock through ViolationCounts).
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.state.Load()
	if st == nil {
		return
	}
	info := st.info
	ch <- prometheus.MustNewConstMetric(c.runInfo, prometheus.GaugeValue, 1,
		info.Workload, strconv.FormatUint(info.Seed, 10), strconv.FormatBool(info.ProxyExec), strconv.Itoa(info.Shard))
	ch <- prometheus.MustNewConstMetric(c.shards, prometheus.GaugeValue, float64(info.Shards))
	if st.src == nil {
		return
	}
	src := st.src
	cpus := src.CPUStats()
	if info.SkewBoundNs > 0 {
		ch <- prometheus.MustNewConstMetric(c.skewBound, prometheus.GaugeValue, float64(info.SkewBoundNs)/1e9)
	}
	var late int64
	for _, s := range cpus {
		late = max(late, s.IPILateMax.Load())
	}
	ch <- prometheus.MustNewConstMetric(c.ipiLateMax, prometheus.GaugeValue, float64(late)/1e9)

	for k := stats.Counter(0); k < stats.NumCounters; k++ {
		if c.counters[k] == nil {
			continue
		}
		v := float64(stats.Sum(cpus, k))
		if _, ns := counterSeconds[stats.CounterNames[k]]; ns {
			v /= 1e9
		}
		ch <- prometheus.MustNewConstMetric(c.counters[k], prometheus.CounterValue, v)
	}
	for r := trace.MigrateReason(0); r < trace.NumReasons && int(r) < stats.MaxReasons; r++ {
		var n uint64
		for _, s := range cpus {
			n += s.MigrateBy[r].Load()
		}
		ch <- prometheus.MustNewConstMetric(c.migrations, prometheus.CounterValue, float64(n), r.String())
	}

	counts := src.ViolationCounts()
	for _, inv := range check.AllInvariants() {
		ch <- prometheus.MustNewConstMetric(c.violations, prometheus.CounterValue, float64(counts[inv]), inv.Name())
	}
	known := map[check.Invariant]bool{}
	for _, inv := range check.AllInvariants() {
		known[inv] = true
	}
	for inv, n := range counts {
		if !known[inv] { // an invariant without a name: still count it
			ch <- prometheus.MustNewConstMetric(c.violations, prometheus.CounterValue, float64(n), inv.Name())
		}
	}

	var maxTime int64
	for _, s := range cpus {
		if t := s.SimTime.Load(); t > maxTime {
			maxTime = t
		}
	}
	ch <- prometheus.MustNewConstMetric(c.simTime, prometheus.CounterValue, float64(maxTime)/1e9)
	ch <- prometheus.MustNewConstMetric(c.events, prometheus.CounterValue, float64(src.EventCount()))

	nr := src.NrRunning()
	var runnable int
	for _, n := range nr {
		if n > 0 {
			runnable += n
		}
	}
	ch <- prometheus.MustNewConstMetric(c.runnable, prometheus.GaugeValue, float64(runnable))
	// Waits done first: every wait counted done had its contention counted
	// before, so the contentions loaded afterwards include it.
	done := stats.Sum(cpus, stats.MutexWaitsDone)
	contentions := stats.Sum(cpus, stats.MutexContentions)
	var blocked uint64
	if contentions > done {
		blocked = contentions - done
	}
	ch <- prometheus.MustNewConstMetric(c.blocked, prometheus.GaugeValue, float64(blocked))

	ch <- cpuHist(c.fptSpinsHist, cpus, stats.HistFPTSpins)
	ch <- cpuHist(c.chainHist, cpus, stats.HistChainLength)

	locks := src.LockStats()
	var acq, cont, spins uint64
	var spinBuckets [spinlock.SpinBuckets]uint64
	for _, l := range locks {
		acq += l.Acquisitions.Load()
		cont += l.Contended.Load()
		spins += l.Spins.Load()
		for b := range spinBuckets {
			spinBuckets[b] += l.SpinHist[b].Load()
		}
	}
	ch <- prometheus.MustNewConstMetric(c.lockAcquisitions, prometheus.CounterValue, float64(acq))
	ch <- prometheus.MustNewConstMetric(c.lockContended, prometheus.CounterValue, float64(cont))
	ch <- pow2Hist(c.lockSpinsHist, spinBuckets[:], spins)

	if c.opts.PerCPU {
		for i, s := range cpus {
			cpu := strconv.Itoa(i)
			ch <- prometheus.MustNewConstMetric(c.cpuSwitches, prometheus.CounterValue, float64(s.C[stats.ContextSwitches].Load()), cpu)
			ch <- prometheus.MustNewConstMetric(c.cpuMigrations, prometheus.CounterValue, float64(s.C[stats.Migrations].Load()), cpu)
			ch <- prometheus.MustNewConstMetric(c.cpuProxyMigr, prometheus.CounterValue, float64(s.C[stats.ProxyMigrations].Load()), cpu)
			ch <- prometheus.MustNewConstMetric(c.cpuSimTime, prometheus.GaugeValue, float64(s.SimTime.Load())/1e9, cpu)
		}
		for i, n := range nr {
			ch <- prometheus.MustNewConstMetric(c.cpuNrRunning, prometheus.GaugeValue, float64(n), strconv.Itoa(i))
		}
	}
}

// cpuHist sums histogram h over cpus.
func cpuHist(d *prometheus.Desc, cpus []*stats.CPU, h stats.CPUHist) prometheus.Metric {
	var b [stats.HistBuckets]uint64
	var sum uint64
	for _, s := range cpus {
		for i := range b {
			b[i] += s.H[h][i].Load()
		}
		sum += s.HSum[h].Load()
	}
	return pow2Hist(d, b[:], sum)
}

// pow2Hist turns power-of-two buckets (bucket 0: v == 0, bucket i:
// 2^(i-1) <= v < 2^i, the last one open) of integer values into a
// Prometheus histogram with le = 2^i - 1 and +Inf.
func pow2Hist(d *prometheus.Desc, b []uint64, sum uint64) prometheus.Metric {
	cum := make(map[float64]uint64, len(b)-1)
	var n uint64
	for i, v := range b {
		n += v
		if i < len(b)-1 {
			cum[PowerOfTwoBound(i)] = n
		}
	}
	return prometheus.MustNewConstHistogram(d, n, float64(sum), cum)
}

// PowerOfTwoBound is the inclusive upper bound (le) of power-of-two
// bucket i of an integer histogram: 2^i - 1.
func PowerOfTwoBound(i int) float64 {
	if i < 0 || i > 62 {
		panic(fmt.Sprintf("metrics: bucket %d out of range", i))
	}
	return float64(uint64(1)<<uint(i) - 1)
}

// This file is the machine: boot configuration, CPUs, tasks, mutexes, Run and Stop.

package cpu

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proxysim/proxysim/internal/audit"
	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/conductor"
	"github.com/proxysim/proxysim/internal/mutex"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/topology"
	"github.com/proxysim/proxysim/internal/trace"
)

// Config is the machine's boot configuration.
type Config struct {
	CPUs  int
	Tick  int64 // virtual ns between scheduler ticks
	Epoch int64 // virtual ns between barriers
	// MaxSkew bounds how far a CPU's clock may run ahead of the earliest
	// virtual time at which any CPU has something to do (virtual ns, 0 <
	// MaxSkew; at most an Epoch takes effect): a message between CPUs
	// is taken at most this much (plus one step) after it was sent. See
	// barrier.
	MaxSkew        int64
	SimTime        int64 // virtual ns to run
	Proxy          bool  // sched_proxy_exec
	SleepingOwners bool  // [full] sleeping-owner parking (else proxy_deactivate)
	ProxySingleRQ  bool  // upstream's single-runqueue proxying: no proxy migration (proxy_deactivate)
	// ProxyCosts are the virtual ns the series' own work costs where it
	// happens (percpu.ProxyCosts; zero: free, the default of run and
	// stress, whose golden traces and reproducers predate them).
	ProxyCosts    percpu.ProxyCosts
	Bugs          bugs.Set
	Seed          uint64
	RingSize      int   // flight-recorder events per CPU
	Balance       int64 // virtual ns between periodic balance passes
	AuditEvery    int   // audit every N epochs (0: never)
	ProgressBound int64 // virtual ns a runnable task may wait (0: off)
	WakingBound   int64 // virtual ns a woken donor may stay queued unplaced (invariant 10; 0: off)
	WallLimit     time.Duration
	HangTimeout   time.Duration
	ShuffleEvery  int64 // virtual ns between affinity shuffles per busy CPU (0: off)
	// SignalRate is signals sent per second of busy (ticking) virtual time
	// per CPU (stress --signal-rate; 0: off); SignalFatal the fraction of
	// them that are SIGKILL (the task exits when it handles one).
	SignalRate  float64
	SignalFatal float64
	// Respawn replaces every task killed by SIGKILL, once reaped, with a
	// new one of the same spec at the next barrier (stress: on), so that
	// fatal signals do not empty a long soak. See respawnEpoch.
	Respawn bool
	// SpuriousWakeRate is wake_up_process calls on a random mutex waiter
	// per second of busy virtual time per CPU (stress
	// --spurious-wake-rate; 0: off).
	SpuriousWakeRate float64
	SwitchCost       int64 // virtual ns per context switch
	SchedCost        int64 // virtual ns per __schedule call (a CPU spinning in the pick loop still spends time)
	OpCost           int64 // virtual ns per non-compute instruction
	// SpinCost is the virtual time of one turn of a mutex optimistic spin;
	// NoOptimisticSpin switches spinning off (CONFIG_MUTEX_SPIN_ON_OWNER=n).
	SpinCost         int64
	NoOptimisticSpin bool
	// Hooks, if set, gives each CPU its lock-layer hooks (jitter, conductor).
	Hooks func(cpu int) spinlock.Hooks
	// OnEpoch, if set, runs at every barrier with every CPU parked.
	OnEpoch func(m *Machine, horizon int64)
	// Topology is the machine's shape (sockets, LLCs, cores, threads);
	// nil: topology.Default(CPUs).
	Topology *topology.Topology
	// Watch, if set, records every lock step and every read and write of
	// the protocol's state for an explanation (trace.Watch). Needs
	// Strategy: a watched run replays the unwatched one event for event.
	Watch *trace.Watch
	// Strategy, if set, runs the machine serially (deterministic mode):
	// one CPU goroutine at a time, switching at every yield point, the
	// next one chosen by this seeded strategy.
	Strategy *conductor.Strategy
	// CoreSched switches core scheduling on at boot (CONFIG_SCHED_CORE
	// with a cookie in use): CoreOff, Core514 (the merged pick) or CoreV3
	// (RFC v3's pick_task and pick_next_task).
	CoreSched CoreMode
	// CoreStallFix is the CORESCHED_STALL_FIX sched feature of v3 (only
	// CoreV3 reads it); --bug coresched-stall overrides it.
	CoreStallFix bool
	// CoreToggleEvery (virtual ns; 0: never) switches core scheduling
	// off and on at run time (stress --core-sched-toggle-interval): the
	// kernel's flip of every core's rq lock pointer. Needs CoreSched.
	CoreToggleEvery int64
	// SchedFeatures is the fair class's sysctl_sched_features (EEVDF,
	// delayed dequeue); the kernel's defaults unless --sched-features.
	SchedFeatures rq.Features
	// CoreStarveBound is how long (virtual ns) an untagged runnable task
	// may wait on a forced-idle CPU (invariant 45; 0: off).
	CoreStarveBound int64
	// KeepGoing: a violation is recorded, and the run goes on to its
	// virtual time (a panic still stops the CPU that had it).
	KeepGoing bool
	// SRQ configures SHARED_RUNQ (nil: the machine has no shared
	// runqueue at all, as without the series).
	SRQ *SRQOptions
	// NewidleCost, NewidleCPUCost and NewidleTaskCost are the virtual
	// time newidle balancing costs the CPU running it, as the kernel's
	// sched_balance_newidle measures it with sched_clock_cpu: a fixed
	// cost per domain balanced (sched_balance_rq: should_we_balance, the
	// imbalance, the busiest runqueue's lock) and per shared_runq lock
	// taken, plus NewidleCPUCost per CPU of the span whose runqueue
	// statistics find_busiest_group reads, plus NewidleTaskCost per task
	// detach_tasks examines (can_migrate_task). The model's figures
	// (DefaultConfig), not measurements; all 0: free, as the model had it
	// before it modelled newidle's cut-offs.
	NewidleCost     int64
	NewidleCPUCost  int64
	NewidleTaskCost int64
	// DomainRebuildEvery is the virtual time between sched domain rebuilds
	// (stress --domain-rebuild-interval; 0: only the one at boot). One
	// machine-wide rebuild per period, by the first CPU whose tick passes it.
	DomainRebuildEvery int64
	// Hotplug switches CPU hotplug on (placement tests cpu_active and
	// cpu_online; offline/online instructions and scenario commands);
	// HotplugEvery (stress --hotplug-interval) takes a random CPU down or
	// up every so much virtual time, and implies Hotplug.
	Hotplug      bool
	HotplugEvery int64
	// HotplugMaxOffline bounds the injector (stress --hotplug-max-offline):
	// with that many CPUs offline or going down, it brings one back up
	// instead of taking another down. 0: no bound (rcutorture's onoff
	// toggling, which settles at half the CPUs offline).
	HotplugMaxOffline int
	// Live configures the liveness checks run at each audit (lost
	// hand-offs, wait ages, lost wake-ups, run-scaled progress, livelock);
	// the zero value switches them off.
	Live audit.LiveConfig
}

// DefaultMaxSkew is the default clock skew bound (Config.MaxSkew): 10 us.
const DefaultMaxSkew = 10_000

// DefaultConfig returns the built-in defaults.
func DefaultConfig() Config {
	return Config{
		CPUs: 256, Tick: 1_000_000, Epoch: 1_000_000, MaxSkew: DefaultMaxSkew, SimTime: 1_000_000_000, Proxy: true, SleepingOwners: true,
		RingSize: 2048, Balance: 4_000_000, AuditEvery: 50, ProgressBound: 2_000_000_000, WakingBound: 200_000_000,
		HangTimeout: 30 * time.Second, SwitchCost: 1_000, SchedCost: 200, OpCost: 100, SpinCost: 500,
		Live: audit.DefaultLiveConfig(), CoreStallFix: true, SchedFeatures: rq.DefaultFeatures(), CoreStarveBound: 100_000_000,
		NewidleCost: DefaultNewidleCost, NewidleCPUCost: DefaultNewidleCPUCost, NewidleTaskCost: DefaultNewidleTaskCost,
	}
}

// Machine is the simulated computer.
type Machine struct {
	cfg  Config
	topo *topology.Topology
	// domainSpans[cpu] are cpu's scheduling-domain spans, smallest first
	// (spans). Read-only after New.
	domainSpans [][][]int
	cpus        []*CPU
	rqs         []*rq.RQ
	tasks       []*task.Task // index = task id (pid); tasks[0] is nil. A slot is replaced only at the barrier (respawnEpoch)
	specs       []TaskSpec   // each slot's spec, for its respawns
	retired     []*task.Task // the tasks respawnEpoch replaced, for the run's totals
	gens        []int        // each slot's respawns so far
	// retiredRuntime is the retired tasks' sum_exec_runtime (invariant 20).
	retiredRuntime int64
	mutexes        []*mutex.Mutex
	wwClasses      []*mutex.WWClass // read-only once the machine starts
	// objs are the benchmark workloads' kernel objects (sys.go), objKinds
	// their kinds: the slices are read-only once the machine starts; each
	// object's fields say which lock guards them.
	objs     []any
	objKinds []task.ObjKind

	Log   *trace.Log
	Dep   *spinlock.Validator
	Rep   *check.Reporter
	Stats []*stats.CPU

	bar     barrier
	runner  runner               // how the CPU goroutines interleave
	cond    *conductor.Conductor // serial mode's conductor (its hooks and turn count), or nil
	rto     atomic.Int32         // runqueues with two or more RT tasks
	rtoMask rq.OverloadMask      // which runqueues those are (rto_mask)
	dlo     atomic.Int32         // runqueues with two or more DL tasks (dlo_count)
	// rdOverloaded is the root domain's overloaded flag (rq.RQ.RDOverloaded).
	rdOverloaded atomic.Bool
	dlb          *rq.DLBandwidth // the root domain's dl_bw (admission control)
	// nrRunning is every runqueue's rq->nr_running, in CPU order (each
	// RQ's count lives here): written under that runqueue's lock (atomic
	// adds), read without it, atomically by most readers and plainly by
	// findBusiest's scans (peekNrRunning).
	nrRunning []int32
	// CPU hotplug: hotplug is read-only after New; active and online are
	// cpu_active_mask and cpu_online_mask (atomic bits, read locklessly);
	// hpRand and hpNext belong to the barrier (the injector).
	hotplug        bool
	active, online []atomic.Bool
	hpRand         *rand.Rand
	hpNext         int64
	// coreFlipMu is sched_core_mutex: it serialises flips and guards
	// coreOn (core scheduling enabled). coreCount is sched_core_count,
	// the cookie references tasks hold (an atomic, as the kernel's: the
	// get and put fast paths take no lock); corePutQueued is
	// sched_core_put's work (_work, __sched_core_put) pending. The first
	// get enables core scheduling before its cookie is installed; the
	// put of the last reference leaves the disable to that work, which
	// runs from some CPU's tick (a kworker) and disables only if no get
	// came meanwhile. coreFlipDue is the stress toggler's next due time
	// (virtual ns; the CPU that moves it on runs the round).
	coreFlipMu    sync.Mutex
	coreOn        bool
	coreCount     atomic.Int32
	corePutQueued atomic.Bool
	coreFlipDue   atomic.Int64
	// coreTagMu serialises the stress toggler's rounds: an admin process
	// that takes every task's cookie away (prctl), after which the
	// kernel switches core scheduling off, and later gives them back,
	// the first switching it on again. coreUntagged says the cookies are
	// away; coreDropped holds them by pid. The toggler's own state (a
	// user-space process's); respawnEpoch reads it at the barrier.
	coreTagMu    sync.Mutex
	coreUntagged bool
	coreDropped  []uint64
	live         *audit.Liveness // the liveness checks' memory (audits only)
	grantIdx     grantIndex      // the flight recorder's grants, for invariant 33 (audits only)
	srq          *srqState       // SHARED_RUNQ, nil unless configured
	stopReq      chan struct{}
	stopping     atomic.Bool
	stopWhy      atomic.Pointer[string]
	started      bool
	wg           sync.WaitGroup
	epochs       atomic.Uint64
	// domainsMu is sched_domains_mutex: one rebuild at a time (TryLock
	// only: a CPU goroutine must not block in Go while the conductor
	// waits for it). nextRebuild is the virtual time of the next
	// injected rebuild.
	domainsMu   sync.Mutex
	nextRebuild atomic.Int64
	// UpdateDomainsFair, if set before Run, is the fair class's per-CPU
	// work of a domain rebuild (update_domains_fair: SHARED_RUNQ's shard
	// reassignment), called with each CPU's rq lock held, IRQs off.
	UpdateDomainsFair func(c *percpu.Ctx, r *rq.RQ)
	// AfterUpdateDomains, if set before Run, runs once after the per-CPU
	// walk of every rebuild, no rq lock held (SHARED_RUNQ's drain).
	AfterUpdateDomains func(c *percpu.Ctx)
	detected           atomic.Int64 // wall clock (unix ns) of the first violation
	wallStart          time.Time
	wallEnd            time.Time
	// Stuck is set when CPUs did not stop after a hang or violation.
	Stuck bool
	// HangDump holds goroutine stacks captured by the watchdog.
	HangDump string
}

// New builds an idle machine: CPUs, runqueues and idle tasks.
func New(cfg Config) (*Machine, error) {
	if cfg.CPUs < 1 || cfg.CPUs > task.MaxCPUs {
		return nil, fmt.Errorf("cpu: %d CPUs out of range 1-%d", cfg.CPUs, task.MaxCPUs)
	}
	if cfg.Tick <= 0 || cfg.Epoch <= 0 || cfg.SimTime <= 0 || cfg.MaxSkew <= 0 {
		return nil, fmt.Errorf("cpu: tick, epoch, clock skew bound and sim time must be positive")
	}
	if cfg.Topology == nil {
		cfg.Topology = topology.Default(cfg.CPUs)
	}
	if n := cfg.Topology.NumCPUs(); n != cfg.CPUs {
		return nil, fmt.Errorf("cpu: topology %s has %d CPUs, the machine %d", cfg.Topology, n, cfg.CPUs)
	}
	if cfg.Watch != nil && cfg.Strategy == nil {
		return nil, fmt.Errorf("cpu: a watch needs a deterministic strategy")
	}
	m := &Machine{cfg: cfg, topo: cfg.Topology, tasks: []*task.Task{nil}, specs: []TaskSpec{{}}, gens: []int{0}, stopReq: make(chan struct{}, 1), dlb: rq.NewDLBandwidth(cfg.CPUs)}
	m.Log = trace.NewLog(cfg.CPUs, cfg.RingSize)
	m.runner = parallelRunner{}
	if cfg.Strategy != nil {
		m.cond = conductor.New(cfg.CPUs, *cfg.Strategy, cfg.Seed, func(i int) int64 { return m.cpus[i].c.Now })
		// The virtual watchdog: a livelock (CPUs busy, no epoch ending)
		// is reported after a fixed number of turns, so it replays.
		m.cond.StallSteps = uint64(10_000_000)
		m.cond.OnStall = func(steps uint64) {
			m.warn(nil, check.InvHang, -1, "", fmt.Sprintf("deterministic watchdog: %d conductor turns without an epoch completing (epoch %d): CPUs livelocked", m.cond.StallSteps, m.epochs.Load()))
		}
		// One goroutine at a time: the event sequence is a function of
		// the seed, and its hash proves it.
		m.Log.EnableHash()
		m.runner = serialRunner{m.cond}
		if w := cfg.Watch; w != nil {
			m.cond.OnTurn = w.SetCPU
			m.Log.SetWatch(w)
		}
	}
	m.Rep = check.NewReporter()
	m.Rep.OnFirst = func(v check.Violation) {
		m.detected.Store(time.Now().UnixNano())
		if !cfg.KeepGoing || v.Invariant == check.InvInternal || v.Invariant == check.InvHang {
			m.Stop("violation: " + v.String())
		}
	}
	m.rtoMask = rq.NewOverloadMask(cfg.CPUs)
	m.Dep = spinlock.NewValidator(func(inv spinlock.Inversion) {
		// Called on the goroutine of the CPU taking the lock, which owns
		// that CPU's context.
		var c *percpu.Ctx
		if inv.CPU >= 0 && inv.CPU < len(m.cpus) {
			c = m.cpus[inv.CPU].c
		}
		m.warn(c, check.InvLockOrder, -1, "", inv.String())
	})
	m.Dep.OnUsageBug = func(b spinlock.UsageBug) {
		// On the goroutine of the CPU taking the lock, as above.
		var c *percpu.Ctx
		if b.CPU >= 0 && b.CPU < len(m.cpus) {
			c = m.cpus[b.CPU].c
		}
		inv := check.InvIRQLockUsage
		if b.Kind != spinlock.UsageInconsistent {
			inv = check.InvIRQLockOrder
		}
		m.warn(c, inv, -1, "", b.Report)
	}
	m.nrRunning = make([]int32, cfg.CPUs)
	for i := 0; i < cfg.CPUs; i++ {
		idle := task.New(-(i + 1), fmt.Sprintf("swapper/%d", i), cfg.CPUs, i)
		idle.Idle = true
		idle.SE.Policy = task.IdlePolicy
		idle.SE.Prio = task.IdlePrio
		idle.CPUsMask = task.MaskOf(i)
		idle.NrCPUsAllowed = 1
		idle.SetOnCPU(true)
		idle.Watch = cfg.Watch
		r := rq.New(i, idle)
		r.Watch = cfg.Watch
		r.PlaceNrRunning(&m.nrRunning[i])
		r.SetLockOrder(m.topo.LockOrderKey(i))
		r.RTO = &m.rto
		r.RTOMask = m.rtoMask
		r.Feat = cfg.SchedFeatures
		r.DLO = &m.dlo
		r.RDOverloaded = &m.rdOverloaded
		r.AvgIdle = 2 * migrationCost // sched_init
		r.MaxIdleBalanceCost.Store(migrationCost)
		r.StartDLTimer = m.startDLTimer
		r.PreemptEqualDL = m.checkPreemptEqualDL
		st := &stats.CPU{}
		lc := spinlock.NewCPU(i)
		lc.Dep = m.Dep
		if w := cfg.Watch; w != nil {
			cpu := i
			lc.OnLock = func(l *spinlock.Lock, taken bool) { w.Lock(cpu, uint8(l.Class()), int32(l.Sub()), taken) }
		}
		if cfg.Hooks != nil {
			lc.Hooks = cfg.Hooks(i)
		}
		c := &percpu.Ctx{CPU: lc, Trace: m.Log.Rings[i], Stats: st,
			Rand: rand.New(rand.NewPCG(cfg.Seed, uint64(i)*0x9e3779b97f4a7c15+1)), Proxy: cfg.Proxy, ProxySingleRQ: cfg.ProxySingleRQ, Bugs: cfg.Bugs, ProxyCosts: cfg.ProxyCosts,
			OnWarn: m.warn}
		lc.Describe = func() (string, int64) {
			if p := r.Curr(); !p.Idle {
				return p.String(), c.Now
			}
			return fmt.Sprintf("swapper/%d/0", r.CPU), c.Now
		}
		cp := &CPU{m: m, id: i, rq: r, c: c, kick: make(chan struct{}, 1), nextTick: cfg.Tick, outrankedSince: -1}
		cp.ipiAt.Store(noIPI)
		cp.undo = noUndo
		cp.timerLock.Init(spinlock.ClassTimer, i)
		r.Kick = m.kickResched
		r.Ledger = &ledger{m: m}
		m.cpus = append(m.cpus, cp)
		m.rqs = append(m.rqs, r)
		m.Stats = append(m.Stats, st)
	}
	if m.cond != nil {
		clocks := make([]*int64, len(m.cpus))
		for i, cp := range m.cpus {
			clocks[i] = &cp.c.Now
		}
		m.cond.SetClocks(clocks)
	}
	m.buildSpans()
	for i, cp := range m.cpus {
		cp.sd = make([]sdNewidle, len(m.spans(i)))
	}
	m.nextRebuild.Store(cfg.DomainRebuildEvery)
	m.hotplug = cfg.Hotplug || cfg.HotplugEvery > 0
	m.active = make([]atomic.Bool, cfg.CPUs)
	m.online = make([]atomic.Bool, cfg.CPUs)
	for i := range m.active {
		m.active[i].Store(true)
		m.online[i].Store(true)
	}
	if m.hotplug {
		if cfg.CoreSched != CoreOff {
			return nil, fmt.Errorf("cpu: CPU hotplug with core scheduling is not modelled")
		}
		m.hpRand = rand.New(rand.NewPCG(cfg.Seed, 0x686f74706c7567))
		m.hpNext = cfg.HotplugEvery
		for _, cp := range m.cpus {
			cp.c.CPUOnline = m.cpuOnline
			cp.c.CPUActive = m.cpuActive
		}
	}
	if cfg.CoreSched != CoreOff {
		m.enableCoreSched()
		m.coreOn = true
		m.coreFlipDue.Store(cfg.CoreToggleEvery)
	} else if cfg.CoreToggleEvery != 0 {
		return nil, fmt.Errorf("core scheduling toggle interval %v needs core scheduling (--core-sched)", time.Duration(cfg.CoreToggleEvery))
	}
	if cfg.CoreToggleEvery < 0 {
		return nil, fmt.Errorf("core scheduling toggle interval %v: must not be negative", time.Duration(cfg.CoreToggleEvery))
	}
	if cfg.SRQ != nil {
		o := *cfg.SRQ
		if o.ShardSize < 1 {
			o.ShardSize = DefaultSRQShardSize
		}
		if o.Hooks != rq.SRQHooksV2 && o.Hooks != rq.SRQHooksV3 {
			o.Hooks = DefaultSRQHooks
		}
		m.enableSRQ(o)
	}
	m.bar.init(m)
	return m, nil
}

// Config returns the machine's configuration.
func (m *Machine) Config() Config { return m.cfg }

// Topology returns the machine's shape.
func (m *Machine) Topology() *topology.Topology { return m.topo }

// NumCPUs returns the number of CPUs.
func (m *Machine) NumCPUs() int { return len(m.cpus) }

// RQ is cpu_rq(cpu).
func (m *Machine) RQ(cpu int) *rq.RQ { return m.rqs[cpu] }

// Tasks returns all tasks; index = id, [0] is nil.
func (m *Machine) Tasks() []*task.Task { return m.tasks }

// Task returns the task with the given id.
func (m *Machine) Task(id int) *task.Task {
	if id <= 0 || id >= len(m.tasks) {
		return nil
	}
	return m.tasks[id]
}

// Mutexes returns all mutexes.
func (m *Machine) Mutexes() []*mutex.Mutex { return m.mutexes }

// SleepingOwners implements proxy.Machine.
func (m *Machine) SleepingOwners() bool { return m.cfg.SleepingOwners }

// Now returns a CPU's virtual clock (only when the machine is stopped or
// from that CPU).
func (m *Machine) Now(cpu int) int64 { return m.cpus[cpu].c.Now }

// Busy returns a CPU's busy virtual time (stopped machine only).
func (m *Machine) Busy(cpu int) int64 { return m.cpus[cpu].busy }

// StopperPending reports queued migration_cpu_stop work on cpu (the
// audit's view; every CPU is parked).
func (m *Machine) StopperPending(cpu int) bool { return len(m.cpus[cpu].stopWork) > 0 }

// IPIPending reports an IPI or a wake list entry pending on cpu (the
// audit's view; every CPU is parked).
func (m *Machine) IPIPending(cpu int) bool { return m.cpus[cpu].pending() }

// AddMutex creates a mutex. Only before Start.
func (m *Machine) AddMutex(name string) *mutex.Mutex {
	mx := mutex.New(len(m.mutexes), name, m.Task)
	mx.Watch = m.cfg.Watch
	m.mutexes = append(m.mutexes, mx)
	return mx
}

// AddWWClass creates a ww_class (DEFINE_WD_CLASS / DEFINE_WW_CLASS) and
// returns its index (ww_acquire_init's operand). Only before Start.
func (m *Machine) AddWWClass(name string, waitDie bool) int {
	m.wwClasses = append(m.wwClasses, mutex.NewWWClass(name, waitDie))
	return len(m.wwClasses) - 1
}

// AddWWMutex creates a ww_mutex of class k (ww_mutex_init). Only before
// Start.
func (m *Machine) AddWWMutex(name string, k int) *mutex.Mutex {
	mx := m.AddMutex(name)
	mx.SetWW(m.wwClasses[k])
	return mx
}

// TaskSpec describes a task to create.
type TaskSpec struct {
	Name   string
	Group  int
	Policy task.Policy
	Prio   int           // nice for Normal, rtprio for FIFO/RR
	DL     task.DLParams // Deadline: runtime, deadline, period
	Mask   task.Mask
	Prog   *task.Program
	CPU    int // initial CPU (must be in Mask)
	Seed   uint64
	Cookie uint64 // core-scheduling cookie (0: untagged)
}

// AddTask creates a task and wakes it (wake_up_new_task) on spec.CPU.
// Only before Start.
func (m *Machine) AddTask(s TaskSpec) (*task.Task, error) {
	if m.started {
		return nil, fmt.Errorf("cpu: AddTask after Start")
	}
	if !s.Mask.Has(s.CPU) {
		return nil, fmt.Errorf("cpu: task %s: initial cpu %d outside its mask %v", s.Name, s.CPU, s.Mask)
	}
	if err := m.checkSysOps(s.Name, s.Prog); err != nil {
		return nil, err
	}
	id := len(m.tasks)
	p, err := m.newTask(id, s.Name, s, m.cpus[s.CPU].c)
	if err != nil {
		return nil, err
	}
	if p.CoreCookie != 0 && m.cfg.CoreSched != CoreOff {
		m.coreCount.Add(1) // the task's cookie reference (sched_core_get)
	}
	m.tasks = append(m.tasks, p)
	m.specs = append(m.specs, s)
	m.gens = append(m.gens, 0)
	m.wakeUpNewTask(m.cpus[s.CPU].c, p, false)
	return p, nil
}

// newTask is copy_process()'s part the model needs: a task struct for
// slot id from spec s (sched_fork: the spec's class and parameters; a
// SCHED_DEADLINE spec passes admission control, as sched_setattr would,
// on c's CPU). The task is not yet visible to the machine.
func (m *Machine) newTask(id int, name string, s TaskSpec, c *percpu.Ctx) (*task.Task, error) {
	p := task.New(id, name, len(m.cpus), s.CPU)
	p.Watch = m.cfg.Watch
	p.Group = s.Group
	p.CoreCookie = s.Cookie
	p.CPUsMask = s.Mask
	p.NrCPUsAllowed = s.Mask.Weight()
	p.PublishMask()
	switch s.Policy {
	case task.FIFO, task.RR:
		p.SetRT(s.Policy, s.Prio)
	case task.Deadline:
		if why := task.CheckDLParams(s.DL); why != "" {
			return nil, fmt.Errorf("cpu: task %s: sched_setattr: %s (-EINVAL)", s.Name, why)
		}
		if !m.dlb.SchedDLOverflow(c, p, task.Deadline, s.DL) {
			return nil, fmt.Errorf("cpu: task %s: sched_setattr: bandwidth %d/%d exceeds what the root domain has left (-EBUSY)", s.Name, s.DL.Runtime, s.DL.Period)
		}
		p.SetDL(s.DL)
	default:
		p.SetNice(s.Prio)
	}
	s.Prog.Link()
	p.Exec.Prog = s.Prog
	p.Exec.Loops = make([]int, len(s.Prog.Ops))
	p.Exec.Rand = rand.New(rand.NewPCG(s.Seed, uint64(id)))
	return p, nil
}

// wakeUpNewTask is wake_up_new_task() of p, not yet on any runqueue:
// under its pi_lock (irqsave), with fork balancing (selectRQ) p's CPU is
// chosen by select_task_rq and set (__set_task_cpu), else it stays on
// the CPU it was created on; then under that CPU's rq lock, activate
// (ENQUEUE_INITIAL), wakeup_preempt and task_woken. It returns the CPU.
func (m *Machine) wakeUpNewTask(c *percpu.Ctx, p *task.Task, selectRQ bool) int {
	c.IrqDisable()
	p.PiLock.Lock(c.CPU)
	cpu := p.CPU()
	if selectRQ {
		if dest := m.selectTaskRQ(c, p); dest >= 0 && dest != cpu {
			cpu = dest
			p.SetCPU(cpu)
			p.WakeCPU = cpu
		}
	}
	r := m.rqs[cpu]
	r.Lock(c)
	p.SetState(task.Running)
	r.ActivateTask(c, p, rq.EnqueueInitial)
	r.CheckPreemptCurr(c, p)
	m.taskWokenDL(c, r, p)
	r.Unlock(c)
	p.PiLock.Unlock(c.CPU)
	c.IrqEnable()
	return cpu
}

// Stop asks every CPU to stop at its next step boundary. Idempotent; safe
// from any goroutine, including a CPU holding locks or the audit: the
// watchdog goroutine releases CPUs parked at the barrier.
func (m *Machine) Stop(why string) {
	if m.stopWhy.CompareAndSwap(nil, &why) {
		m.stopping.Store(true)
		select {
		case m.stopReq <- struct{}{}:
		default:
		}
	}
}

// StopReason says why the machine stopped ("" if it ran to its sim time).
func (m *Machine) StopReason() string {
	if p := m.stopWhy.Load(); p != nil {
		return *p
	}
	return ""
}

// Stopping reports whether a stop was requested.
func (m *Machine) Stopping() bool { return m.stopping.Load() }

// Epochs returns how many barriers have completed.
func (m *Machine) Epochs() uint64 { return m.epochs.Load() }

// SkewBound is the clock skew bound the machine runs with (virtual ns):
// Config.MaxSkew, or the epoch when that is shorter.
func (m *Machine) SkewBound() int64 { return m.bar.skew }

// Windows returns how many windows the barrier has opened (stopped
// machine only).
func (m *Machine) Windows() uint64 { return m.bar.windows }

// Report records an invariant violation found on CPU c (proxy.Machine).
func (m *Machine) Report(c *percpu.Ctx, inv check.Invariant, p *task.Task, msg string) {
	id, name := -1, ""
	if p != nil {
		id, name = p.ID, p.String()
	}
	m.warn(c, inv, id, name, msg)
}

// warn records a violation found on CPU c (nil: outside any CPU) at the
// current event: it is percpu.Ctx.OnWarn, through which rq and mutex
// report. The violation event is emitted first, so that the violation's
// sequence number names the event that replay must meet again.
func (m *Machine) warn(c *percpu.Ctx, inv check.Invariant, id int, name, msg string) {
	v := check.Violation{Invariant: inv, CPU: -1, Task: id, TaskName: name, Message: msg}
	if id < 0 && name == "" {
		v.Task = 0
	}
	if c != nil {
		c.Emit(trace.EvViolation, int32(v.Task), int32(inv), 0, 0)
		v.CPU, v.Time = c.ID, c.Now
	} else if w := m.cfg.Watch; w != nil {
		w.Check(int(inv))
	}
	v.Seq = m.Log.Seq()
	m.Rep.Report(v)
}

// Run starts the CPU goroutines and waits until the machine stops: its
// sim time is reached, Stop is called, the wall-clock limit passes, or a
// violation is reported.
func (m *Machine) Run() {
	m.wallStart = time.Now()
	// Boot: the first sched domain build (a violation found here counts
	// from the start of the run).
	m.schedInitDomains()
	m.started = true
	if m.cond != nil {
		// Yield points hand the turn to the conductor from now on (setup
		// above ran on this goroutine alone).
		for _, cp := range m.cpus {
			cp.c.CPU.Hooks = m.cond.Hooks()
		}
	}
	for _, cp := range m.cpus {
		m.wg.Add(1)
		go cp.run()
	}
	finished := make(chan struct{})
	go func() { m.wg.Wait(); close(finished) }()
	m.watch(finished)
	m.wallEnd = time.Now()
}

// Deterministic reports whether the machine runs serially.
func (m *Machine) Deterministic() bool { return m.runner.deterministic() }

// TraceHash is the hash of the full event sequence (deterministic mode;
// 0 otherwise).
func (m *Machine) TraceHash() uint64 { return m.Log.Hash() }

// ScheduleSteps is the number of conductor turns (deterministic mode).
func (m *Machine) ScheduleSteps() uint64 {
	if m.cond == nil {
		return 0
	}
	return m.cond.Steps()
}

// DetectedAfter is the wall time from the start of Run to the first
// violation, or 0 if there was none.
func (m *Machine) DetectedAfter() time.Duration {
	d := m.detected.Load()
	if d == 0 {
		return 0
	}
	// A violation met while the machine was built (an enqueue of
	// AddTask's wake_up_new_task) counts as found at the start.
	return max(time.Duration(d-m.wallStart.UnixNano()), 0)
}

// WallTime is how long Run took.
func (m *Machine) WallTime() time.Duration { return m.wallEnd.Sub(m.wallStart) }

// SchedFeatures returns the fair class's sched features of this machine.
func (m *Machine) SchedFeatures() rq.Features { return m.cfg.SchedFeatures }

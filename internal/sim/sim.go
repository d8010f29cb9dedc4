package sim

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"time"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/conductor"
	"github.com/proxysim/proxysim/internal/cpu"
	"github.com/proxysim/proxysim/internal/inject"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/topology"
	"github.com/proxysim/proxysim/internal/trace"
	"github.com/proxysim/proxysim/internal/workload"
)

// Options configure one run.
type Options struct {
	CPUs           int
	Topology       string // "2s-8llc-8c-2t" notation ("": the scenario's, else topology.Default(CPUs))
	Tasks          int    // built-in workloads: about this many tasks (0: default)
	Workload       string // built-in name or scenario file path
	SimTime        time.Duration
	Duration       time.Duration // wall-clock cap (0: none)
	Seed           uint64
	Proxy          bool
	SleepingOwners bool
	// NoOptimisticSpin switches mutex optimistic spinning off (on by
	// default, as in the kernel).
	NoOptimisticSpin bool
	// ProxySingleRQ (with Proxy) is --proxy-exec single-rq: proxying only
	// when the owner is on the donor's runqueue, as upstream Linux has it;
	// a donor whose owner is elsewhere or asleep is deactivated. It
	// implies no sleeping-owner parking.
	ProxySingleRQ bool
	Bugs          bugs.Set
	// CoreSched is --core-sched: off (""), on / 5.14, or v3; a scenario's
	// "core_sched" applies when this is empty. NoStallFix is
	// --sched-features NO_CORESCHED_STALL_FIX (v3 only).
	CoreSched  string
	NoStallFix bool
	// SharedRunq is sched_feat(SHARED_RUNQ) as given: "" (not mentioned:
	// no shared runqueue at all), "on" or "off" (built, feature clear).
	// SRQHooks (2, 3, 4; 0: cpu.DefaultSRQHooks), SRQShardSize,
	// SRQBailouts configure it;
	// SRQToggleInterval is the stress injector (domain rebuilds and
	// feature flips; it builds the shared runqueue too).
	SharedRunq        string
	SRQHooks          int
	SRQShardSize      int
	SRQBailouts       rq.SRQBailout
	SRQToggleInterval time.Duration
	// ProxyCosts are the virtual ns the proxy-execution series' own work
	// costs where it happens (--proxy-costs; zero: free).
	ProxyCosts percpu.ProxyCosts
	// NewidleCost, NewidleCPUCost and NewidleTaskCost are the virtual
	// time newidle balancing costs: per domain balanced (and per
	// shared_runq lock taken), per CPU of the span read, per task
	// examined (cpu.Config; the model's defaults, all 0: free).
	NewidleCost     time.Duration
	NewidleCPUCost  time.Duration
	NewidleTaskCost time.Duration
	// SchedFeatures are --sched-features writes of the fair class's
	// features (NAME or NO_NAME, in order) applied over the kernel's
	// defaults (rq.DefaultFeatures).
	SchedFeatures []string
	Tick          time.Duration
	Epoch         time.Duration
	// MaxSkew bounds the CPUs' clock skew (cpu.Config.MaxSkew; 0: the
	// default, 10us): a message between CPUs is taken at most this much
	// after it was sent, plus one step.
	MaxSkew    time.Duration
	AuditEvery int
	// KeepGoing records violations without stopping the run (run
	// --keep-going: measuring a workload under a known pathology).
	KeepGoing   bool
	RingSize    int
	HangTimeout time.Duration
	WakingBound time.Duration
	Hooks       func(cpu int) spinlock.Hooks
	OnEpoch     func(m *cpu.Machine, horizon int64)
	// OnSetup, if set, is told how many of the scenario's tasks Build has
	// created (every few thousand, and at the end).
	OnSetup func(done, total int)

	// Watch, if set, records the run step by step for an explanation
	// (proxysim explain); it needs Deterministic.
	Watch *trace.Watch

	// Deterministic runs the machine serially under a conductor with
	// Strategy ("time", "random", "pct:D"); jitter and stutter are off.
	Deterministic bool
	Strategy      string

	// Race-hunting injectors (proxysim stress).
	Jitter          float64       // probability of a yield or delay at each yield point (0: off)
	JitterDelay     time.Duration // longest injected busy delay
	Stutter         time.Duration // pause all CPUs every this much wall time (0: off)
	ShuffleInterval time.Duration // virtual time between affinity shuffles per busy CPU (0: off)
	// DomainRebuildInterval is the virtual time between machine-wide sched
	// domain rebuilds (stress --domain-rebuild-interval; 0: boot only).
	DomainRebuildInterval time.Duration
	// CoreToggleInterval is the virtual time between switches of core
	// scheduling off and on (stress --core-sched-toggle-interval; 0: off).
	CoreToggleInterval time.Duration
	// SignalRate is signals per second of busy virtual time per CPU (0:
	// off); SignalFatal the fraction that are SIGKILL (the task exits).
	SignalRate  float64
	SignalFatal float64
	// Respawn forks a task of the same spec in the slot of every task
	// killed by SIGKILL, at the next barrier (stress: on).
	Respawn bool
	// SpuriousWakeRate is spurious wake-ups of random mutex waiters per
	// second of busy virtual time per CPU (0: off).
	SpuriousWakeRate float64
	// HotplugInterval is virtual time between CPU hotplug operations (a
	// random CPU taken down, or brought back up; 0: off).
	HotplugInterval time.Duration
	// HotplugMaxOffline bounds the CPUs the hotplug injector keeps down
	// (0: one in 32 of the CPUs, at least 1).
	HotplugMaxOffline int
	// HotplugIsDefault says HotplugInterval is stress's default, not the
	// user's: a run with core scheduling (which the model does not combine
	// with hotplug) then runs without hotplug instead of being refused.
	HotplugIsDefault bool
	// MigrateDisable is the probability that a lock instruction of the
	// workload is wrapped in a migrate_disable()/migrate_enable() region,
	// drawn per task and instruction from the seed.
	MigrateDisable float64
	// InterruptibleLocks is the probability that a lock instruction of
	// the workload becomes mutex_lock_interruptible (half of those
	// mutex_lock_killable), drawn per task and instruction from the seed.
	InterruptibleLocks float64
}

// Defaults returns the built-in defaults of `proxysim run`.
func Defaults() Options {
	d := cpu.DefaultConfig()
	return Options{
		CPUs: d.CPUs, Workload: "mixed", SimTime: time.Duration(d.SimTime), Proxy: true, SleepingOwners: true,
		Tick: time.Duration(d.Tick), Epoch: time.Duration(d.Epoch), MaxSkew: time.Duration(d.MaxSkew), AuditEvery: d.AuditEvery, RingSize: d.RingSize,
		HangTimeout: d.HangTimeout, WakingBound: time.Duration(d.WakingBound),
		NewidleCost: time.Duration(d.NewidleCost), NewidleCPUCost: time.Duration(d.NewidleCPUCost),
		NewidleTaskCost: time.Duration(d.NewidleTaskCost),
	}
}

// IsBuiltin says whether name is a built-in workload (not a file).
func IsBuiltin(name string) bool {
	if workload.IsBenchmark(name) {
		return true
	}
	for _, b := range workload.BuiltinNames() {
		if b == name {
			return true
		}
	}
	return false
}

// LoadScenario resolves a workload name or file. A scenario file without
// a name is named after the file.
func LoadScenario(name string, cpus, tasks int) (*workload.Scenario, error) {
	if workload.IsBenchmark(name) {
		return workload.Benchmark(name)
	}
	if s, err := workload.Builtin(name, cpus, tasks); err == nil {
		return s, nil
	}
	if _, err := os.Stat(name); err != nil {
		return nil, fmt.Errorf("unknown workload %q: not a built-in (%v) and not a readable file", name, workload.BuiltinNames())
	}
	s, err := workload.ParseFile(name)
	if err != nil {
		return nil, err
	}
	if s.Name == "" {
		s.Name = name
	}
	return s, nil
}

// Run is one simulation.
type Run struct {
	Opts     Options
	Scenario *workload.Scenario
	Machine  *cpu.Machine
	// Explanation, if set, goes at the top of the failure report: the
	// failing interleaving in kernel terms (proxysim explain's text).
	Explanation string
	// ExplanationOf says which run Explanation explains when it is not
	// this one ("its deterministic reproduction X.det.report").
	ExplanationOf string
	// watch and watched are a watched run's recording, kept by Explain
	// for WriteSlicePerfetto.
	watch   *trace.Watch
	watched []trace.Step
	Jitter  *inject.Jitter  // nil unless Opts.Jitter > 0
	Stutter *inject.Stutter // nil unless Opts.Stutter > 0
	done    chan struct{}   // closed when Execute returns
}

// Stop asks the run to stop (a signal, an interrupted shrink); Execute
// then returns the summary so far. It may be called at any time, before
// Execute too. A deterministic machine is stopped only once its conductor
// has taken a turn: a stop that comes while its CPU goroutines are still
// starting would leave the conductor handing the turn to a CPU that has
// already left.
func (r *Run) Stop(why string) {
	if !r.Machine.Deterministic() {
		r.Machine.Stop(why)
		return
	}
	go func() {
		for r.Machine.ScheduleSteps() == 0 {
			select {
			case <-r.done:
				return
			case <-time.After(time.Millisecond):
			}
		}
		r.Machine.Stop(why)
	}()
}

// Build creates the machine and its tasks.
func Build(o Options, sc *workload.Scenario) (*Run, error) {
	if sc.CPUs > 0 {
		o.CPUs = sc.CPUs
	}
	topo := o.Topology
	if topo == "" {
		topo = sc.Topology
	}
	if topo != "" {
		tp, err := topology.Parse(topo)
		if err != nil {
			return nil, err
		}
		if o.Topology == "" && sc.CPUs == 0 && o.CPUs != tp.NumCPUs() {
			// the scenario's topology sets the machine's size
			o.CPUs = tp.NumCPUs()
		}
		if tp.NumCPUs() != o.CPUs {
			return nil, fmt.Errorf("topology %s has %d CPUs, but the machine has %d", tp, tp.NumCPUs(), o.CPUs)
		}
		o.Topology = tp.String()
	}
	cfg := cpu.DefaultConfig()
	cfg.CPUs = o.CPUs
	if o.Topology != "" {
		cfg.Topology, _ = topology.Parse(o.Topology)
	}
	cfg.Tick = int64(o.Tick)
	cfg.Epoch = int64(o.Epoch)
	if o.MaxSkew > 0 {
		cfg.MaxSkew = int64(o.MaxSkew)
	}
	cfg.SimTime = int64(o.SimTime)
	cfg.Proxy = o.Proxy
	cfg.SleepingOwners = o.SleepingOwners
	cfg.NoOptimisticSpin = o.NoOptimisticSpin
	if o.Proxy && o.ProxySingleRQ {
		cfg.ProxySingleRQ, cfg.SleepingOwners = true, false
	}
	cfg.Bugs = o.Bugs
	if o.CoreSched == "" {
		o.CoreSched = sc.CoreSched
	}
	cs, err := cpu.ParseCoreMode(o.CoreSched)
	if err != nil {
		return nil, err
	}
	cfg.CoreSched = cs
	if cs == cpu.CoreV3 {
		// v3 keeps K2 and K3 (one-task-per-CPU ties, whoever picks first
		// wins): single waits of 0.3-0.5 s on the stall workload with
		// the fix too (README). Invariant 45 bounds them at 1 s there;
		// invariant 52 tells K1 apart.
		cfg.CoreStarveBound = 1_000_000_000
	}
	cfg.CoreStallFix = !o.NoStallFix
	if o.SharedRunq != "" || o.SRQToggleInterval > 0 {
		cfg.SRQ = &cpu.SRQOptions{Enabled: o.SharedRunq == "on", Hooks: o.SRQHooks, ShardSize: o.SRQShardSize,
			Bailouts: o.SRQBailouts, ToggleEvery: int64(o.SRQToggleInterval)}
	}
	cfg.ProxyCosts = o.ProxyCosts
	cfg.NewidleCost = int64(o.NewidleCost)
	cfg.NewidleCPUCost = int64(o.NewidleCPUCost)
	cfg.NewidleTaskCost = int64(o.NewidleTaskCost)
	cfg.SchedFeatures = rq.DefaultFeatures()
	for _, n := range o.SchedFeatures {
		if !cfg.SchedFeatures.Set(n) {
			return nil, fmt.Errorf("unknown sched feature %q", n)
		}
	}
	cfg.Seed = o.Seed
	cfg.AuditEvery = o.AuditEvery
	cfg.KeepGoing = o.KeepGoing
	if o.RingSize > 0 {
		cfg.RingSize = o.RingSize
	}
	cfg.WallLimit = o.Duration
	if o.HangTimeout > 0 {
		cfg.HangTimeout = o.HangTimeout
	}
	cfg.WakingBound = int64(o.WakingBound)
	cfg.Hooks = o.Hooks
	cfg.Watch = o.Watch
	cfg.OnEpoch = o.OnEpoch
	cfg.ShuffleEvery = int64(o.ShuffleInterval)
	cfg.DomainRebuildEvery = int64(o.DomainRebuildInterval)
	cfg.HotplugEvery = int64(o.HotplugInterval)
	if cs != cpu.CoreOff && o.HotplugIsDefault {
		cfg.HotplugEvery = 0
	}
	cfg.HotplugMaxOffline = o.HotplugMaxOffline
	if cfg.HotplugMaxOffline == 0 {
		cfg.HotplugMaxOffline = max(1, o.CPUs/32)
	}
	cfg.Hotplug = sc.UsesHotplug()
	cfg.CoreToggleEvery = int64(o.CoreToggleInterval)
	cfg.SignalRate, cfg.SignalFatal, cfg.SpuriousWakeRate = o.SignalRate, o.SignalFatal, o.SpuriousWakeRate
	cfg.Respawn = o.Respawn
	if o.Deterministic {
		st, err := conductor.ParseStrategy(o.Strategy)
		if err != nil {
			return nil, err
		}
		cfg.Strategy = &st
		// The conductor decides every interleaving; wall-clock injectors
		// would make the run depend on the host.
		o.Jitter, o.Stutter = 0, 0
	}
	run := &Run{Opts: o, Scenario: sc, done: make(chan struct{})}
	if sc.Merit != nil && sc.Merit.Kind == workload.MeritFinish {
		// A benchmark that finishes (hackbench) stops the run when its
		// last task has exited: the rest would be idle time.
		prev := cfg.OnEpoch
		ntask := uint64(sc.NumTasks())
		cfg.OnEpoch = func(m *cpu.Machine, h int64) {
			if prev != nil {
				prev(m, h)
			}
			if stats.Sum(m.Stats, stats.Exits) >= ntask {
				m.Stop(StopAllExited)
			}
		}
	}
	if o.Jitter > 0 {
		run.Jitter = inject.NewJitter(o.Jitter, o.JitterDelay, o.Seed, o.CPUs)
		if cfg.Hooks == nil {
			cfg.Hooks = run.Jitter.Hooks
		}
	}
	if o.Stutter > 0 {
		run.Stutter = inject.NewStutter(o.Stutter)
		prev := cfg.OnEpoch
		cfg.OnEpoch = func(m *cpu.Machine, h int64) {
			run.Stutter.Epoch()
			if prev != nil {
				prev(m, h)
			}
		}
	}
	m, err := cpu.New(cfg)
	if err != nil {
		return nil, err
	}
	run.Machine = m
	for _, name := range sc.Mutexes {
		m.AddMutex(name)
	}
	if c := sc.Chain; c != nil {
		m.Mutexes()[c.Head].SetTraced()
		m.Mutexes()[c.End].SetTraced()
	}
	for _, w := range sc.WW {
		k := m.AddWWClass(w.Name, w.WaitDie)
		for j := 0; j < w.Count; j++ {
			m.AddWWMutex(fmt.Sprintf("%s%d", w.Name, j), k)
		}
	}
	for _, ob := range sc.Objects {
		if _, err := m.AddObject(cpu.ObjSpec{Kind: ob.Kind, Name: ob.Name, Mutex: ob.Mutex, Size: ob.Size, Msg: ob.Msg}); err != nil {
			return nil, err
		}
	}
	if o.OnSetup != nil {
		o.OnSetup(0, sc.NumTasks())
	}
	plans, err := sc.Plan(o.CPUs, o.Seed)
	if err != nil {
		return nil, err
	}
	if o.InterruptibleLocks > 0 {
		interruptibleLocks(plans, o.InterruptibleLocks, o.Seed)
	}
	if o.MigrateDisable > 0 {
		migrateDisableRegions(plans, o.MigrateDisable, o.Seed)
	}
	tagged := false
	for _, p := range plans {
		tagged = tagged || p.Cookie != 0
	}
	for i, p := range plans {
		if cfg.CoreSched != cpu.CoreOff && !tagged {
			// A workload without cookies under --core-sched: tag its
			// groups round-robin (group 0, 3, ... untagged), as
			// prctl(PR_SCHED_CORE) per process group would.
			p.Cookie = uint64(p.Group % 3)
		}
		if o.OnSetup != nil && i%4096 == 0 {
			o.OnSetup(i, len(plans))
		}
		// spread initial placement over the allowed CPUs
		start := (i * 7919) % o.CPUs
		c := p.Mask.Next(start)
		if c < 0 {
			c = p.Mask.Next(0)
		}
		if _, err := m.AddTask(cpu.TaskSpec{Name: p.Name, Group: p.Group, Policy: p.Policy, Prio: p.Prio, DL: p.DL,
			Mask: p.Mask, Prog: p.Prog, CPU: c, Cookie: p.Cookie, Seed: o.Seed + uint64(i)*0x9e3779b97f4a7c15}); err != nil {
			return nil, err
		}
	}
	if o.OnSetup != nil {
		o.OnSetup(len(plans), len(plans))
	}
	return run, nil
}

// interruptibleLocks turns each plain lock instruction of the planned
// programs into mutex_lock_interruptible or mutex_lock_killable with
// probability prob (stress --lock-interruptible), seeded.
func interruptibleLocks(plans []workload.TaskPlan, prob float64, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x1e1a7))
	seen := map[*task.Program]bool{}
	for _, p := range plans {
		if seen[p.Prog] {
			continue
		}
		seen[p.Prog] = true
		for k := range p.Prog.Ops {
			op := &p.Prog.Ops[k]
			if op.Kind == task.OpWWLock && op.LockMode == task.LockUninterruptible {
				// ww_mutex_lock_interruptible (there is no killable one)
				if rng.Float64() < prob {
					op.LockMode = task.LockInterruptible
				}
				continue
			}
			if op.Kind != task.OpLock || op.LockMode != task.LockUninterruptible {
				continue
			}
			if rng.Float64() < prob {
				op.LockMode = task.LockInterruptible
				if rng.IntN(2) == 0 {
					op.LockMode = task.LockKillable
				}
			}
		}
	}
}

// migrateDisableRegions wraps critical sections of the workload's
// programs in migrate_disable()/migrate_enable() (stress
// --migrate-disable): each lock instruction with probability prob, drawn
// per program and instruction from the seed, when its matching unlock
// (same mutex, same nesting depth) follows and no jump leaves or enters
// the section. Jumps are renumbered; a jump to the lock lands on the
// migrate_disable, a jump past the unlock after the migrate_enable.
func migrateDisableRegions(plans []workload.TaskPlan, prob float64, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x6d6967))
	seen := map[*task.Program]bool{}
	for _, p := range plans {
		if seen[p.Prog] {
			continue
		}
		seen[p.Prog] = true
		ops := p.Prog.Ops
		before := make([]int, len(ops)+1) // migrate_disable inserted before op i
		after := make([]int, len(ops))    // migrate_enable inserted after op i
		for i, op := range ops {
			if op.Kind != task.OpLock || rng.Float64() >= prob {
				continue
			}
			j := matchingUnlock(ops, i)
			if j < 0 || jumpsCross(ops, i, j) {
				continue
			}
			before[i]++
			after[j]++
		}
		// newIdx[i]: where op i's block (its inserted disables first) starts.
		newIdx := make([]int, len(ops)+1)
		n := 0
		for i := range ops {
			newIdx[i] = n
			n += before[i] + 1 + after[i]
		}
		newIdx[len(ops)] = n
		out := make([]task.Op, 0, n)
		for i, op := range ops {
			for k := 0; k < before[i]; k++ {
				out = append(out, task.Op{Kind: task.OpMigrateDisable})
			}
			if op.Kind == task.OpLoop || op.Kind == task.OpChoose {
				op.Jump = newIdx[op.Jump]
			}
			out = append(out, op)
			for k := 0; k < after[i]; k++ {
				out = append(out, task.Op{Kind: task.OpMigrateEnable})
			}
		}
		p.Prog.Ops = out
	}
}

// matchingUnlock is the index of the unlock that ends the critical
// section opened by the lock at i, or -1.
func matchingUnlock(ops []task.Op, i int) int {
	depth := 0
	for j := i + 1; j < len(ops); j++ {
		if ops[j].Mutex != ops[i].Mutex {
			continue
		}
		switch ops[j].Kind {
		case task.OpLock:
			depth++
		case task.OpUnlock:
			if depth == 0 {
				return j
			}
			depth--
		}
	}
	return -1
}

// jumpsCross reports whether a jump leaves the critical section [i, j]
// (from inside to anywhere but (i, j]), enters it past its lock (from
// outside into (i, j]), or the section exits: wrapping it would leave a
// migrate_disable without its migrate_enable.
func jumpsCross(ops []task.Op, i, j int) bool {
	for k, op := range ops {
		inside := k >= i && k <= j
		if op.Kind == task.OpExit && inside {
			return true
		}
		if op.Kind != task.OpLoop && op.Kind != task.OpChoose {
			continue
		}
		into := op.Jump > i && op.Jump <= j
		if inside != into {
			return true
		}
	}
	return false
}

// Execute runs the machine to the end and returns the summary.
func (r *Run) Execute() *Summary {
	defer close(r.done)
	r.Machine.Run()
	if !r.Machine.Stuck && !r.Machine.Rep.Failed() {
		// one last audit of the final state
		r.Machine.Audit()
	}
	return r.Summarize()
}

// GroupSummary holds per-group latency and runtime figures.
type GroupSummary struct {
	Tasks         int    `json:"tasks"`
	RuntimeNs     int64  `json:"runtime_ns"`
	DonatedNs     int64  `json:"donated_ns"`
	MutexAcquires uint64 `json:"mutex_acquires"`
	// MutexWaits counts the contended acquisitions (the fast path failed:
	// a spin, a sleep on the wait list, or both, from the kernel's
	// contention_begin to contention_end); MeanMutexWaitNs is their mean
	// wait (exact), P90 and P99 upper bounds like P99MutexWaitNs.
	MutexWaits         uint64 `json:"mutex_waits"`
	MeanMutexWaitNs    int64  `json:"mean_mutex_wait_ns"`
	P90MutexWaitNs     int64  `json:"p90_mutex_wait_ns"`
	MaxMutexWaitNs     int64  `json:"max_mutex_wait_ns"`
	P99MutexWaitNs     int64  `json:"p99_mutex_wait_ns"` // an upper bound: the top of the histogram bucket holding the p99 (buckets ~12% wide), capped at the max
	MaxWakeupLatencyNs int64  `json:"max_wakeup_latency_ns"`
	P99WakeupLatencyNs int64  `json:"p99_wakeup_latency_ns"` // an upper bound, like P99MutexWaitNs
	// MeanWakeupLatencyNs is the mean wake-up latency (try_to_wake_up to
	// running); MeanRequestLatencyNs and MaxRequestLatencyNs are the
	// groups' request latencies (a complete() to the task's next wait,
	// as the benchmarks' figures).
	MeanWakeupLatencyNs  int64 `json:"mean_wakeup_latency_ns"`
	MeanRequestLatencyNs int64 `json:"mean_request_latency_ns"`
	MaxRequestLatencyNs  int64 `json:"max_request_latency_ns"`
}

// mean is a histogram's exact mean (0 when empty).
func mean(h *stats.Hist) int64 {
	if h.N == 0 {
		return 0
	}
	return h.Total / int64(h.N)
}

// Summary is what `proxysim run` prints.
type Summary struct {
	Seed          uint64   `json:"seed"`
	CPUs          int      `json:"cpus"`
	Topology      string   `json:"topology"`
	Tasks         int      `json:"tasks"`
	Workload      string   `json:"workload"`
	ProxyExec     bool     `json:"proxy_exec"`
	ProxyLevel    string   `json:"proxy_level"`              // off, single-rq or full
	CoreSched     string   `json:"core_sched,omitempty"`     // core scheduling: 5.14 or v3 (absent: off)
	SchedFeatures string   `json:"sched_features,omitempty"` // the fair class's features when not the kernel's defaults (the features file's format)
	Bugs          []string `json:"bugs"`
	SimTimeNs     int64    `json:"sim_time_ns"`
	// ClockSkewBoundNs is the clock skew bound the run was measured with
	// (--max-skew, at most --epoch): every latency figure of the summary
	// measures a time between events on two CPUs whose clocks may differ
	// by up to this, plus one step. MaxIPILatenessNs is the largest skew
	// a message between CPUs met (the time from an IPI's sending to its
	// taking); Windows counts the barrier's windows.
	ClockSkewBoundNs      int64                   `json:"clock_skew_bound_ns"`
	MaxIPILatenessNs      int64                   `json:"max_ipi_lateness_ns"`
	Windows               uint64                  `json:"windows"`
	WallTimeNs            int64                   `json:"wall_time_ns"`
	ContextSwitches       uint64                  `json:"context_switches"`
	Wakeups               uint64                  `json:"wakeups"`
	Migrations            uint64                  `json:"migrations"`
	MutexContentions      uint64                  `json:"mutex_contentions"`
	SwitchesPerWallSecond float64                 `json:"switches_per_wall_second"`
	EventsPerWallSecond   float64                 `json:"events_per_wall_second"`
	Violations            []check.Violation       `json:"violations"`
	Counters              map[string]uint64       `json:"counters"`
	MigrationsByReason    map[string]uint64       `json:"migrations_by_reason"`
	ChainLength           map[string]uint64       `json:"chain_length_histogram"`
	Groups                map[string]GroupSummary `json:"groups"`
	StopReason            string                  `json:"stop_reason"`
	Deterministic         bool                    `json:"deterministic"`
	Strategy              string                  `json:"strategy,omitempty"`
	TraceHash             string                  `json:"trace_hash,omitempty"` // deterministic mode: hash of the full event sequence
	Events                uint64                  `json:"events"`
	ScheduleSteps         uint64                  `json:"schedule_steps,omitempty"`
	LockOrderEdges        []string                `json:"lock_order_edges"`
	// KnownDefect names the known defect of a selected older SHARED_RUNQ
	// hook placement that broke the first violation, and the version that
	// fixed it ("" for any other violation).
	KnownDefect string `json:"known_defect,omitempty"`
	// Bench holds a benchmark workload's figures of merit (nil for others).
	Bench *BenchFigures `json:"bench,omitempty"`
	// Chain holds the figures of a scenario's chain of locks (nil for a
	// scenario without one).
	Chain *ChainFigures `json:"chain,omitempty"`
}

// Summarize reads the stopped machine.
func (r *Run) Summarize() *Summary {
	m := r.Machine
	s := &Summary{
		Seed: r.Opts.Seed, CPUs: m.NumCPUs(), Topology: m.Topology().String(), Workload: r.Scenario.Name, ProxyExec: r.Opts.Proxy,
		Bugs: r.Opts.Bugs.Names(), WallTimeNs: int64(m.WallTime()), Violations: m.Rep.Violations(),
		Counters: map[string]uint64{}, MigrationsByReason: map[string]uint64{}, ChainLength: map[string]uint64{},
		Groups: map[string]GroupSummary{}, StopReason: m.StopReason(),
		Deterministic: m.Deterministic(), Events: m.EventCount(), ScheduleSteps: m.ScheduleSteps(),
		ProxyLevel: r.Opts.ProxyLevel(),
	}
	if cs := m.CoreSched(); cs != cpu.CoreOff {
		s.CoreSched = cs.String()
	}
	if f := m.SchedFeatures(); f != rq.DefaultFeatures() {
		s.SchedFeatures = f.String()
	}
	if s.Deterministic {
		s.Strategy = r.Opts.Strategy
		s.TraceHash = fmt.Sprintf("%016x", m.TraceHash())
	}
	if s.Bugs == nil {
		s.Bugs = []string{}
	}
	if s.Violations == nil {
		s.Violations = []check.Violation{}
	}
	if len(s.Violations) > 0 {
		if what, fixed := m.SRQKnownDefect(s.Violations[0]); what != "" {
			dflt := ""
			if fixed == cpu.DefaultSRQHooks {
				dflt = ", the default"
			}
			s.KnownDefect = fmt.Sprintf("%s. Fixed in v%d (--shared-runq-hooks v%d%s)", what, fixed, fixed, dflt)
		}
	}
	s.ClockSkewBoundNs = m.SkewBound()
	for i := 0; i < m.NumCPUs(); i++ {
		if t := m.Stats[i].SimTime.Load(); t > s.SimTimeNs {
			s.SimTimeNs = t
		}
		s.MaxIPILatenessNs = max(s.MaxIPILatenessNs, m.Stats[i].IPILateMax.Load())
	}
	for k := stats.Counter(0); k < stats.NumCounters; k++ {
		s.Counters[stats.CounterNames[k]] = stats.Sum(m.Stats, k)
	}
	for rsn := trace.MigrateReason(0); rsn < trace.NumReasons; rsn++ {
		var n uint64
		for _, st := range m.Stats {
			n += st.MigrateBy[rsn].Load()
		}
		s.MigrationsByReason[rsn.String()] = n
	}
	for b := 0; b < stats.HistBuckets; b++ {
		var n uint64
		for _, st := range m.Stats {
			n += st.H[stats.HistChainLength][b].Load()
		}
		if n > 0 {
			s.ChainLength[histLabel(b)] = n
		}
	}
	s.ContextSwitches = s.Counters["context_switches"]
	s.Wakeups = s.Counters["wakeups"]
	s.Migrations = s.Counters["migrations"]
	s.MutexContentions = s.Counters["mutex_contentions"]
	if r.Jitter != nil {
		s.Counters["jitter_injected"] = r.Jitter.Fired()
	}
	if r.Stutter != nil {
		s.Counters["stutter_pauses"] = r.Stutter.Pauses()
	}
	if s.WallTimeNs > 0 {
		sec := float64(s.WallTimeNs) / 1e9
		s.SwitchesPerWallSecond = float64(s.ContextSwitches) / sec
		s.EventsPerWallSecond = float64(m.Log.Seq()) / sec
	}
	if m.Stuck {
		// CPUs are still running: reading tasks would race.
		return s
	}
	s.Windows = m.Windows()
	type acc struct {
		g              GroupSummary
		wait, lat, req stats.Hist
	}
	accs := make([]acc, len(r.Scenario.Groups))
	// Tasks count the slots (the machine's tasks at the end); the figures
	// include the tasks respawns retired from them.
	live := len(m.Tasks())
	all := append(append([]*task.Task(nil), m.Tasks()...), m.Retired()...)
	for i, p := range all {
		if p == nil {
			continue
		}
		a := &accs[p.Group]
		if i < live {
			s.Tasks++
			a.g.Tasks++
		}
		a.g.RuntimeNs += p.SE.SumExecRuntime
		a.g.DonatedNs += p.SE.DonatedRuntime
		a.g.MutexAcquires += p.Stats.Acquires
		a.wait.Merge(&p.Stats.MutexWait)
		a.lat.Merge(&p.Stats.WakeLatency)
		a.req.Merge(&p.Stats.ReqLatency)
	}
	for i, g := range r.Scenario.Groups {
		a := &accs[i]
		a.g.MutexWaits = a.wait.N
		a.g.MeanMutexWaitNs = mean(&a.wait)
		a.g.MeanWakeupLatencyNs = mean(&a.lat)
		a.g.MeanRequestLatencyNs, a.g.MaxRequestLatencyNs = mean(&a.req), a.req.Max
		a.g.P90MutexWaitNs = a.wait.QuantileBound(0.90)
		a.g.MaxMutexWaitNs = a.wait.Max
		a.g.P99MutexWaitNs = a.wait.QuantileBound(0.99)
		a.g.MaxWakeupLatencyNs = a.lat.Max
		a.g.P99WakeupLatencyNs = a.lat.QuantileBound(0.99)
		s.Groups[g.Name] = a.g
	}
	s.Chain = chainFigures(r.Scenario, all)
	s.Bench = benchFigures(r.Scenario, all, s.SimTimeNs)
	if s.Bench != nil && s.Bench.Kind == workload.MeritChain && s.Chain != nil {
		// The operations are the waiter's contended acquisitions.
		s.Bench.Chain, s.Bench.Requests = s.Chain, s.Chain.Waits
		if s.SimTimeNs > 0 {
			s.Bench.RequestsPerSec = float64(s.Chain.Waits) / (float64(s.SimTimeNs) / 1e9)
		}
	}
	for _, e := range m.Dep.Edges() {
		s.LockOrderEdges = append(s.LockOrderEdges, e[0].String()+" -> "+e[1].String())
	}
	sort.Strings(s.LockOrderEdges)
	return s
}

func histLabel(b int) string {
	if b == 0 {
		return "0"
	}
	if b >= stats.HistBuckets-1 {
		return fmt.Sprintf("%d+", 1<<(b-1))
	}
	lo, hi := 1<<(b-1), (1<<b)-1
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

// Failed reports whether the run broke an invariant.
func (s *Summary) Failed() bool { return len(s.Violations) > 0 }

// FailedAt is the virtual time a failed run had reached when it stopped
// at its first violation: the violation's own time, or for one the
// barrier's audit found with no CPU's clock to stamp it (time 0), the
// time the run had reached. A run of the same command bounded a little
// past it (--sim-time) fails the same way.
func (s *Summary) FailedAt() time.Duration {
	if !s.Failed() {
		return 0
	}
	return max(time.Duration(s.Violations[0].Time), time.Duration(s.SimTimeNs))
}

// TaskName names a task id for traces and reports.
func (r *Run) TaskName(id int32) string {
	if id < 0 {
		return fmt.Sprintf("idle/%d", -id-1)
	}
	if p := r.Machine.Task(int(id)); p != nil {
		return p.String()
	}
	if id == 0 {
		return "-"
	}
	return fmt.Sprint(id)
}

var _ = task.Running

// CheckNewidleCosts says what is wrong with newidle cost flags, naming
// the flag: each is 0 or more, at most 1ms per domain and 100us per CPU
// or task (beyond that one balance would outlast the 1ms tick).
func CheckNewidleCosts(domain, cpu, task time.Duration) error {
	for _, f := range []struct {
		name string
		v    time.Duration
		max  time.Duration
	}{{"newidle-cost", domain, time.Millisecond}, {"newidle-cpu-cost", cpu, 100 * time.Microsecond}, {"newidle-task-cost", task, 100 * time.Microsecond}} {
		if f.v < 0 || f.v > f.max {
			return fmt.Errorf("--%s %v out of range 0-%v", f.name, f.v, f.max)
		}
	}
	return nil
}

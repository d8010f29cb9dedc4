package main

import (
	"crypto/rand"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/conductor"
	"github.com/proxysim/proxysim/internal/cpu"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/sim"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/topology"
	"github.com/proxysim/proxysim/internal/workload"
)

// onOff is an on|off flag value.
type onOff struct{ v *bool }

// proxyCostsFlag is --proxy-costs: none, default, or NAME=DURATION,...
type proxyCostsFlag struct{ c *percpu.ProxyCosts }

func (f proxyCostsFlag) String() string {
	if f.c == nil {
		return "none"
	}
	return sim.FormatProxyCosts(*f.c)
}

func (f proxyCostsFlag) Set(s string) error {
	c, err := sim.ParseProxyCosts(s)
	if err != nil {
		return err
	}
	*f.c = c
	return nil
}

// offOn is an on|off flag stored inverted (a "No..." option whose zero
// value means on).
type offOn struct{ off *bool }

func (o offOn) String() string {
	if o.off == nil || !*o.off {
		return "on"
	}
	return "off"
}

func (o offOn) Set(s string) error {
	var on bool
	if err := (onOff{&on}).Set(s); err != nil {
		return err
	}
	*o.off = !on
	return nil
}

func (o onOff) String() string {
	if o.v == nil || *o.v {
		return "on"
	}
	return "off"
}

func (o onOff) Set(s string) error {
	switch strings.ToLower(s) {
	case "on", "true", "1", "yes":
		*o.v = true
	case "off", "false", "0", "no":
		*o.v = false
	default:
		return fmt.Errorf("want on or off, not %q", s)
	}
	return nil
}

// proxyLevel is the --proxy-exec value: off, single-rq, full (on and the
// other on|off spellings still work: on is full).
type proxyLevel struct{ o *sim.Options }

func (l proxyLevel) String() string {
	if l.o == nil {
		return sim.LevelFull
	}
	return l.o.ProxyLevel()
}

func (l proxyLevel) Set(s string) error {
	s = strings.ToLower(s)
	switch s {
	case "true", "1", "yes":
		s = "on"
	case "false", "0", "no":
		s = "off"
	}
	if !l.o.SetProxyLevel(s) {
		return fmt.Errorf("want off, single-rq or full (on), not %q", s)
	}
	return nil
}

// coreSchedFlag is --core-sched: alone it means on (the 5.14 pick);
// --core-sched=v3 selects RFC v3's pick, =off switches it off.
type coreSchedFlag struct{ v *string }

func (f coreSchedFlag) String() string {
	if f.v == nil || *f.v == "" {
		return "off"
	}
	return *f.v
}

func (f coreSchedFlag) Set(s string) error {
	if _, err := cpu.ParseCoreMode(s); err != nil {
		return err
	}
	*f.v = s
	return nil
}

func (f coreSchedFlag) IsBoolFlag() bool { return true }

// schedFeatures is --sched-features: the kernel's names, NO_ to clear.
type schedFeatures struct{ o *sim.Options }

// String is the features file's view: the fair class's features with
// the writes applied, then CORESCHED_STALL_FIX.
func (f schedFeatures) String() string {
	ft := rq.DefaultFeatures()
	s := "CORESCHED_STALL_FIX"
	if f.o != nil {
		for _, n := range f.o.SchedFeatures {
			ft.Set(n)
		}
		if f.o.NoStallFix {
			s = "NO_CORESCHED_STALL_FIX"
		}
		switch f.o.SharedRunq {
		case "on":
			s += ",SHARED_RUNQ"
		case "off":
			s += ",NO_SHARED_RUNQ"
		}
	}
	return ft.String() + " " + s
}

// Set takes comma-separated names as /sys/kernel/debug/sched/features
// does: NAME sets a feature, NO_NAME clears it; later writes win.
func (f schedFeatures) Set(s string) error {
	for _, n := range strings.Split(s, ",") {
		if err := setSchedFeature(f.o, strings.TrimSpace(n)); err != nil {
			return err
		}
	}
	return nil
}

// setSchedFeature sets one sched feature by its kernel name (NO_ clears).
func setSchedFeature(o *sim.Options, n string) error {
	switch n {
	case "CORESCHED_STALL_FIX":
		o.NoStallFix = false
	case "NO_CORESCHED_STALL_FIX":
		o.NoStallFix = true
	case "SHARED_RUNQ":
		o.SharedRunq = "on"
	case "NO_SHARED_RUNQ":
		o.SharedRunq = "off"
	default:
		// the fair class's features (EEVDF, delayed dequeue)
		var probe rq.Features
		if !probe.Set(n) {
			known := make([]string, 0, len(rq.FeatureNames)+2)
			for _, k := range rq.FeatureNames {
				known = append(known, k.Name)
			}
			known = append(known, "CORESCHED_STALL_FIX", "SHARED_RUNQ")
			return fmt.Errorf("unknown sched feature %q (known: %s; NO_ to clear)", n, strings.Join(known, ", "))
		}
		o.SchedFeatures = append(o.SchedFeatures, n)
	}
	return nil
}

// srqHooksFlag is --shared-runq-hooks: v2, v3 or v4 (0: the model's
// default, cpu.DefaultSRQHooks).
type srqHooksFlag struct{ v *int }

func (f srqHooksFlag) String() string {
	if f.v == nil || *f.v == 0 {
		return fmt.Sprintf("v%d", cpu.DefaultSRQHooks)
	}
	return fmt.Sprintf("v%d", *f.v)
}

func (f srqHooksFlag) Set(s string) error {
	n, err := parseSRQHooks(s)
	if err != nil {
		return err
	}
	*f.v = n
	return nil
}

func parseSRQHooks(s string) (int, error) {
	switch s {
	case "v2":
		return rq.SRQHooksV2, nil
	case "v3":
		return rq.SRQHooksV3, nil
	case "v4":
		return rq.SRQHooksV4, nil
	}
	return 0, fmt.Errorf("want v2, v3 or v4, not %q", s)
}

// srqBailoutsFlag is --shared-runq-bailouts: names, comma-separated.
type srqBailoutsFlag struct{ v *rq.SRQBailout }

func (f srqBailoutsFlag) String() string {
	if f.v == nil {
		return "none"
	}
	return f.v.String()
}

func (f srqBailoutsFlag) Set(s string) error {
	b, err := rq.ParseBailouts(strings.Split(s, ","))
	if err != nil {
		return err
	}
	*f.v = b
	return nil
}

// listFlag collects a repeatable flag.
type listFlag struct{ v *[]string }

func (l listFlag) String() string {
	if l.v == nil {
		return ""
	}
	return strings.Join(*l.v, ",")
}

func (l listFlag) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*l.v = append(*l.v, part)
		}
	}
	return nil
}

// seedFlag is a uint64 seed that remembers whether it was given.
type seedFlag struct {
	v   uint64
	set bool
}

func (s *seedFlag) String() string {
	if !s.set {
		return "random"
	}
	return strconv.FormatUint(s.v, 10)
}

func (s *seedFlag) Set(v string) error {
	n, err := strconv.ParseUint(v, 0, 64)
	if err != nil {
		return fmt.Errorf("want an unsigned integer, not %q", v)
	}
	s.v, s.set = n, true
	return nil
}

func (s *seedFlag) value() uint64 {
	if !s.set {
		var b [8]byte
		_, _ = rand.Read(b[:])
		s.v = binary.LittleEndian.Uint64(b[:]) >> 16
		s.set = true
	}
	return s.v
}

// machineFlags are the flags every simulating command shares.
type machineFlags struct {
	o        sim.Options
	serve    serveFlags
	logs     logFlags
	bugNames []string
	seed     seedFlag
	json     bool
	quiet    bool
	report   string
	trace    string
	// cpuprofile is --cpuprofile: a pprof CPU profile of the whole command.
	cpuprofile string
	events     int
	// printReport: a failure's report also goes to stderr (kubectl logs).
	printReport bool
	// set holds the flags given on the command line (after parsing).
	set map[string]bool
	// simTimeForever: a --sim-time of 0 means "until --duration or a
	// signal" (stress).
	simTimeForever bool
	// deferNeeds: finish leaves applyBugNeeds to the command (stress
	// calls it once its own defaults are in place).
	deferNeeds bool
	// needNote says what applyBugNeeds switched on ("": nothing).
	needNote string
}

func (mf *machineFlags) register(fs *flag.FlagSet, def sim.Options, reportDefault string) {
	mf.o = def
	mf.logs.level = "info"
	mf.common().register(fs, map[string]string{
		"seed":     "printed before the run; random when absent",
		"workload": "built-in: mixed, locktorture, pi, stress, wwtorture, coresched; a benchmark with parameters: hackbench, tbench, netperf, schbench, e.g. hackbench:groups=4,loops=10 (see 'proxysim ab --help'); or a scenario file (JSON)",
		"json":     "the summary, one object",
		"report":   "default " + reportDefault,
	})
	fs.StringVar(&mf.o.Topology, "topology", "", "machine shape SOCKETSs-LLCSllc-CORESc-THREADSt, counts per parent, e.g. 2s-8llc-8c-2t (256 CPUs, the default for 256); sets --cpus when --cpus is not given")
	fs.IntVar(&mf.o.Tasks, "tasks", def.Tasks, "tasks of a built-in workload (0: the workload's default, about 2 per CPU)")
	if mf.simTimeForever {
		fs.DurationVar(&mf.o.SimTime, "sim-time", 0, "virtual time to simulate (0: until --duration or a signal)")
	} else {
		fs.DurationVar(&mf.o.SimTime, "sim-time", def.SimTime, "virtual time to simulate")
	}
	fs.DurationVar(&mf.o.Duration, "duration", def.Duration, "wall-clock cap (0: none); the run stops cleanly when it passes")
	fs.Var(proxyLevel{&mf.o}, "proxy-exec", "proxy execution off|single-rq|full (on = full): off is the sched_proxy_exec boot argument off, single-rq upstream's same-runqueue proxying (proxy_deactivate otherwise), full the whole series")
	fs.Var(onOff{&mf.o.SleepingOwners}, "sleeping-owners", "full-series sleeping-owner parking on|off (off: proxy_deactivate)")
	fs.Var(coreSchedFlag{&mf.o.CoreSched}, "core-sched", "core scheduling on SMT siblings: --core-sched (the merged 5.14 core-wide pick, the reference's proxy hooks), --core-sched=v3 (RFC v3's pick_task), =off (default); untagged workloads get cookies by group")
	fs.Var(schedFeatures{&mf.o}, "sched-features", "sched features by the kernel's names, comma-separated, NO_ to clear (as /sys/kernel/debug/sched/features): PLACE_LAG, PLACE_DEADLINE_INITIAL, PLACE_REL_DEADLINE, RUN_TO_PARITY, PREEMPT_SHORT, DELAY_DEQUEUE, DELAY_ZERO (EEVDF; all on by default, as in the kernel), CORESCHED_STALL_FIX (default on; read by --core-sched=v3); SHARED_RUNQ (default off: David Vernet's shared per-LLC runqueue; NO_SHARED_RUNQ builds it with the feature clear)")
	fs.IntVar(&mf.o.SRQShardSize, "shared-runq-shard-size", cpu.DefaultSRQShardSize, "SHARED_RUNQ: CPUs per shard of an LLC's shared runqueue (SHARED_RUNQ_SHARD_SZ, v3: 6)")
	fs.Var(srqHooksFlag{&mf.o.SRQHooks}, "shared-runq-hooks", "SHARED_RUNQ hook placement: v2 (push on wakeup, remove when picked), v3 (__enqueue_entity / __dequeue_entity, pull first in newidle), v4 (v3's plus v4's rechecks, rd->overload and ttwu_pending tests, <= LLC domains skipped). v2 and v3 keep their known defect, a pull with no is_cpu_allowed recheck (a violation it causes says so)")
	fs.Var(srqBailoutsFlag{&mf.o.SRQBailouts}, "shared-runq-bailouts", "SHARED_RUNQ bailouts of Prateek's diff, comma-separated: overload, avg-idle, shard-overload, ttwu-pending, discard-head, charge-cost, skip-llc (or none, all)")
	fs.DurationVar(&mf.o.NewidleCost, "newidle-cost", def.NewidleCost, "virtual time newidle balancing costs the CPU per domain balanced (sched_balance_rq) and per shared_runq lock taken; with --newidle-cpu-cost and --newidle-task-cost (all 0: free)")
	fs.DurationVar(&mf.o.NewidleCPUCost, "newidle-cpu-cost", def.NewidleCPUCost, "virtual time newidle balancing costs per CPU of a domain's span whose runqueue it reads (find_busiest_group)")
	fs.DurationVar(&mf.o.NewidleTaskCost, "newidle-task-cost", def.NewidleTaskCost, "virtual time newidle balancing costs per task it examines for a pull (detach_tasks' can_migrate_task)")
	fs.Var(offOn{&mf.o.NoOptimisticSpin}, "optimistic-spin", "mutex optimistic spinning on|off (mutex_optimistic_spin: spin while the owner runs; off: CONFIG_MUTEX_SPIN_ON_OWNER=n)")
	fs.Var(proxyCostsFlag{&mf.o.ProxyCosts}, "proxy-costs", "virtual time the proxy-execution series' own work costs where it happens: none (default here), default (proxysim ab's: "+sim.FormatProxyCosts(sim.DefaultProxyCosts)+"), or link=,repick=,migrate=,return=,park= durations (docs/benchmarks.md)")
	fs.Var(listFlag{&mf.bugNames}, "bug", "switch a catalogued bug back on (repeatable; see 'proxysim bugs')")
	fs.DurationVar(&mf.o.Tick, "tick", def.Tick, "virtual scheduler tick")
	fs.DurationVar(&mf.o.Epoch, "epoch", def.Epoch, "virtual time between stop-the-world barriers (audits, RCU grace periods, hotplug steps run there)")
	fs.DurationVar(&mf.o.MaxSkew, "max-skew", def.MaxSkew, "clock skew bound: how far a CPU's virtual clock may run ahead of the earliest pending event of any CPU, so a cross-CPU event (IPI, wake-up, lock hand-off, migration) is handled at most this late (plus one step); at most --epoch takes effect")
	fs.IntVar(&mf.o.AuditEvery, "audit-every", def.AuditEvery, "run the stop-the-world invariant audit every N epochs (0: never)")
	fs.IntVar(&mf.o.RingSize, "ring-size", def.RingSize, "flight-recorder events kept per CPU")
	fs.DurationVar(&mf.o.HangTimeout, "hang-timeout", def.HangTimeout, "real time without progress before the watchdog reports a hang (concurrent mode only: deterministic mode counts conductor turns)")
	fs.DurationVar(&mf.o.WakingBound, "waking-bound", def.WakingBound, "virtual time a woken donor (blocked_on cleared, still queued with is_blocked) may wait to be run, returned or deactivated (0: no bound)")
	fs.StringVar(&mf.trace, "trace", "", "write the last events as Chrome/Perfetto trace-event JSON to this file")
	fs.StringVar(&mf.cpuprofile, "cpuprofile", "", "write a pprof CPU profile of the command to this file (go tool pprof FILE)")
	fs.IntVar(&mf.events, "report-events", 400, "events of all CPUs to include in a failure report")
	fs.BoolVar(&mf.printReport, "print-report", false, "on a failure, also print the report to stderr (for a container: kubectl logs shows it after the pod is gone from disk)")
	if def.Strategy == "" {
		def.Strategy = "time"
	}
	fs.BoolVar(&mf.o.Deterministic, "deterministic", def.Deterministic, "serial mode: one CPU goroutine at a time, switched at every yield point by --strategy; same seed, same run")
	fs.StringVar(&mf.o.Strategy, "strategy", def.Strategy, "deterministic strategy: time (smallest virtual clock first), random, or pct:D (with --deterministic)")
	mf.serve.register(fs)
	mf.logs.register(fs)
}

// common points the common flags at mf's storage.
func (mf *machineFlags) common() commonFlags {
	return commonFlags{seed: &mf.seed, cpus: &mf.o.CPUs, workload: &mf.o.Workload, quiet: &mf.quiet, json: &mf.json,
		logLevel: &mf.logs.level, report: &mf.report}
}

// finish validates the flags after parsing.
func (mf *machineFlags) finish(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	mf.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { mf.set[f.Name] = true })
	if mf.simTimeForever && mf.o.SimTime == 0 {
		mf.o.SimTime = forever
	}
	if mf.o.CPUs < 1 || mf.o.CPUs > task.MaxCPUs {
		return usagef("--cpus %d out of range 1-%d", mf.o.CPUs, task.MaxCPUs)
	}
	if mf.o.Topology != "" {
		tp, err := topology.Parse(mf.o.Topology)
		if err != nil {
			return usagef("--topology: %v", err)
		}
		cpusSet := false
		fs.Visit(func(f *flag.Flag) { cpusSet = cpusSet || f.Name == "cpus" })
		if !cpusSet {
			mf.o.CPUs = tp.NumCPUs()
		} else if tp.NumCPUs() != mf.o.CPUs {
			return usagef("--topology %s has %d CPUs, but --cpus is %d", tp, tp.NumCPUs(), mf.o.CPUs)
		}
	}
	if mf.o.Tasks < 0 || mf.o.Tasks > 1<<20 {
		return usagef("--tasks %d out of range 0-%d", mf.o.Tasks, 1<<20)
	}
	if mf.o.SimTime <= 0 {
		return usagef("--sim-time must be positive, not %v", mf.o.SimTime)
	}
	if mf.o.Duration < 0 {
		return usagef("--duration must not be negative")
	}
	if mf.o.Tick < time.Microsecond || mf.o.Epoch < time.Microsecond {
		return usagef("--tick and --epoch must be at least 1us")
	}
	if mf.o.MaxSkew < 100*time.Nanosecond {
		return usagef("--max-skew must be at least 100ns, not %v", mf.o.MaxSkew)
	}
	if mf.o.AuditEvery < 0 {
		return usagef("--audit-every must not be negative")
	}
	if mf.o.RingSize < 16 || mf.o.RingSize > 1<<22 {
		return usagef("--ring-size %d out of range 16-%d", mf.o.RingSize, 1<<22)
	}
	if mf.events < 0 {
		return usagef("--report-events must not be negative")
	}
	if mf.o.HangTimeout <= 0 {
		return usagef("--hang-timeout must be positive, not %v", mf.o.HangTimeout)
	}
	if mf.o.WakingBound < 0 {
		return usagef("--waking-bound must not be negative (0: no bound), not %v", mf.o.WakingBound)
	}
	// checked with or without --deterministic: a typo must not wait for
	// the day the flag is used
	if _, err := conductor.ParseStrategy(mf.o.Strategy); err != nil {
		return usagef("--strategy: %v", err)
	}
	if mf.set["strategy"] && !mf.o.Deterministic {
		return usagef("--strategy applies to deterministic runs: add --deterministic")
	}
	b, err := bugs.Parse(mf.bugNames)
	if err != nil {
		return usagef("--bug: %v", err)
	}
	mf.o.Bugs = b
	if b != 0 && !mf.o.Proxy {
		return usagef("--bug needs --proxy-exec on: every catalogued bug lives in proxy-execution code")
	}
	if mf.o.SRQShardSize < 1 || mf.o.SRQShardSize > task.MaxCPUs {
		return usagef("--shared-runq-shard-size %d out of range 1-%d", mf.o.SRQShardSize, task.MaxCPUs)
	}
	if err := sim.CheckNewidleCosts(mf.o.NewidleCost, mf.o.NewidleCPUCost, mf.o.NewidleTaskCost); err != nil {
		return usagef("%v", err)
	}
	if !mf.deferNeeds {
		if err := mf.applyBugNeeds(sim.NeedsOff{}); err != nil {
			return err
		}
	}
	mf.o.Seed = mf.seed.value()
	return mf.serve.finish(mf)
}

// applyBugNeeds switches on what the --bug entries need to run
// (sim.EnableBugNeeds; the line that says so goes to mf.needNote) or refuses the command line, and then checks the
// SHARED_RUNQ knobs against the features the run ends up with. off says
// which injectors the command line switched off on purpose.
func (mf *machineFlags) applyBugNeeds(off sim.NeedsOff) error {
	if mf.o.Bugs.Needs() != 0 {
		sc, err := mf.loadScenario()
		if err != nil {
			return err
		}
		note, err := sim.EnableBugNeeds(&mf.o, sc, off)
		if err != nil {
			return usagef("%v", err)
		}
		mf.needNote = note
	}
	if mf.o.SharedRunq == "" && mf.o.SRQToggleInterval == 0 {
		for _, n := range []string{"shared-runq-hooks", "shared-runq-bailouts", "shared-runq-shard-size"} {
			if mf.set[n] {
				return usagef("--%s needs --sched-features SHARED_RUNQ (or NO_SHARED_RUNQ)", n)
			}
		}
	}
	return nil
}

// printNeedNote prints, as the command's first line on stderr, what
// applyBugNeeds switched on.
func (mf *machineFlags) printNeedNote(verb string, stderr io.Writer) {
	if mf.needNote != "" {
		fmt.Fprintf(stderr, "proxysim %s: %s\n", verb, mf.needNote)
	}
}

// bugNeedsHelp is the --help paragraph of the commands that take --bug.
const bugNeedsHelp = `--bug NAME switches a catalogued bug back on. What an entry needs to run
at all ('proxysim bugs', column NEEDS) is switched on when it is off by
default and the command line does not rule it out: core scheduling (the
5.14 pick, or v3's for coresched-stall), core-scheduling flips, SHARED_RUNQ
and its drains, CPU hotplug, SIGKILLs; the first line on stderr says what
was switched on. A need the command line rules out (--core-sched=off,
another core pick, --shared-runq-hooks v2, NO_SHARED_RUNQ,
NO_DELAY_DEQUEUE, an injector given 0) or the workload cannot meet (no
deadline, real-time or ww_mutex tasks) is refused: exit 2, one line naming
what to add.

`

// forever is the virtual time of a run that ends only at --duration or a
// signal.
const forever = time.Duration(1 << 62)

// checkOutputs checks, before anything runs, that the output files the
// user named (--trace, --report, --cpuprofile) can be written.
func (mf *machineFlags) checkOutputs() error {
	for _, f := range []struct{ flag, path string }{{"trace", mf.trace}, {"report", mf.report}, {"cpuprofile", mf.cpuprofile}} {
		if f.path == "" {
			continue
		}
		if err := sim.CheckWritable(f.path); err != nil {
			return usagef("--%s: %v", f.flag, err)
		}
	}
	return nil
}

// loadScenario resolves --workload and checks that the command line does
// not contradict a scenario file.
func (mf *machineFlags) loadScenario() (*workload.Scenario, error) {
	sc, err := sim.LoadScenario(mf.o.Workload, mf.o.CPUs, mf.o.Tasks)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	if !sim.IsBuiltin(mf.o.Workload) {
		if sc.CPUs > 0 && mf.set["cpus"] && sc.CPUs != mf.o.CPUs {
			return nil, usagef("--cpus %d contradicts %s, which sets \"cpus\": %d (leave --cpus out, or set \"cpus\": 0 in the file)", mf.o.CPUs, mf.o.Workload, sc.CPUs)
		}
		if mf.set["tasks"] {
			return nil, usagef("--tasks applies to built-in workloads; %s sets each group's \"count\"", mf.o.Workload)
		}
	}
	return sc, nil
}

// newFlagSet is a command's flag set: errors are returned (parse turns
// them into one line and exit 2), nothing is printed by the flag package.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses flags; on a bad flag it returns a one-line usage error, on
// --help it prints the usage to stdout.
func parse(fs *flag.FlagSet, args []string, usage string, stdout io.Writer) error {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fmt.Fprint(stdout, usage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			fmt.Fprint(stdout, "\n"+exitCodesLine+"\n")
			return err
		}
		return usageError{err.Error()}
	}
	return nil
}

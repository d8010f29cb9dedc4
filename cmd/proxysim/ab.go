package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/proxysim/proxysim/internal/ab"
	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/conductor"
	"github.com/proxysim/proxysim/internal/cpu"
	"github.com/proxysim/proxysim/internal/hostbench"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/sim"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/topology"
	"github.com/proxysim/proxysim/internal/workload"
)

const abUsage = `Usage: proxysim ab [flags]

A/B benchmark tables in the format of the proxy-execution series' test
reports. Runs a benchmark workload (--workload hackbench|tbench|netperf|
schbench|inversion|chain, with parameters after a colon) for every case (--cases: the
benchmark's groups, clients, workers, hogs or links) and every configuration (--configs,
separated by ';': a proxy-execution level off|single-rq|full, optionally
followed by +BUG for catalogued bugs, e.g. "off;single-rq;full;full+cpu-before-on-rq")
over --seeds seeds, as deterministic runs (exact timing: the time strategy,
clock skew bound --max-skew), in parallel up to the host's cores. Prints, per case, each configuration's statistic
normalised to the first configuration: ratio [percent improvement](CV),
then the raw statistic, the cost-adjusted table and the counts per
operation that explain the differences.

--out FILE keeps every run's result (JSON, rewritten via a temporary file
as runs finish); run again with the same --out to resume: results already
in it are not rerun. --format json prints the table and every per-seed
value; --plot FILE.png draws the percent improvement per case with the CV
as error bars. --calibrate derives the cost model from perf bench.

Benchmarks and their parameters:
%s
Flags:
`

type abFlags struct {
	workload string
	cases    string
	configs  string
	// newidleCost, newidleCPUCost and newidleTaskCost are the newidle
	// cost flags, for every run.
	newidleCost, newidleCPUCost, newidleTaskCost time.Duration
	seeds                                        int
	seed                                         seedFlag
	json                                         bool
	cpus                                         int
	topology                                     string
	simTime                                      time.Duration
	strategy                                     string
	metric                                       string
	stat                                         string
	format                                       string
	out                                          string
	plot                                         string
	jobs                                         int
	quiet                                        bool
	calibrate                                    bool
	auditEvery                                   int
	noSpin                                       bool
	proxyCosts                                   percpu.ProxyCosts
	maxSkew                                      time.Duration
	cost                                         ab.Cost
	set                                          map[string]bool
}

// common points the common flags at f's storage.
func (f *abFlags) common() commonFlags {
	return commonFlags{seed: &f.seed, cpus: &f.cpus, workload: &f.workload, quiet: &f.quiet, json: &f.json, out: &f.out}
}

// abConfig is one column of the table: a proxy-execution level and bugs.
type abConfig struct {
	name  string
	level string
	bugs  bugs.Set
	// feats are sched features (SHARED_RUNQ, NO_SHARED_RUNQ, ...) and
	// srq the shared_runq knobs (hooks=, bail=) of the config.
	feats []string
	srq   []string
	// noSleepingOwners (+no-sleeping-owners) is the full series without
	// sleeping-owner parking: a donor of a sleeping owner is deactivated
	// (the posted "Donor Migration" part before the rest of the series).
	noSleepingOwners bool
}

// apply sets the config's level, bugs, features and shared_runq knobs
// (checked by parseABConfigs) in o.
func (c abConfig) apply(o *sim.Options) {
	o.SetProxyLevel(c.level)
	o.Bugs = c.bugs
	if c.noSleepingOwners {
		o.SleepingOwners = false
	}
	for _, n := range c.feats {
		_ = setSchedFeature(o, n)
	}
	for _, k := range c.srq {
		_ = applySRQKnob(o, k)
	}
}

// checkNeeds refuses a config whose bugs need what it does not name (an
// A/B column switches nothing on by itself): sc is the benchmark.
func (c abConfig) checkNeeds(sc *workload.Scenario) error {
	o := sim.Defaults()
	c.apply(&o)
	note, err := sim.EnableBugNeeds(&o, sc, sim.NeedsOff{})
	if err != nil {
		return fmt.Errorf("config %q: %v", c.name, err)
	}
	if note != "" {
		return fmt.Errorf("config %q: %s (a config switches on only what it names: add a feature, e.g. +SHARED_RUNQ, or use proxysim stress)",
			c.name, strings.Replace(note, ": switched on what it needs: ", " needs ", 1))
	}
	return nil
}

func parseABConfigs(s string) ([]abConfig, error) {
	var out []abConfig
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		fields := strings.Split(part, "+")
		c := abConfig{name: part, level: strings.TrimSpace(fields[0])}
		var o sim.Options
		if !o.SetProxyLevel(c.level) {
			return nil, fmt.Errorf("config %q: proxy-exec level %q: want off, single-rq or full", part, c.level)
		}
		c.level = o.ProxyLevel()
		var names []string
		var probe sim.Options
		for _, b := range fields[1:] {
			b = strings.TrimSpace(b)
			switch {
			case b != "" && strings.ToUpper(b) == b:
				// a sched feature by its kernel name
				if err := setSchedFeature(&probe, b); err != nil {
					return nil, fmt.Errorf("config %q: %v", part, err)
				}
				c.feats = append(c.feats, b)
			case b == "no-sleeping-owners":
				if c.level != sim.LevelFull {
					return nil, fmt.Errorf("config %q: no-sleeping-owners needs the full level", part)
				}
				c.noSleepingOwners = true
			case strings.HasPrefix(b, "hooks=") || strings.HasPrefix(b, "bail="):
				if err := applySRQKnob(&probe, b); err != nil {
					return nil, fmt.Errorf("config %q: %v", part, err)
				}
				c.srq = append(c.srq, b)
			default:
				names = append(names, b)
			}
		}
		if len(c.srq) > 0 && probe.SharedRunq == "" {
			return nil, fmt.Errorf("config %q: hooks= and bail= need SHARED_RUNQ or NO_SHARED_RUNQ", part)
		}
		bs, err := bugs.Parse(names)
		if err != nil {
			return nil, fmt.Errorf("config %q: %v", part, err)
		}
		if bs != 0 && c.level == sim.LevelOff {
			return nil, fmt.Errorf("config %q: bugs need proxy execution (single-rq or full)", part)
		}
		c.bugs = bs
		if seen[part] {
			return nil, fmt.Errorf("config %q given twice", part)
		}
		seen[part] = true
		out = append(out, c)
	}
	if len(out) < 2 {
		return nil, fmt.Errorf("want at least two configs separated by ';', not %q", s)
	}
	return out, nil
}

func parseCases(s string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("case %q: want a whole number (the benchmark says which are in range)", part)
		}
		if seen[n] {
			return nil, fmt.Errorf("case %d given twice", n)
		}
		seen[n] = true
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no cases in %q", s)
	}
	return out, nil
}

func defaultCases(bench string) string {
	switch bench {
	case "tbench", "netperf":
		return "1,2,4,8,16,32,64"
	case "inversion":
		return "0,16,32,64"
	case "chain":
		return "1,3,7"
	}
	return "1,2,4,8,16"
}

// defaultSimTime is the virtual time of a benchmark's run: hackbench
// stops when it finishes; schbench's requests take 17 ms and inversion's
// RT thread runs every 1 ms, so they need longer than the request/response
// benchmarks.
func defaultSimTime(bench string) time.Duration {
	switch bench {
	case "hackbench", "schbench", "inversion":
		return time.Second
	case "chain":
		return 2 * time.Second // a chain forms every 9 ms
	}
	return 50 * time.Millisecond
}

// newABFlags is ab's flag set.
func newABFlags() (*flag.FlagSet, *abFlags) {
	fs := newFlagSet("ab")
	f := &abFlags{workload: "hackbench", cpus: 32, seed: fixedSeed(1)}
	def := ab.DefaultCost()
	f.common().register(fs, map[string]string{
		"seed":     "the first; default 1",
		"workload": "a benchmark and its parameters but the case's: hackbench, tbench, netperf, schbench, inversion, chain, e.g. hackbench:pipe=1",
		"quiet":    "the runs-done line",
		"json":     "the table and every per-seed value: --format json",
		"out":      "the results file (JSON), every run's result, rewritten as runs finish; run again with it to resume",
	})
	fs.StringVar(&f.cases, "cases", "", "comma-separated values of the benchmark's case parameter (groups, clients, workers, hogs, links); default 1,2,4,8,16 (tbench, netperf: up to 64; inversion: 0,16,32,64; chain: 1,3,7)")
	fs.StringVar(&f.configs, "configs", "off;single-rq;full", "';'-separated configs, the first the baseline: LEVEL[+BUG...][+FEATURE...][+hooks=v2|v3|v4][+bail=NAME,...][+no-sleeping-owners] with LEVEL off|single-rq|full, FEATURE a sched feature (SHARED_RUNQ, NO_SHARED_RUNQ), hooks and bail the shared_runq knobs, no-sleeping-owners full without sleeping-owner parking")
	simDef := sim.Defaults()
	fs.DurationVar(&f.newidleCost, "newidle-cost", simDef.NewidleCost, "virtual time newidle balancing costs per domain balanced and per shared_runq lock taken, in every run (see proxysim run --help)")
	fs.DurationVar(&f.newidleCPUCost, "newidle-cpu-cost", simDef.NewidleCPUCost, "virtual time newidle balancing costs per CPU of a domain's span it reads, in every run")
	fs.DurationVar(&f.newidleTaskCost, "newidle-task-cost", simDef.NewidleTaskCost, "virtual time newidle balancing costs per task it examines for a pull, in every run")
	fs.IntVar(&f.seeds, "seeds", 5, "seeds per case and config (1-1000)")
	fs.StringVar(&f.topology, "topology", "", "machine shape (see proxysim run --help); sets --cpus when --cpus is not given")
	fs.DurationVar(&f.simTime, "sim-time", 0, "virtual time per run (default: 1s for hackbench, which stops when it finishes, schbench and inversion; 2s for chain; 50ms for tbench and netperf)")
	fs.StringVar(&f.strategy, "strategy", "time", "deterministic strategy: time (exact timing), random, pct:D")
	fs.DurationVar(&f.maxSkew, "max-skew", simDef.MaxSkew, "clock skew bound of every run (see proxysim run --help); results of an --out file measured with a larger one are flagged (*)")
	fs.StringVar(&f.metric, "metric", "", "figure of merit (default: the benchmark's; schbench: wakeup_p99, request_p99 or rps; inversion: rt_wait_p99, rt_wait_mean or fair_rps; chain: wait_mean, wait_p90, wait_max or unwind)")
	fs.StringVar(&f.stat, "stat", "", "statistic over seeds: AMean, HMean or Median (default: the reports' for the benchmark)")
	fs.StringVar(&f.format, "format", "text", "table format: text, csv or json (json holds every per-seed value)")
	fs.StringVar(&f.plot, "plot", "", "draw percent improvement per case, CV as error bars, to this PNG file")
	fs.IntVar(&f.jobs, "jobs", runtime.NumCPU(), fmt.Sprintf("runs in parallel, 1 to the host's cores (%d)", runtime.NumCPU()))
	fs.BoolVar(&f.calibrate, "calibrate", false, "derive the cost model from perf bench sched pipe and messaging (needs perf), print it and exit")
	fs.IntVar(&f.auditEvery, "audit-every", 50, "invariant audit every N epochs (0: never)")
	f.proxyCosts = sim.DefaultProxyCosts
	fs.Var(proxyCostsFlag{&f.proxyCosts}, "proxy-costs", "virtual time the proxy-execution series' own work costs where it happens, in every run: default ("+sim.FormatProxyCosts(sim.DefaultProxyCosts)+", docs/benchmarks.md), none, or link=,repick=,migrate=,return=,park= durations (--calibrate prints this machine's)")
	fs.Var(offOn{&f.noSpin}, "optimistic-spin", "mutex optimistic spinning on|off in every run (default on, as in the kernel; off: waiters block, as the series' A/B reports' contended paths do)")
	fs.Float64Var(&f.cost.ContextSwitch, "cost-switch", def.ContextSwitch, "cost model: ns per context switch beyond the 1us the simulation charges")
	fs.Float64Var(&f.cost.Migration, "cost-migration", def.Migration, "cost model: ns per migration")
	fs.Float64Var(&f.cost.IPI, "cost-ipi", def.IPI, "cost model: ns per IPI")
	fs.Float64Var(&f.cost.LockAcquire, "cost-lock", def.LockAcquire, "cost model: ns per raw spinlock acquisition (rq lock and the others)")
	fs.Float64Var(&f.cost.LockContended, "cost-lock-contended", def.LockContended, "cost model: ns per contended spinlock acquisition")
	fs.Float64Var(&f.cost.JuggleRetry, "cost-juggle", def.JuggleRetry, "cost model: ns per lock-juggling retry")
	fs.Float64Var(&f.cost.FPTStep, "cost-fpt-step", def.FPTStep, "cost model: ns per find_proxy_task link walked")
	return fs, f
}

func cmdAB(args []string, stdout, stderr io.Writer) (int, error) {
	usage := fmt.Sprintf(abUsage, workload.BenchmarkHelp())
	fs, f := newABFlags()
	if err := parse(fs, args, usage, stdout); err != nil {
		return 0, err
	}
	if fs.NArg() > 0 {
		return 0, usagef("unexpected argument %q", fs.Arg(0))
	}
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	if f.json {
		if f.set["format"] && f.format != "json" {
			return 0, usagef("--json is --format json, not --format %s", f.format)
		}
		f.format = "json"
	}
	if f.calibrate {
		return calibrate(stdout, stderr)
	}
	spec, cfgs, m, stat, err := f.validate()
	if err != nil {
		return 0, err
	}
	prev, err := ab.ReadFile(f.out)
	if err != nil {
		return 0, usagef("--out: %v", err)
	}
	if prev != nil && !prev.Spec.Same(spec) {
		return 0, usagef("--out %s holds results of another matrix (workload %s, %d CPUs %s, virtual %v, strategy %s): use another file", f.out,
			prev.Spec.Workload, prev.Spec.CPUs, prev.Spec.Topology, time.Duration(prev.Spec.SimTimeNs), prev.Spec.Strategy)
	}
	in := watchInterrupts(stderr, "the matrix")
	defer in.close()
	file, runErr := runMatrix(spec, cfgs, prev, *f, in, stderr)
	if file == nil {
		return exitInternal, runErr
	}
	if f.out != "" {
		if err := sim.WriteFileAtomic(f.out, file.Write); err != nil {
			return exitInternal, err
		}
	}
	if runErr != nil {
		return exitInternal, runErr
	}
	t := ab.Build(file, m, stat, f.cost)
	switch f.format {
	case "csv":
		err = t.WriteCSV(stdout)
	case "json":
		err = t.WriteJSON(stdout, file.Results)
	default:
		err = t.WriteText(stdout)
	}
	if err != nil {
		return exitInternal, err
	}
	if f.plot != "" {
		if err := sim.WriteFileAtomic(f.plot, t.WritePNG); err != nil {
			return exitInternal, fmt.Errorf("--plot: %v", err)
		}
	}
	if in.interrupted() {
		fmt.Fprintf(stderr, "proxysim ab: interrupted: the table holds the runs done; run again with the same --out to finish\n")
		return in.exitCode(), nil
	}
	for _, r := range file.Results {
		if len(r.Violations) > 0 {
			fmt.Fprintf(stderr, "proxysim ab: invariant violation in case %d, config %s, seed %d: %s\n", r.Case, r.Config, r.Seed, r.Violations[0])
			return exitViolation, nil
		}
	}
	return exitOK, nil
}

// validate checks the flags (one-line usage errors) and returns the
// matrix's spec, configs, metric and statistic.
func (f *abFlags) validate() (ab.Spec, []abConfig, ab.Metric, string, error) {
	var spec ab.Spec
	fail := func(format string, a ...any) (ab.Spec, []abConfig, ab.Metric, string, error) {
		return spec, nil, ab.Metric{}, "", usagef(format, a...)
	}
	name, params, _ := strings.Cut(f.workload, ":")
	primary := workload.BenchmarkPrimary(name)
	if primary == "" {
		return fail("--workload %q: not a benchmark (benchmarks: %s)", f.workload, strings.Join(workload.BenchmarkNames(), ", "))
	}
	for _, kv := range strings.Split(params, ",") {
		if k, _, _ := strings.Cut(kv, "="); strings.TrimSpace(k) == primary {
			return fail("--workload %q sets %s, which --cases varies", f.workload, primary)
		}
	}
	if _, err := workload.Benchmark(f.workload); err != nil {
		return fail("--workload: %v", err)
	}
	if f.cases == "" {
		f.cases = defaultCases(name)
	}
	cases, err := parseCases(f.cases)
	if err != nil {
		return fail("--cases: %v", err)
	}
	for _, c := range cases {
		if _, err := workload.Benchmark(withParam(f.workload, primary, c)); err != nil {
			return fail("--cases: %v", err)
		}
	}
	cfgs, err := parseABConfigs(f.configs)
	if err != nil {
		return fail("--configs: %v", err)
	}
	bench, err := workload.Benchmark(withParam(f.workload, primary, cases[0]))
	if err != nil {
		return fail("--cases: %v", err)
	}
	for _, c := range cfgs {
		if err := c.checkNeeds(bench); err != nil {
			return fail("--configs: %v", err)
		}
	}
	if err := sim.CheckNewidleCosts(f.newidleCost, f.newidleCPUCost, f.newidleTaskCost); err != nil {
		return fail("%v", err)
	}
	if f.seeds < 1 || f.seeds > 1000 {
		return fail("--seeds %d out of range 1-1000", f.seeds)
	}
	if f.topology != "" {
		tp, err := topology.Parse(f.topology)
		if err != nil {
			return fail("--topology: %v", err)
		}
		if !f.set["cpus"] {
			f.cpus = tp.NumCPUs()
		} else if tp.NumCPUs() != f.cpus {
			return fail("--topology %s has %d CPUs, but --cpus is %d", tp, tp.NumCPUs(), f.cpus)
		}
		f.topology = tp.String()
	}
	if f.cpus < 1 || f.cpus > task.MaxCPUs {
		return fail("--cpus %d out of range 1-%d", f.cpus, task.MaxCPUs)
	}
	if f.topology == "" {
		f.topology = topology.Default(f.cpus).String()
	}
	if f.simTime == 0 {
		f.simTime = defaultSimTime(name)
	}
	if f.simTime < time.Millisecond {
		return fail("--sim-time must be at least 1ms, not %v", f.simTime)
	}
	if _, err := conductor.ParseStrategy(f.strategy); err != nil {
		return fail("--strategy: %v", err)
	}
	if f.maxSkew < 100*time.Nanosecond {
		return fail("--max-skew must be at least 100ns, not %v", f.maxSkew)
	}
	m, err := ab.FindMetric(name, f.metric)
	if err != nil {
		return fail("--metric: %v", err)
	}
	stat := m.Stat
	if f.stat != "" {
		s, ok := ab.ParseStat(f.stat)
		if !ok {
			return fail("--stat %q: want AMean, HMean or Median", f.stat)
		}
		stat = s
	}
	switch f.format {
	case "text", "csv", "json":
	default:
		return fail("--format %q: want text, csv or json", f.format)
	}
	if f.jobs < 1 || f.jobs > runtime.NumCPU() {
		return fail("--jobs %d out of range 1-%d (the host's cores)", f.jobs, runtime.NumCPU())
	}
	if f.auditEvery < 0 {
		return fail("--audit-every must not be negative")
	}
	for _, c := range []struct {
		name string
		v    float64
	}{{"cost-switch", f.cost.ContextSwitch}, {"cost-migration", f.cost.Migration}, {"cost-ipi", f.cost.IPI}, {"cost-lock", f.cost.LockAcquire},
		{"cost-lock-contended", f.cost.LockContended}, {"cost-juggle", f.cost.JuggleRetry}, {"cost-fpt-step", f.cost.FPTStep}} {
		if c.v < 0 || c.v > 1e9 {
			return fail("--%s %g out of range 0-1e9 ns", c.name, c.v)
		}
	}
	for _, o := range []struct{ flag, path string }{{"out", f.out}, {"plot", f.plot}} {
		if o.path == "" {
			continue
		}
		if err := sim.CheckWritable(o.path); err != nil {
			return fail("--%s: %v", o.flag, err)
		}
	}
	if f.plot != "" && !strings.HasSuffix(strings.ToLower(f.plot), ".png") {
		return fail("--plot %q: want a .png file", f.plot)
	}
	if f.out != "" && f.out == f.plot {
		return fail("--out and --plot name the same file")
	}
	var names []string
	for _, c := range cfgs {
		names = append(names, c.name)
	}
	spec = ab.Spec{Workload: f.workload, Bench: name, Primary: primary, CPUs: f.cpus, Topology: f.topology, SimTimeNs: int64(f.simTime),
		Strategy: f.strategy, Cases: cases, Configs: names, Seeds: f.seeds, FirstSeed: f.seed.v, NoOptimisticSpin: f.noSpin,
		NewidleCostNs: int64(f.newidleCost), NewidleCPUCostNs: int64(f.newidleCPUCost), NewidleTaskCostNs: int64(f.newidleTaskCost),
		ProxyCosts: f.proxyCosts, MaxSkewNs: int64(min(f.maxSkew, sim.Defaults().Epoch))}
	return spec, cfgs, m, stat, nil
}

// withParam adds key=v to a benchmark spec.
func withParam(spec, key string, v int) string {
	if strings.Contains(spec, ":") {
		return fmt.Sprintf("%s,%s=%d", spec, key, v)
	}
	return fmt.Sprintf("%s:%s=%d", spec, key, v)
}

// runMatrix runs the jobs not yet in prev, in parallel, and returns the
// file with every result (prev's matching ones and the new ones). It
// rewrites --out as results come in (at most once a second), so an
// interrupted matrix resumes where it stopped.
func runMatrix(spec ab.Spec, cfgs []abConfig, prev *ab.File, f abFlags, in *interruption, stderr io.Writer) (*ab.File, error) {
	file := &ab.File{Version: ab.FileVersion, Spec: spec}
	if prev != nil {
		file.Results = prev.Results // other cases, configs and seeds stay in the file
	}
	done := file.Done()
	byName := map[string]abConfig{}
	for _, c := range cfgs {
		byName[c.name] = c
	}
	var todo []ab.Job
	for _, j := range spec.Jobs() {
		if done[j] == nil {
			todo = append(todo, j)
		}
	}
	resumed := len(spec.Jobs()) - len(todo)
	var mu sync.Mutex // guards file, lastWrite
	running := newInFlight()
	lastWrite := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in.setStop(func() {
		cancel()
		running.stopAll("signal")
	})
	var finished atomic.Int64
	start := time.Now()
	prog := startProgress(stderr, progressOn(f.quiet, stderr) && len(todo) > 0, func() string {
		n := finished.Load()
		el := time.Since(start)
		eta := ""
		if n > 0 {
			eta = fmt.Sprintf(", about %v left", (el / time.Duration(n) * time.Duration(int64(len(todo))-n)).Round(time.Second))
		}
		return fmt.Sprintf("proxysim ab: %d of %d runs (%d resumed from the file), wall %v%s", int64(resumed)+n, len(spec.Jobs()), resumed, el.Round(time.Second), eta)
	})
	defer prog.stop()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(f.jobs)
	for _, j := range todo {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if gctx.Err() != nil {
				return nil
			}
			c := byName[j.Config]
			o := sim.Defaults()
			o.Workload = withParam(spec.Workload, spec.Primary, j.Case)
			o.CPUs, o.Topology, o.SimTime, o.Seed = spec.CPUs, spec.Topology, time.Duration(spec.SimTimeNs), j.Seed
			o.Deterministic, o.Strategy = true, spec.Strategy
			o.AuditEvery = f.auditEvery
			c.apply(&o)
			o.NoOptimisticSpin = spec.NoOptimisticSpin
			o.NewidleCost = time.Duration(spec.NewidleCostNs)
			o.NewidleCPUCost = time.Duration(spec.NewidleCPUCostNs)
			o.NewidleTaskCost = time.Duration(spec.NewidleTaskCostNs)
			o.ProxyCosts = spec.ProxyCosts
			o.MaxSkew = time.Duration(spec.MaxSkewNs)
			sc, err := workload.Benchmark(o.Workload)
			if err != nil {
				return err
			}
			r, err := sim.Build(o, sc)
			if err != nil {
				return err
			}
			s, ok := running.execute(gctx, r)
			if !ok {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			if why := s.StopReason; why != "" && why != sim.StopAllExited && !s.Failed() {
				return nil // cut short by a signal: not a result
			}
			res := resultOf(j, r, s)
			file.Results = append(file.Results, res)
			finished.Add(1)
			if f.out != "" && time.Since(lastWrite) > time.Second {
				lastWrite = time.Now()
				if err := sim.WriteFileAtomic(f.out, file.Write); err != nil {
					return err
				}
			}
			return nil
		})
	}
	err := g.Wait()
	prog.stop()
	sort.SliceStable(file.Results, func(a, b int) bool {
		x, y := file.Results[a], file.Results[b]
		if x.Case != y.Case {
			return x.Case < y.Case
		}
		if x.Config != y.Config {
			return x.Config < y.Config
		}
		return x.Seed < y.Seed
	})
	return file, err
}

// resultOf reads a finished run's result.
func resultOf(j ab.Job, r *sim.Run, s *sim.Summary) ab.Result {
	res := ab.Result{Case: j.Case, Config: j.Config, Seed: j.Seed, CPUs: s.CPUs, SimTimeNs: s.SimTimeNs, WallNs: s.WallTimeNs,
		Counts: map[string]uint64{}, TraceHash: s.TraceHash, SkewBoundNs: s.ClockSkewBoundNs, MaxIPILatenessNs: s.MaxIPILatenessNs}
	if s.Bench != nil {
		res.Bench = *s.Bench
	}
	for k, v := range s.Counters {
		res.Counts[k] = v
	}
	var acq, cont uint64
	for _, l := range r.Machine.LockStats() {
		acq += l.Acquisitions.Load()
		cont += l.Contended.Load()
	}
	res.Counts[ab.CountLockAcquire], res.Counts[ab.CountLockContended] = acq, cont
	for _, v := range s.Violations {
		res.Violations = append(res.Violations, v.String())
	}
	return res
}

// calibrate measures this machine: the costs of the proxy-execution
// series' own work that ab charges in virtual time (a cache line moved
// between two CPUs, a wake-up across CPUs against one on the waker's
// CPU: hostbench), then, when perf is installed, the post-hoc cost model
// from perf bench. It prints every measurement and the flags they give.
func calibrate(stdout, stderr io.Writer) (int, error) {
	if runtime.NumCPU() < 2 {
		fmt.Fprintf(stdout, "this machine has %d CPU: the cross-CPU measurements need two.\n", runtime.NumCPU())
		return exitUsage, nil
	}
	const reps = 5
	show := func(xs []float64) string {
		var b strings.Builder
		for i, x := range xs {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%.1f", x)
		}
		return b.String()
	}
	line, lines, err := hostbench.Median(reps, func() (float64, error) { return hostbench.LineTransfer(0, 1, 200000) })
	if err != nil {
		return exitInternal, err
	}
	same, sames, err := hostbench.Median(reps, func() (float64, error) { return hostbench.PipeRoundTrip(0, 0, 20000) })
	if err != nil {
		return exitInternal, err
	}
	cross, crosses, err := hostbench.Median(reps, func() (float64, error) { return hostbench.PipeRoundTrip(0, 1, 20000) })
	if err != nil {
		return exitInternal, err
	}
	remote := max(0, (cross-same)/2)
	fmt.Fprintf(stdout, "cache line moved cpu0<->cpu1 (cmpxchg ping-pong, 200000 round trips): median %.1f ns per move (runs: %s)\n", line, show(lines))
	fmt.Fprintf(stdout, "pipe round trip, both threads on cpu0 (20000 round trips): median %.0f ns (runs: %s)\n", same, show(sames))
	fmt.Fprintf(stdout, "pipe round trip, cpu0 and cpu1 (20000 round trips): median %.0f ns (runs: %s)\n", cross, show(crosses))
	fmt.Fprintf(stdout, "a wake-up across CPUs costs %.0f ns more than one on the waker's CPU (half the difference)\n", remote)
	l, w := int64(line+0.5), int64(remote+0.5)
	pc := percpu.ProxyCosts{Link: 2 * l, Repick: cpu.DefaultConfig().SchedCost, Migrate: 2*l + w, Return: 2 * l, Park: 2 * l}
	fmt.Fprintf(stdout, "proxy costs (link 2 lines, repick the model's pick, migrate 2 lines + the cross-CPU wake-up, return 2 lines, park 2 lines):\n  --proxy-costs %s\n", sim.FormatProxyCosts(pc))
	perf, err := exec.LookPath("perf")
	if err != nil {
		fmt.Fprintf(stdout, "perf is not installed (not on PATH): the post-hoc cost model keeps its written-down defaults: %s\n", ab.DefaultCost())
		return exitOK, nil
	}
	pipeOut, err := exec.Command(perf, "bench", "sched", "pipe", "-l", "100000").CombinedOutput()
	if err != nil {
		return exitInternal, fmt.Errorf("perf bench sched pipe: %v: %s", err, strings.TrimSpace(string(pipeOut)))
	}
	pipe, err := ab.ParsePerfPipe(string(pipeOut))
	if err != nil {
		return exitInternal, err
	}
	const groups, loops = 4, 100
	msgOut, err := exec.Command(perf, "bench", "sched", "messaging", "-p", "-g", strconv.Itoa(groups), "-l", strconv.Itoa(loops)).CombinedOutput()
	if err != nil {
		return exitInternal, fmt.Errorf("perf bench sched messaging: %v: %s", err, strings.TrimSpace(string(msgOut)))
	}
	msg, err := ab.ParsePerfMessaging(string(msgOut))
	if err != nil {
		return exitInternal, err
	}
	c := ab.Calibrate(pipe, msg, groups, loops)
	fmt.Fprintf(stdout, "perf bench sched pipe: %.3f us per round trip; perf bench sched messaging -p -g %d -l %d: %.3f s\n", pipe, groups, loops, msg)
	fmt.Fprintf(stdout, "post-hoc cost model: %s\n", c)
	fmt.Fprintf(stdout, "flags: --cost-switch %.0f --cost-migration %.0f --cost-ipi %.0f --cost-lock %.0f --cost-lock-contended %.0f --cost-juggle %.0f --cost-fpt-step %.0f\n",
		c.ContextSwitch, c.Migration, c.IPI, c.LockAcquire, c.LockContended, c.JuggleRetry, c.FPTStep)
	return exitOK, nil
}

// applySRQKnob sets a config's shared_runq knob: hooks=v2|v3|v4 or
// bail=NAME[,NAME...].
func applySRQKnob(o *sim.Options, k string) error {
	if v, ok := strings.CutPrefix(k, "hooks="); ok {
		n, err := parseSRQHooks(v)
		if err != nil {
			return fmt.Errorf("hooks: %v", err)
		}
		o.SRQHooks = n
		return nil
	}
	v, _ := strings.CutPrefix(k, "bail=")
	b, err := rq.ParseBailouts(strings.Split(v, ","))
	if err != nil {
		return err
	}
	o.SRQBailouts = b
	return nil
}

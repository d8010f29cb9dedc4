package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/proxysim/proxysim/internal/sim"
	"github.com/proxysim/proxysim/internal/stats"
)

const stressUsage = `Usage: proxysim stress [flags]

The race-hunting mode. Runs the machine (256 CPUs by default) on the
stress workload, widening race windows on purpose: yields and short delays
at every lock-juggling point (--jitter), all CPUs paused and released
together now and then (--stutter), affinity masks moved around
(--shuffle-interval); on request signals to random tasks and mutex
waiters (--signal-rate, with --lock-interruptible making the workload's
locks interruptible or killable) and spurious wake-ups of mutex waiters
(--spurious-wake-rate). Prints a statistics line every --stat-interval,
stops cleanly on SIGINT/SIGTERM (a second signal exits at once), and on a
violation, deadlock or hang writes --report (and --trace) and exits 1.

The seed and the command line are written to the report file before the
run starts, so that a run killed by the race detector
(go run -race, GORACE=halt_on_error=1) still leaves its reproducer.

` + bugNeedsHelp + `Flags:
`

type stressFlags struct {
	machineFlags
	statInterval time.Duration
	retryDet     time.Duration
	start        time.Time // when the run started (stat lines' elapsed)
	failures     failureSink
}

// huntMaxSkew is the clock skew bound of the hunting commands (stress and
// its deterministic retries, explore, bugs --hunt): an epoch, where run
// and ab use 10 us. A hunt wants interleavings, not exact latencies, and
// the tight bound costs it both: CPUs within 10 us of each other in
// virtual time meet fewer of the orderings a bug needs, and the windows'
// barriers cost wall time. The catalogue hunt (bugs --hunt --seeds 1
// --seed 5 --budget 60s, 256 CPUs, docs/benchmarks.md) caught all 39
// entries with 1 ms, and with 10 us missed two and took 18-57 s for three
// more. (Each window's barrier is also a happens-before edge for the race
// detector between all CPUs, which can hide races; a tighter bound adds
// more of them. Not measured.)
const huntMaxSkew = time.Millisecond

func stressDefaults() sim.Options {
	o := sim.Defaults()
	o.Workload = "stress"
	o.MaxSkew = huntMaxSkew
	o.SimTime = 1 << 62 // until --duration or a signal
	o.Duration = time.Minute
	// The audit at every epoch barrier: a broken invariant that lasts
	// only until some task runs (a blocked_on cycle until its wounded
	// owner runs, ww-no-clear-blocked-on) is seen five times as often as
	// with every fifth, for no cost a farm-bench could see at 256 CPUs,
	// with -race or without (CPU ratios 0.97 and 0.99, 3 pairs), and about
	// 4% at 1024 (1.04, 0.94-1.09). The hunt's median for that entry at
	// 256 CPUs went from 5.8 s to 0.5 s (5 seeds, no -race).
	o.AuditEvery = 1
	o.Jitter = 0.02
	o.JitterDelay = 20 * time.Microsecond
	o.Stutter = 5 * time.Second
	o.ShuffleInterval = 20 * time.Millisecond
	// One critical section in ten runs migrate-disabled: migrate-disabled
	// donors and owners for the proxy paths (set_task_cpu's exemption).
	o.MigrateDisable = 0.1
	// On by default: signals to random tasks and mutex
	// waiters, one in ten of them SIGKILL (the task exits, and a task of
	// the same spec is forked in its slot: --respawn), a tenth of the
	// lock instructions interruptible or killable (ww: interruptible),
	// spurious wake-ups of mutex waiters.
	// CPU hotplug on by default: a CPU down or up every 20 ms
	// of virtual time, at most one CPU in 32 down at a time (so that a
	// long soak keeps its machine); off under core scheduling, which the
	// model does not combine with hotplug.
	o.HotplugInterval = 20 * time.Millisecond
	o.HotplugIsDefault = true
	o.SignalRate = 100
	o.SignalFatal = 0.1
	o.Respawn = true
	o.SpuriousWakeRate = 100
	o.InterruptibleLocks = 0.1
	return o
}

func (sf *stressFlags) register(fs *flag2) {
	def := stressDefaults()
	sf.simTimeForever, sf.deferNeeds = true, true
	sf.machineFlags.register(fs.FlagSet, def, "proxysim-stress-SEED.report")
	fs.Float64Var(&sf.o.Jitter, "jitter", def.Jitter, "probability of an injected yield or delay at each lock-juggling point (0: off)")
	fs.DurationVar(&sf.o.JitterDelay, "jitter-delay", def.JitterDelay, "longest injected busy delay (real time)")
	fs.DurationVar(&sf.o.Stutter, "stutter", def.Stutter, "pause every CPU and release them together every this much wall time (0: off)")
	fs.DurationVar(&sf.o.ShuffleInterval, "shuffle-interval", def.ShuffleInterval, "virtual time between affinity shuffles on each busy CPU (0: off)")
	fs.DurationVar(&sf.o.SRQToggleInterval, "srq-toggle-interval", 0, "SHARED_RUNQ stress: virtual time per busy CPU between a domain rebuild (shards reassigned, old queues drained) or a flip of the SHARED_RUNQ feature (drained when it goes off), alternately at random (0: off; builds the shared runqueue)")
	fs.DurationVar(&sf.o.DomainRebuildInterval, "domain-rebuild-interval", def.DomainRebuildInterval, "virtual time between sched domain rebuilds, machine-wide (update_domains_fair: every rq lock in turn; 0: only the one at boot)")
	fs.DurationVar(&sf.o.CoreToggleInterval, "core-sched-toggle-interval", 0, "virtual time between switches of core scheduling off and on (__sched_core_flip of every core's rq lock; needs --core-sched; default with --core-sched 20ms, 0: off)")
	fs.Float64Var(&sf.o.SignalRate, "signal-rate", def.SignalRate, "signals sent per second of busy virtual time per CPU, half of them to random mutex waiters (0: off)")
	fs.Float64Var(&sf.o.SignalFatal, "signal-fatal", def.SignalFatal, "fraction of --signal-rate's signals that are SIGKILL (the task exits when it handles one)")
	fs.BoolVar(&sf.o.Respawn, "respawn", def.Respawn, "fork a task of the same spec in the slot of each task killed by SIGKILL (--signal-fatal), at the next barrier, so that the machine keeps its tasks")
	fs.Float64Var(&sf.o.SpuriousWakeRate, "spurious-wake-rate", def.SpuriousWakeRate, "spurious wake_up_process calls on random mutex waiters per second of busy virtual time per CPU (0: off)")
	fs.DurationVar(&sf.o.HotplugInterval, "hotplug-interval", def.HotplugInterval, "virtual time between CPU hotplug operations: a random CPU (seeded) taken down, or brought back up, never the last active one (0: off)")
	fs.IntVar(&sf.o.HotplugMaxOffline, "hotplug-max-offline", def.HotplugMaxOffline, "with this many CPUs down, the hotplug injector brings one up instead of taking another down (0: one in 32 of the CPUs, at least 1; --cpus N lets the toggling settle at half the CPUs offline)")
	fs.Float64Var(&sf.o.MigrateDisable, "migrate-disable", def.MigrateDisable, "probability that a critical section of the workload runs in a migrate_disable() region (0: off)")
	fs.Float64Var(&sf.o.InterruptibleLocks, "lock-interruptible", def.InterruptibleLocks, "probability that a lock instruction of the workload becomes mutex_lock_interruptible (half of them _killable)")
	fs.DurationVar(&sf.statInterval, "stat-interval", 10*time.Second, "print a statistics line this often (0: never)")
	fs.DurationVar(&sf.retryDet, "retry-deterministic", 20*time.Second, "after a concurrent-mode failure, try the same seed in deterministic mode with each strategy for this long (0: don't)")
	sf.failures.register(fs.FlagSet)
}

// retryStrategies is the order in which a concurrent failure's seed is
// retried in deterministic mode: the strategy that reproduced the most
// catalogue entries at 256 CPUs first (docs/architecture.md,
// "Deterministic mode at 256 CPUs, 3 Dec 2026": random 38 of 38 within
// 60 s on seed 5, pct:3 and time fewer).
var retryStrategies = []string{"random", "pct:3", "time"}

// retryDeterministic tries a concurrent failure's seed in deterministic
// mode with each strategy in turn, for at most budget each, until one
// fails. It need not break the concurrent run's invariant: a bug often
// shows by more than one (runnable-without-return breaks migrate-disabled
// or affinity), and a replayable failure of the same code within seconds
// is worth more than the same invariant a minute later; the message says
// which. That run's report is written to deterministicReportPath(report),
// with a command bounded in virtual time that proxysim replay and
// proxysim shrink take as it is. It returns the path, or "" when no
// strategy failed.
func retryDeterministic(args []string, mf *machineFlags, inv string, budget time.Duration, stderr io.Writer, log *zap.Logger) *reproduction {
	for _, st := range retryStrategies {
		o := mf.o
		o.Deterministic, o.Strategy, o.Duration = true, st, budget
		sc, err := mf.loadScenario() // a fresh copy: Build takes the scenario's plans
		if err != nil {
			log.Warn("deterministic retry failed to start", zap.Error(err))
			return nil
		}
		r, err := sim.Build(o, sc)
		if err != nil {
			log.Warn("deterministic retry failed to start", zap.Error(err))
			return nil
		}
		start := time.Now()
		restore := serialProcs(o)
		s := r.Execute()
		restore()
		elapsed := time.Since(start)
		got := ""
		if s.Failed() {
			got = s.Violations[0].Name
		}
		log.Info("deterministic retry of the same seed", zap.String("strategy", st), zap.Bool("violation", s.Failed()),
			zap.String("invariant", got), zap.Bool("same_invariant", got == inv), zap.Duration("after", elapsed))
		if got == "" {
			continue
		}
		note := " (the same invariant)"
		if got != inv {
			note = fmt.Sprintf(" (invariant %s, where the concurrent run broke %s)", got, inv)
		}
		rep := explainRepro(o, mf.loadScenario)
		if rep.ex != nil {
			r.Explanation = rep.text()
		}
		rep.path = writeDeterministicReport(args, mf, st, r, s, elapsed, note, stderr)
		// The command, like the report's, runs to just past the
		// violation's virtual time.
		rep.opts.SimTime = time.Duration(s.Violations[0].Time)/time.Millisecond*time.Millisecond + 2*time.Millisecond
		return rep
	}
	fmt.Fprintf(stderr, "proxysim: no deterministic strategy (%s) failed within %v each; the concurrent report is all there is\n",
		strings.Join(retryStrategies, ", "), budget)
	return nil
}

// writeDeterministicReport writes the report of a deterministic retry
// that failed, with a replay command that runs to just past the
// violation's virtual time (the run stops at its first violation).
func writeDeterministicReport(args []string, mf *machineFlags, st string, r *sim.Run, s *sim.Summary, elapsed time.Duration, note string, stderr io.Writer) string {
	end := time.Duration(s.Violations[0].Time)/time.Millisecond*time.Millisecond + 2*time.Millisecond
	cmd := boundedReplayCommand(args, mf, st, end)
	path := deterministicReportPath(mf.report)
	if err := sim.WriteFileAtomic(path, func(w io.Writer) error {
		r.FormatReport(w, s, cmd, mf.events)
		return nil
	}); err != nil {
		fmt.Fprintf(stderr, "proxysim: cannot write the deterministic report: %v\n", err)
		return ""
	}
	fmt.Fprintf(stderr, "proxysim: reproduced deterministically%s (--strategy %s, %v): report written to %s\n"+
		"proxysim: replay it with: proxysim replay %s\nproxysim: shrink it with: proxysim shrink %s\n",
		note, st, elapsed.Round(time.Millisecond), path, shellQuote(path), shellQuote(path))
	return path
}

// deterministicReportPath names the report of a concurrent failure's
// deterministic reproduction: beside the concurrent report, X.report ->
// X.det.report.
func deterministicReportPath(report string) string {
	return strings.TrimSuffix(report, ".report") + ".det.report"
}

// finish validates the flags after parsing.
func (sf *stressFlags) finish(fs *flag.FlagSet) error {
	if err := sf.machineFlags.finish(fs); err != nil {
		return err
	}
	for _, r := range []struct {
		name   string
		v, max float64
		rng    string
	}{
		{"jitter", sf.o.Jitter, 1, "0-1"},
		{"signal-rate", sf.o.SignalRate, 1e6, "0-1e6"},
		{"spurious-wake-rate", sf.o.SpuriousWakeRate, 1e6, "0-1e6"},
		{"signal-fatal", sf.o.SignalFatal, 1, "0-1"},
		{"lock-interruptible", sf.o.InterruptibleLocks, 1, "0-1"},
		{"migrate-disable", sf.o.MigrateDisable, 1, "0-1"},
	} {
		if !(r.v >= 0 && r.v <= r.max) { // NaN fails both
			return usagef("--%s %v out of range %s", r.name, r.v, r.rng)
		}
	}
	set := sf.machineFlags.set
	if set["hotplug-interval"] {
		sf.o.HotplugIsDefault = false
	}
	// What --bug entries need, before the defaults that follow from
	// core scheduling: a switched-on --core-sched is stress's --core-sched.
	if err := sf.applyBugNeeds(sim.NeedsOff{
		Hotplug:    set["hotplug-interval"] && sf.o.HotplugInterval == 0,
		CoreFlips:  set["core-sched-toggle-interval"] && sf.o.CoreToggleInterval == 0,
		TaskExits:  set["signal-rate"] && sf.o.SignalRate == 0 || set["signal-fatal"] && sf.o.SignalFatal == 0,
		SRQToggles: set["srq-toggle-interval"] && sf.o.SRQToggleInterval == 0,
	}); err != nil {
		return err
	}
	if on := sf.o.CoreSched != "" && sf.o.CoreSched != "off"; on && !set["core-sched-toggle-interval"] {
		// Stress takes every core-scheduling path by default, the
		// run-time flip (sched_core_get/put's __sched_core_flip) too.
		sf.o.CoreToggleInterval = sim.DefaultCoreToggleInterval
	}
	if sf.o.HotplugMaxOffline < 0 {
		return usagef("--hotplug-max-offline %d: want 0 (one in 32 of the CPUs) or a number of CPUs", sf.o.HotplugMaxOffline)
	}
	if sf.o.JitterDelay < 0 || sf.o.JitterDelay > time.Second {
		return usagef("--jitter-delay %v out of range 0-1s", sf.o.JitterDelay)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"stutter", sf.o.Stutter}, {"shuffle-interval", sf.o.ShuffleInterval}, {"srq-toggle-interval", sf.o.SRQToggleInterval}, {"domain-rebuild-interval", sf.o.DomainRebuildInterval}, {"hotplug-interval", sf.o.HotplugInterval}, {"core-sched-toggle-interval", sf.o.CoreToggleInterval}, {"stat-interval", sf.statInterval}, {"retry-deterministic", sf.retryDet}} {
		if d.v < 0 {
			return usagef("--%s must not be negative (0: off), not %v", d.name, d.v)
		}
	}
	if sf.o.CoreToggleInterval > 0 && (sf.o.CoreSched == "" || sf.o.CoreSched == "off") {
		return usagef("--core-sched-toggle-interval needs --core-sched")
	}
	return nil
}

// newStressFlags is stress's flag set.
func newStressFlags() (*flag.FlagSet, *stressFlags) {
	fs := &flag2{newFlagSet("stress")}
	sf := &stressFlags{}
	sf.register(fs)
	return fs.FlagSet, sf
}

func cmdStress(args []string, stdout, stderr io.Writer) (int, error) {
	fs, sf := newStressFlags()
	if err := parse(fs, args, stressUsage, stdout); err != nil {
		return 0, err
	}
	if err := sf.finish(fs); err != nil {
		return 0, err
	}
	if err := sf.checkOutputs(); err != nil {
		return 0, err
	}
	stopProfile, err := startCPUProfile(sf.cpuprofile, stderr)
	if err != nil {
		return 0, err
	}
	defer stopProfile()
	log, err := sf.logs.build()
	if err != nil {
		return 0, err
	}
	defer log.Sync()
	if sf.report == "" {
		sf.report = fmt.Sprintf("proxysim-stress-%d.report", sf.o.Seed)
	}
	sf.printNeedNote("stress", stderr)
	return runStress(sf, args, stdout, stderr, log)
}

// flag2 wraps a FlagSet (room for shared registration helpers).
type flag2 struct{ *flag.FlagSet }

func runStress(sf *stressFlags, args []string, stdout, stderr io.Writer, log *zap.Logger) (int, error) {
	mf := &sf.machineFlags
	sc, err := mf.loadScenario()
	if err != nil {
		return 0, err
	}
	cmdline := reproduce("stress", args, mf)
	r, err := sim.Build(mf.o, sc)
	if err != nil {
		return 0, usageError{err.Error()}
	}
	printReproduce(stderr, mf.o.Seed, cmdline)
	if err := sim.WritePreamble(mf.report, mf.o.Seed, cmdline); err != nil {
		return 0, usagef("--report: %v", err)
	}
	log.Info("proxysim stress starting",
		zap.Uint64("seed", mf.o.Seed), zap.String("reproduce", cmdline), zap.Int("cpus", r.Machine.NumCPUs()),
		zap.Int("tasks", len(r.Machine.Tasks())-1), zap.String("workload", sc.Name), zap.Bool("proxy_exec", mf.o.Proxy),
		zap.Strings("bugs", mf.o.Bugs.Names()), zap.Duration("duration", mf.o.Duration), zap.Float64("jitter", mf.o.Jitter),
		zap.Duration("stutter", mf.o.Stutter), zap.Duration("shuffle_interval", mf.o.ShuffleInterval), zap.Duration("domain_rebuild_interval", mf.o.DomainRebuildInterval),
		zap.Float64("signal_rate", mf.o.SignalRate), zap.Float64("signal_fatal", mf.o.SignalFatal), zap.Bool("respawn", mf.o.Respawn), zap.Float64("spurious_wake_rate", mf.o.SpuriousWakeRate),
		zap.Float64("lock_interruptible", mf.o.InterruptibleLocks),
		zap.Duration("hotplug_interval", mf.o.HotplugInterval), zap.Int("hotplug_max_offline", mf.o.HotplugMaxOffline), zap.Float64("migrate_disable", mf.o.MigrateDisable),
		zap.Duration("epoch", mf.o.Epoch), zap.Int("audit_every", mf.o.AuditEvery), zap.String("report", mf.report),
		zap.Int("shard", mf.serve.shard), zap.Int("shards", mf.serve.shards), zap.String("metrics_addr", mf.serve.metricsAddr))

	// Signals: the first stops the run cleanly, a second exits at once.
	in := watchInterrupts(stderr, "the run")
	defer in.close()
	in.setStop(func() { r.Stop("signal: " + in.signal().String()) })
	done := make(chan struct{})
	defer close(done)
	stopMetrics, err := startMetrics(&mf.serve, r, log)
	if err != nil {
		return 0, err
	}
	sf.start = time.Now()
	if sf.statInterval > 0 && !mf.quiet {
		go statLoop(r, sf, log, done)
	}
	restore := serialProcs(mf.o)
	s := r.Execute()
	restore()
	code := exitOK
	if s.Failed() {
		code = exitViolation
		log.Error("violation", zap.String("invariant", s.Violations[0].Name), zap.Int("cpu", s.Violations[0].CPU),
			zap.String("task", s.Violations[0].TaskName), zap.String("message", s.Violations[0].Message),
			zap.Duration("after", r.Machine.DetectedAfter()), zap.String("report", mf.report), zap.String("reproduce", cmdline))
	}
	if s.Failed() {
		// The concurrent report first: the deterministic retry below can
		// take a minute, and the report must not wait for it.
		if err := sim.WriteFileAtomic(mf.report, func(w io.Writer) error {
			r.FormatReport(w, s, cmdline, mf.events)
			return nil
		}); err != nil {
			fmt.Fprintf(stderr, "proxysim: cannot write the report: %v\n", err)
		} else {
			fmt.Fprintf(stderr, "proxysim: violation: %s\nproxysim: report written to %s\n", s.Violations[0], mf.report)
		}
		if s.KnownDefect != "" {
			fmt.Fprintf(stderr, "proxysim: %s\n", s.KnownDefect)
		}
		printReport(stderr, mf, r, s, cmdline)
		var rep *reproduction
		if mf.o.Deterministic {
			rep = explainRepro(mf.o, mf.loadScenario)
			rep.path = mf.report
			if rep.ex != nil {
				r.Explanation = rep.text()
				rewriteReport(mf.report, r, s, cmdline, mf.events, stderr)
			}
		} else if sf.retryDet > 0 {
			if rep = retryDeterministic(args, mf, s.Violations[0].Name, sf.retryDet, stderr, log); rep != nil && rep.ex != nil {
				// The concurrent report gets its deterministic
				// reproduction's explanation at the top.
				r.Explanation = rep.text()
				r.ExplanationOf = "its deterministic reproduction " + rep.path
				rewriteReport(mf.report, r, s, cmdline, mf.events, stderr)
			}
		}
		in.setStop(sf.failures.interrupt) // a signal now ends the failure's shrink
		defer sf.failures.file(r, s, rep, mf, cmdline, stderr)
	} else {
		// a clean run leaves no failure report: take the preamble back
		_ = os.Remove(mf.report)
	}
	if mf.trace != "" {
		writeTrace(r, mf, cmdline, stderr)
	}
	logStat(r, sf, log, true)
	if mf.json {
		if err := writeJSON(stdout, s); err != nil {
			return exitInternal, err
		}
	} else {
		sim.FormatSummary(stdout, s)
	}
	stopMetrics()
	if code == exitOK && in.interrupted() {
		code = in.exitCode()
	}
	return code, nil
}

// statLoop prints a statistics line every interval, in the spirit of
// locktorture's.
func statLoop(r *sim.Run, sf *stressFlags, log *zap.Logger, done chan struct{}) {
	// The first line comes after a second (or the interval, if shorter),
	// so a long interval does not mean a long silence at the start.
	first := time.NewTimer(min(sf.statInterval, time.Second))
	defer first.Stop()
	select {
	case <-done:
		return
	case <-first.C:
		if r.Machine.Stopping() {
			return
		}
		logStat(r, sf, log, false)
	}
	t := time.NewTicker(sf.statInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if r.Machine.Stopping() {
				return
			}
			logStat(r, sf, log, false)
		}
	}
}

func logStat(r *sim.Run, sf *stressFlags, log *zap.Logger, final bool) {
	m := r.Machine
	st := m.CPUStats()
	el := time.Since(sf.start)
	sum := func(k stats.Counter) uint64 { return stats.Sum(st, k) }
	var spins uint64
	for _, l := range m.LockStats() {
		spins += l.Spins.Load()
	}
	viol := len(m.Rep.Violations())
	events := m.EventCount()
	rate := float64(events) / el.Seconds()
	rss := rssBytes()
	msg := "stat"
	if final {
		msg = "final"
	}
	if sf.logs.json() {
		log.Info(msg, zap.Duration("elapsed", el), zap.Uint64("context_switches", sum(stats.ContextSwitches)),
			zap.Uint64("proxy_migrations", sum(stats.ProxyMigrations)), zap.Uint64("return_migrations", sum(stats.ReturnMigrations)),
			zap.Uint64("proxy_activates", sum(stats.ProxyActivates)), zap.Uint64("fpt_spins", sum(stats.FindProxyTaskSpins)),
			zap.Uint64("lock_spins", spins), zap.Int("violations", viol), zap.Uint64("rss_bytes", rss),
			zap.Int("goroutines", runtime.NumGoroutine()), zap.Float64("events_per_second", rate), zap.Uint64("events", events))
		return
	}
	log.Info(fmt.Sprintf("%s: elapsed %s  switches %d  proxy-mig %d  return-mig %d  proxy-act %d  fpt-spins %d  lock-spins %d  violations %d  rss %dMiB  goroutines %d  events/s %.0f",
		msg, el.Round(time.Second), sum(stats.ContextSwitches), sum(stats.ProxyMigrations), sum(stats.ReturnMigrations), sum(stats.ProxyActivates),
		sum(stats.FindProxyTaskSpins), spins, viol, rss>>20, runtime.NumGoroutine(), rate))
}

// rssBytes reads the resident set size from /proc/self/statm.
func rssBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

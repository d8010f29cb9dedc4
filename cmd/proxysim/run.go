package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/proxysim/proxysim/internal/sim"
	"github.com/proxysim/proxysim/internal/trace"
)

const runUsage = `Usage: proxysim run [flags]

Runs the simulated machine once: --cpus CPU goroutines on real locks, the
workload's tasks, --sim-time of virtual time, with invariant checks. On a
violation it writes a failure report (and --trace) and exits 1.

` + bugNeedsHelp + `Flags:
`

// newRunFlags is run's flag set.
func newRunFlags() (*flag.FlagSet, *machineFlags) {
	fs := newFlagSet("run")
	mf := &machineFlags{}
	mf.register(fs, sim.Defaults(), "proxysim-report-SEED.txt")
	fs.BoolVar(&mf.o.KeepGoing, "keep-going", false, "record violations and run on to --sim-time (to measure a workload under a known pathology, e.g. the v3 stall); the report and exit 1 still come at the end")
	return fs, mf
}

func cmdRun(args []string, stdout, stderr io.Writer) (int, error) {
	fs, mf := newRunFlags()
	if err := parse(fs, args, runUsage, stdout); err != nil {
		return 0, err
	}
	if err := mf.finish(fs); err != nil {
		return 0, err
	}
	if err := mf.checkOutputs(); err != nil {
		return 0, err
	}
	stopProfile, err := startCPUProfile(mf.cpuprofile, stderr)
	if err != nil {
		return 0, err
	}
	defer stopProfile()
	log, err := mf.logs.build()
	if err != nil {
		return 0, err
	}
	defer log.Sync()
	mf.printNeedNote("run", stderr)
	return runOnce(mf, "run", args, stdout, stderr, log, progressOn(mf.quiet, stderr))
}

// runOnce builds, runs and reports one simulation.
func runOnce(mf *machineFlags, verb string, args []string, stdout, stderr io.Writer, log *zap.Logger, showProgress bool) (int, error) {
	sc, err := mf.loadScenario()
	if err != nil {
		return 0, err
	}
	cmdline := reproduce(verb, args, mf)
	in := watchInterrupts(stderr, "the run")
	defer in.close()
	rp := &runProgress{start: time.Now(), simTime: mf.o.SimTime}
	prog := startProgress(stderr, showProgress, rp.line)
	defer prog.stop()
	o := mf.o
	o.OnSetup = rp.onSetup
	r, err := sim.Build(o, sc)
	if err != nil {
		return 0, usageError{err.Error()}
	}
	prog.clear()
	printReproduce(stderr, mf.o.Seed, cmdline)
	if mf.report != "" {
		if err := sim.WritePreamble(mf.report, mf.o.Seed, cmdline); err != nil {
			return 0, usagef("--report: %v", err)
		}
	}
	log.Info("proxysim run starting", zap.Uint64("seed", mf.o.Seed), zap.String("reproduce", cmdline),
		zap.Int("cpus", r.Machine.NumCPUs()), zap.Int("tasks", len(r.Machine.Tasks())-1), zap.String("workload", sc.Name),
		zap.Bool("proxy_exec", mf.o.Proxy), zap.Strings("bugs", mf.o.Bugs.Names()), zap.Duration("sim_time", mf.o.SimTime),
		zap.Duration("epoch", mf.o.Epoch), zap.Int("shard", mf.serve.shard), zap.Int("shards", mf.serve.shards))
	stopMetrics, err := startMetrics(&mf.serve, r, log)
	if err != nil {
		return 0, err
	}
	defer stopMetrics()
	prog.clear()
	in.setStop(func() { r.Stop("signal: " + in.signal().String()) })
	rp.running(r)
	restore := serialProcs(o)
	s := r.Execute()
	restore()
	prog.stop()
	code := exitOK
	if s.Failed() {
		code = exitViolation
		path := mf.report
		if path == "" {
			path = fmt.Sprintf("proxysim-report-%d.txt", mf.o.Seed)
		}
		if mf.o.Deterministic {
			r.Explanation = explainText(mf.o, mf.loadScenario)
		}
		if err := sim.WriteFileAtomic(path, func(w io.Writer) error {
			r.FormatReport(w, s, cmdline, mf.events)
			return nil
		}); err != nil {
			fmt.Fprintf(stderr, "proxysim: cannot write the report: %v\n", err)
		} else {
			fmt.Fprintf(stderr, "proxysim: violation: %s\nproxysim: report written to %s\n", s.Violations[0], path)
		}
		if s.KnownDefect != "" {
			fmt.Fprintf(stderr, "proxysim: %s\n", s.KnownDefect)
		}
		printReport(stderr, mf, r, s, cmdline)
	} else if mf.report != "" {
		// a clean run leaves no failure report: take the preamble back
		_ = os.Remove(mf.report)
	}
	if mf.trace != "" {
		writeTrace(r, mf, cmdline, stderr)
	}
	if mf.json {
		if err := writeJSON(stdout, s); err != nil {
			return exitInternal, err
		}
	} else {
		sim.FormatSummary(stdout, s)
	}
	if code == exitOK && in.interrupted() {
		code = in.exitCode()
	}
	return code, nil
}

// printReport copies a failure's report to stderr with --print-report.
func printReport(stderr io.Writer, mf *machineFlags, r *sim.Run, s *sim.Summary, cmdline string) {
	if !mf.printReport {
		return
	}
	fmt.Fprintf(stderr, "proxysim: ----- failure report -----\n")
	r.FormatReport(stderr, s, cmdline, mf.events)
	fmt.Fprintf(stderr, "proxysim: ----- end of failure report -----\n")
}

// printReproduce prints the seed and the command that repeats the run,
// whatever --log-level says.
func printReproduce(stderr io.Writer, seed uint64, cmdline string) {
	fmt.Fprintf(stderr, "proxysim: seed %d; reproduce: %s\n", seed, cmdline)
}

// reproduce is the exact command line that repeats this run: the given
// flags plus the seed.
func reproduce(verb string, args []string, mf *machineFlags) string {
	parts := []string{"proxysim", verb}
	hasSeed := false
	for _, a := range args {
		if strings.HasPrefix(a, "--seed") || strings.HasPrefix(a, "-seed") {
			hasSeed = true
		}
		parts = append(parts, shellQuote(a))
	}
	if !hasSeed {
		parts = append(parts, fmt.Sprintf("--seed %d", mf.o.Seed))
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '-' || r == '=' || r == '_' || r == '.' || r == '/' || r == ',' || r == ':' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeJSON prints v (a command's result, --json) as one JSON object.
func writeJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

// writeTrace writes --trace; a failure is one line on stderr (the path
// was checked before the run, so this is rare).
func writeTrace(r *sim.Run, mf *machineFlags, cmdline string, stderr io.Writer) {
	if r.Machine.Stuck {
		fmt.Fprintf(stderr, "proxysim: CPUs are stuck: no trace written to %s\n", mf.trace)
		return
	}
	if err := sim.WriteFileAtomic(mf.trace, func(w io.Writer) error {
		return trace.WritePerfetto(w, r.Machine.Log.Merged(0), r.Machine.NumCPUs(), r.TaskName,
			map[string]string{"seed": fmt.Sprint(mf.o.Seed), "command": cmdline})
	}); err != nil {
		fmt.Fprintf(stderr, "proxysim: cannot write the trace: %v\n", err)
	}
}

// boundedReplayCommand is the stress command line that replays a run's
// seed in deterministic mode with strategy st, for a run known to fail by
// virtual time simTime: the run's own flags (all of them: the workload,
// bugs, injectors, features), less those that name outputs or the mode,
// plus the seed and the deterministic ones. It runs to that virtual time,
// with no wall-clock limit, so that a slower host replays it just the same.
func boundedReplayCommand(args []string, mf *machineFlags, st string, simTime time.Duration) string {
	return deterministicCommand(args, mf, st, "--duration", "0", "--sim-time", simTime.String())
}

// deterministicCommand is boundedReplayCommand's command line ending in tail.
func deterministicCommand(args []string, mf *machineFlags, st string, tail ...string) string {
	drop := map[string]bool{"report": true, "trace": true, "cpuprofile": true, "metrics-addr": true, "duration": true,
		"strategy": true, "deterministic": false, "retry-deterministic": true, "seed": true, "print-report": false}
	parts := []string{"proxysim", "stress"}
	for i := 0; i < len(args); i++ {
		name := strings.TrimLeft(args[i], "-")
		if !strings.HasPrefix(args[i], "-") || name == "" {
			parts = append(parts, shellQuote(args[i]))
			continue
		}
		base, _, hasValue := strings.Cut(name, "=")
		takesValue, known := drop[base]
		if !known {
			parts = append(parts, shellQuote(args[i]))
			continue
		}
		if takesValue && !hasValue && i+1 < len(args) {
			i++ // its value
		}
	}
	parts = append(parts, "--seed", fmt.Sprint(mf.o.Seed), "--deterministic", "--strategy", shellQuote(st))
	return strings.Join(append(parts, tail...), " ")
}

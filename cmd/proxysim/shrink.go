package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/conductor"
	"github.com/proxysim/proxysim/internal/sim"
	"github.com/proxysim/proxysim/internal/workload"
)

const shrinkUsage = `Usage: proxysim shrink REPORT [--out FILE] [--budget D] [--max-tries N] [--seeds N] [--strategies LIST]

Starting from the failing deterministic run a report records, looks for a
smaller case that still fails with the same invariant, the biggest cuts
first: a smaller machine with its tasks cut in proportion (one of at most
8 CPUs first, then halving), whole task groups, tasks, the stress
injectors (signals, spurious wake-ups, hotplug, affinity shuffles,
migrate_disable regions, interruptible locks, toggles: options of the
run, turned off in the command), mutexes and ww classes nothing needs,
random choices made fixed, and program steps last. Each candidate is tried
on the seed and strategy the current case fails with, then on the next
--seeds-1 seeds with each of --strategies (a smaller machine on four
times as many), and kept when one of those runs fails.

Writes the smallest scenario as a scenario file (default
REPORT.min.json), prints the size before and after and the command that
runs the shrunk case, and runs that command once to check it fails the
same way. Ends when no cut helps, after --budget of wall time or
--max-tries runs; SIGINT stops it and keeps the smallest failing case
found so far (exit 130).

Flags:
`

// shrinkFlags are shrink's flags.
type shrinkFlags struct {
	out                      string
	quiet, json              bool
	budget                   time.Duration
	maxTries, seeds, workers int
	strategies, order        string
}

// common points the common flags at f's storage.
func (f *shrinkFlags) common() commonFlags {
	return commonFlags{quiet: &f.quiet, json: &f.json, out: &f.out}
}

// newShrinkFlags is shrink's flag set.
func newShrinkFlags() (*flag.FlagSet, *shrinkFlags) {
	fs := newFlagSet("shrink")
	f := &shrinkFlags{}
	f.common().register(fs, map[string]string{
		"out":   "the shrunk scenario; default REPORT.min.json",
		"quiet": "the line per change kept",
		"json":  "sizes and events before and after, the file, the command that runs it",
	})
	fs.DurationVar(&f.budget, "budget", 60*time.Second, "wall time the shrink may take (0: no limit); it then keeps the smallest failing case so far")
	fs.IntVar(&f.maxTries, "max-tries", 0, "most candidate runs (0: no limit but --budget)")
	fs.IntVar(&f.seeds, "seeds", 4, "seeds each candidate is tried on per strategy: the current one, then the next ones (1: the current one only)")
	fs.StringVar(&f.strategies, "strategies", strings.Join(sim.DefaultShrinkStrategies, ","), "deterministic strategies a candidate is tried with, after the one the current case fails with (comma-separated)")
	fs.StringVar(&f.order, "order", sim.ShrinkJump, "how smaller machines are tried: jump (at most 8 CPUs first, then smaller, back up only if that does not fail) or halve (halving from the recorded size)")
	fs.IntVar(&f.workers, "workers", 0, "runs of a candidate at once (0: one per CPU of the host); the result does not depend on it")
	return fs, f
}

func cmdShrink(args []string, stdout, stderr io.Writer) (int, error) {
	begun := time.Now() // --budget counts the loading of the report too
	fs, f := newShrinkFlags()
	out, budget, maxTries, seeds, workers, order := &f.out, &f.budget, &f.maxTries, &f.seeds, &f.workers, &f.order
	path, err := reportArg(fs, args, shrinkUsage, stdout)
	if err != nil {
		return 0, err
	}
	if *maxTries < 0 {
		return 0, usagef("--max-tries must not be negative (0: no limit)")
	}
	if *budget < 0 {
		return 0, usagef("--budget must not be negative (0: no limit)")
	}
	if *seeds < 1 || *seeds > 1000 {
		return 0, usagef("--seeds %d out of range 1-1000", *seeds)
	}
	if *workers < 0 || *workers > 1024 {
		return 0, usagef("--workers %d out of range 0-1024", *workers)
	}
	if *order != sim.ShrinkJump && *order != sim.ShrinkHalve {
		return 0, usagef("--order: want %s or %s, not %q", sim.ShrinkJump, sim.ShrinkHalve, *order)
	}
	var sts []string
	for _, st := range strings.Split(f.strategies, ",") {
		if st = strings.TrimSpace(st); st == "" {
			continue
		}
		if _, err := conductor.ParseStrategy(st); err != nil {
			return 0, usagef("--strategies: %v", err)
		}
		sts = append(sts, st)
	}
	if len(sts) == 0 {
		return 0, usagef("--strategies: want at least one strategy")
	}
	rep, err := readReport(path)
	if err != nil {
		return 0, err
	}
	if *out == "" {
		*out = path + ".min.json"
	}
	if err := sim.CheckWritable(*out); err != nil {
		return 0, usagef("--out: %v", err)
	}
	want, words, mf := rep.violation, rep.words, rep.flags
	if !mf.o.Deterministic {
		return 0, usagef("%s: shrinking needs a deterministic run (--deterministic): a concurrent run does not repeat", path)
	}
	sc, err := sim.LoadScenario(mf.o.Workload, mf.o.CPUs, mf.o.Tasks)
	if err != nil {
		return 0, usageError{err.Error()}
	}
	cpus := mf.o.CPUs
	if sc.CPUs > 0 {
		cpus = sc.CPUs
	}
	before := sim.SizeOf(sc, cpus)
	if !f.json {
		fmt.Fprintf(stdout, "shrinking %s (invariant %s)\nbefore: %v\n", path, want[3], before)
	}
	stop := make(chan struct{})
	in := watchInterrupts(stderr, "shrinking; keeping the smallest failing case so far")
	defer in.close()
	in.setStop(func() { close(stop) })
	start := time.Now()
	res, err := sim.Shrink(mf.o, sc, want[3], sim.ShrinkOptions{MaxTries: *maxTries, Budget: *budget, Start: begun, Seeds: *seeds,
		Strategies: sts, Order: *order, Workers: *workers, Stop: stop,
		Progress: func(z sim.Size, what string) {
			if !f.quiet && !f.json {
				fmt.Fprintf(stdout, "  %6.1fs kept: %-56s -> %v\n", time.Since(start).Seconds(), what, z)
			}
		}})
	if err != nil {
		if f.json {
			return exitViolation, writeJSON(stdout, shrinkResult{Report: path, Invariant: want[3], Before: before, Error: err.Error()})
		}
		fmt.Fprintf(stdout, "cannot shrink: %v\n", err)
		return exitViolation, nil
	}
	elapsed := time.Since(start)
	small := res.Scenario
	small.Name = sc.Name + "-shrunk"
	data, err := workload.Encode(small)
	if err != nil {
		return exitInternal, err
	}
	if err := sim.WriteFileAtomic(*out, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
		return exitInternal, fmt.Errorf("cannot write the shrunk scenario: %v", err)
	}
	after := sim.SizeOf(small, small.CPUs)
	run := rerunWith(words, *out, &mf.o, &res.Options)
	note := ""
	switch {
	case res.Interrupted:
		note = ", interrupted: the smallest failing case so far"
	case res.BudgetSpent:
		note = fmt.Sprintf(", --budget %v spent: the smallest failing case so far", *budget)
	}
	if !f.json {
		fmt.Fprintf(stdout, "before: fails at %s\nafter:  %v; fails at %s (%d candidate runs in %v%s)\nwrote %s\nrun it: %s\n",
			eventAt(res.First, res.FirstAt), after, eventAt(res.Violation, res.At), res.Tries, elapsed.Round(time.Millisecond), note, *out, run)
	}
	checkOut := stdout
	if f.json {
		checkOut = io.Discard
	}
	if code, err := checkRerun(run, want[3], checkOut); code != exitOK || err != nil {
		return code, err
	}
	code := exitOK
	if res.Interrupted {
		code = in.exitCode()
	}
	if f.json {
		return code, writeJSON(stdout, shrinkResult{Report: path, Invariant: want[3], Before: before, After: &after,
			EventBefore: res.First.Seq, EventAfter: res.Violation.Seq, Tries: res.Tries, WallSeconds: elapsed.Seconds(),
			Interrupted: res.Interrupted, BudgetSpent: res.BudgetSpent, Out: *out, Run: run, Checked: true})
	}
	return code, nil
}

// shrinkResult is shrink's result (--json prints it).
type shrinkResult struct {
	Report      string    `json:"report"`
	Invariant   string    `json:"invariant"`
	Before      sim.Size  `json:"before"`
	After       *sim.Size `json:"after,omitempty"`
	EventBefore uint64    `json:"event_before,omitempty"` // the violation's event number in the recorded run
	EventAfter  uint64    `json:"event_after,omitempty"`  // and in the shrunk one
	Tries       int       `json:"tries,omitempty"`
	WallSeconds float64   `json:"wall_seconds,omitempty"`
	Interrupted bool      `json:"interrupted,omitempty"`
	BudgetSpent bool      `json:"budget_spent,omitempty"`
	Out         string    `json:"out,omitempty"`
	Run         string    `json:"run,omitempty"`
	Checked     bool      `json:"checked,omitempty"` // the command Run was run and failed with Invariant
	Error       string    `json:"error,omitempty"`
}

// eventAt names a violation's event and the virtual time its run had
// reached.
func eventAt(v check.Violation, at time.Duration) string {
	return fmt.Sprintf("event #%d, t=%v", v.Seq, at)
}

// checkRerun runs the command shrink prints and says whether it fails with
// invariant inv: what a user will run must be what was found.
func checkRerun(cmdline, inv string, stdout io.Writer) (int, error) {
	words, err := shellWords(cmdline)
	if err != nil {
		return exitInternal, fmt.Errorf("the shrunk case's command does not split: %v", err)
	}
	mf, err := parseMachineArgs(words[1], words[2:])
	if err != nil {
		return exitInternal, fmt.Errorf("the shrunk case's command does not parse: %v", err)
	}
	sc, err := sim.LoadScenario(mf.o.Workload, mf.o.CPUs, mf.o.Tasks)
	if err != nil {
		return exitInternal, err
	}
	r, err := sim.Build(mf.o, sc)
	if err != nil {
		return exitInternal, fmt.Errorf("the shrunk case does not build: %v", err)
	}
	s := r.Execute()
	if !s.Failed() || s.Violations[0].Name != inv {
		got := "no violation"
		if s.Failed() {
			got = s.Violations[0].String()
		}
		return exitInternal, fmt.Errorf("the shrunk case's command does not fail with %s (%s)", inv, got)
	}
	fmt.Fprintf(stdout, "checked: it fails with %s at %s\n", inv, eventAt(s.Violations[0], s.FailedAt()))
	return exitOK, nil
}

// rerunWith is the recorded command with the scenario file in place of
// --workload, --cpus, --tasks and --topology (the file says them), the
// seed, strategy and sim time the shrunk case fails with, the injectors
// the shrink turned off, and no --report.
func rerunWith(words []string, file string, was, now *sim.Options) string {
	drop := []string{"workload", "cpus", "tasks", "topology", "report", "seed", "strategy", "sim-time"}
	set := injectorFlags(was, now)
	for k := 0; k < len(set); k += 2 {
		drop = append(drop, strings.TrimPrefix(set[k], "--"))
	}
	out := append([]string{words[0], words[1]}, withoutFlags(words[2:], drop...)...)
	out = append(out, "--workload", shellQuote(file), "--seed", fmt.Sprint(now.Seed), "--strategy", shellQuote(now.Strategy),
		"--sim-time", now.SimTime.String())
	return strings.Join(append(out, set...), " ")
}

// injectorFlags are the flags, with their values, of the stress injectors
// whose values differ between was and now (those a shrink turned off).
func injectorFlags(was, now *sim.Options) []string {
	var out []string
	for _, in := range sim.Injectors {
		if v := in.Value(now); v != in.Value(was) {
			out = append(out, "--"+in.Flag, v)
		}
	}
	return out
}

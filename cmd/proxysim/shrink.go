package main

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/proxysim/proxysim/internal/sim"
	"github.com/proxysim/proxysim/internal/workload"
)

const shrinkUsage = `Usage: proxysim shrink REPORT [--out FILE] [--max-tries N] [--seeds N]

Starting from the failing deterministic run a report records, removes CPUs,
tasks, task groups, mutexes and program steps, keeping each change that
still fails with the same invariant (on the run's seed or one of the next
--seeds-1), and writes the smallest scenario as a scenario file (default
REPORT.min.json). Prints the size before and after and the command that
runs the shrunk case. SIGINT stops it and keeps the smallest failing
scenario found so far (exit 130).

Flags:
`

var violationTime = regexp.MustCompile(`\[event #\d+, t=([0-9.]+(?:ns|us|ms|s))\]`)

// shrinkFlags are shrink's flags.
type shrinkFlags struct {
	out                      string
	quiet, json              bool
	maxTries, seeds, workers int
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
		"json":  "sizes before and after, the file, the command that runs it",
	})
	fs.IntVar(&f.maxTries, "max-tries", 400, "most candidate runs to try")
	fs.IntVar(&f.seeds, "seeds", 4, "seeds each candidate is tried on: the run's own, then the next ones (1: the run's own only)")
	fs.IntVar(&f.workers, "workers", 0, "seeds of a candidate run at once (0: one per CPU of the host); the result does not depend on it")
	return fs, f
}

func cmdShrink(args []string, stdout, stderr io.Writer) (int, error) {
	fs, f := newShrinkFlags()
	out, maxTries, seeds, workers := &f.out, &f.maxTries, &f.seeds, &f.workers
	path, err := reportArg(fs, args, shrinkUsage, stdout)
	if err != nil {
		return 0, err
	}
	if *maxTries < 1 {
		return 0, usagef("--max-tries must be at least 1")
	}
	if *seeds < 1 || *seeds > 1000 {
		return 0, usagef("--seeds %d out of range 1-1000", *seeds)
	}
	if *workers < 0 || *workers > 1024 {
		return 0, usagef("--workers %d out of range 0-1024", *workers)
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
	text, want, words, mf := rep.text, rep.violation, rep.words, rep.flags
	if !mf.o.Deterministic {
		return 0, usagef("%s: shrinking needs a deterministic run (--deterministic): a concurrent run does not repeat", path)
	}
	// Candidate runs need not go much past the virtual time of the
	// recorded violation: a run that has not failed by twice that time
	// (plus 50ms) counts as not failing.
	if tm := violationTime.FindStringSubmatch(text); tm != nil {
		if at, err := time.ParseDuration(tm[1]); err == nil && at > 0 {
			if lim := 2*at + 50*time.Millisecond; lim < mf.o.SimTime {
				mf.o.SimTime = lim
			}
		}
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
	in := watchInterrupts(stderr, "shrinking; keeping the smallest failing scenario so far")
	defer in.close()
	in.setStop(func() { close(stop) })
	res, err := sim.Shrink(mf.o, sc, want[3], sim.ShrinkOptions{MaxTries: *maxTries, Seeds: *seeds, Workers: *workers, Stop: stop,
		Progress: func(z sim.Size, what string) {
			if !f.quiet && !f.json {
				fmt.Fprintf(stdout, "  kept: %-32s -> %v\n", what, z)
			}
		}})
	if err != nil {
		if f.json {
			return exitViolation, writeJSON(stdout, shrinkResult{Report: path, Invariant: want[3], Before: before, Error: err.Error()})
		}
		fmt.Fprintf(stdout, "cannot shrink: %v\n", err)
		return exitViolation, nil
	}
	small, tries := res.Scenario, res.Tries
	small.Name = sc.Name + "-shrunk"
	data, err := workload.Encode(small)
	if err != nil {
		return exitInternal, err
	}
	if err := sim.WriteFileAtomic(*out, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
		return exitInternal, fmt.Errorf("cannot write the shrunk scenario: %v", err)
	}
	after := sim.SizeOf(small, small.CPUs)
	run := rerunWith(words, *out, res.Seed)
	note := ""
	if res.Interrupted {
		note = ", interrupted: the smallest failing scenario so far"
	}
	code := exitOK
	if res.Interrupted {
		code = in.exitCode()
	}
	if f.json {
		return code, writeJSON(stdout, shrinkResult{Report: path, Invariant: want[3], Before: before, After: &after, Tries: tries,
			Interrupted: res.Interrupted, Out: *out, Run: run})
	}
	fmt.Fprintf(stdout, "after:  %v (%d candidate runs%s)\nwrote %s\nrun it: %s\n", after, tries, note, *out, run)
	return code, nil
}

// shrinkResult is shrink's result (--json prints it).
type shrinkResult struct {
	Report      string    `json:"report"`
	Invariant   string    `json:"invariant"`
	Before      sim.Size  `json:"before"`
	After       *sim.Size `json:"after,omitempty"`
	Tries       int       `json:"tries,omitempty"`
	Interrupted bool      `json:"interrupted,omitempty"`
	Out         string    `json:"out,omitempty"`
	Run         string    `json:"run,omitempty"`
	Error       string    `json:"error,omitempty"`
}

// rerunWith is the recorded command with the scenario file in place of
// --workload, --cpus and --tasks (the file says both), the seed the
// shrunk scenario fails on, and no --report.
func rerunWith(words []string, file string, seed uint64) string {
	out := append([]string{words[0], words[1]}, withoutFlags(words[2:], "workload", "cpus", "tasks", "report", "seed")...)
	out = append(out, "--workload", shellQuote(file), "--seed", fmt.Sprint(seed))
	return strings.Join(out, " ")
}

package main

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/proxysim/proxysim/internal/sim"
	"github.com/proxysim/proxysim/internal/workload"
)

const shrinkUsage = `Usage: proxysim shrink REPORT [--out FILE] [--max-tries N]

Starting from the failing deterministic run a report records, removes CPUs,
tasks, task groups, mutexes and program steps, keeping each change that
still fails with the same invariant, and writes the smallest scenario as a
scenario file (default REPORT.min.json). Prints the size before and after
and the command that runs the shrunk case.

Flags:
`

var violationTime = regexp.MustCompile(`\[event #\d+, t=([0-9.]+(?:ns|us|ms|s))\]`)

func cmdShrink(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("shrink", shrinkUsage, stderr)
	out := fs.String("out", "", "where to write the shrunk scenario (default REPORT.min.json)")
	maxTries := fs.Int("max-tries", 400, "most candidate runs to try")
	// the report path may come before the flags
	var path string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		path, args = args[0], args[1:]
	}
	if err := parse(fs, args, shrinkUsage, stdout); err != nil {
		return 0, err
	}
	if path == "" && fs.NArg() == 1 {
		path = fs.Arg(0)
	} else if fs.NArg() > 0 || path == "" {
		return 0, usagef("want exactly one report file")
	}
	if *maxTries < 1 {
		return 0, usagef("--max-tries must be at least 1")
	}
	rep, err := readReport(path)
	if err != nil {
		return 0, err
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
	fmt.Fprintf(stdout, "shrinking %s (invariant %s)\nbefore: %v\n", path, want[3], before)
	small, tries, err := sim.Shrink(mf.o, sc, want[3], *maxTries, func(z sim.Size, what string) {
		fmt.Fprintf(stdout, "  kept: %-32s -> %v\n", what, z)
	})
	if err != nil {
		fmt.Fprintf(stdout, "cannot shrink: %v\n", err)
		return exitViolation, nil
	}
	if *out == "" {
		*out = path + ".min.json"
	}
	small.Name = sc.Name + "-shrunk"
	data, err := workload.Encode(small)
	if err != nil {
		return exitInternal, err
	}
	if err := sim.WriteFileAtomic(*out, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
		return exitInternal, err
	}
	after := sim.SizeOf(small, small.CPUs)
	run := rerunWith(words, *out)
	fmt.Fprintf(stdout, "after:  %v (%d candidate runs)\nwrote %s\nrun it: %s\n", after, tries, *out, run)
	return exitOK, nil
}

// rerunWith is the recorded command with the scenario file in place of
// --workload, --cpus and --tasks (the file says both), and no --report.
func rerunWith(words []string, file string) string {
	out := append([]string{words[0], words[1]}, withoutFlags(words[2:], "workload", "cpus", "tasks", "report")...)
	out = append(out, "--workload", shellQuote(file))
	return strings.Join(out, " ")
}

package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/conductor"
	"github.com/proxysim/proxysim/internal/sim"
)

const bugsUsage = `Usage: proxysim bugs [--json] [--hunt [--seeds N] [--seed S] [--budget D] [--only NAME] [--race]]

Lists the catalogue that --bug NAME switches on: historical bugs of the
proxy-execution series (fixed upstream in the version named) and findings
(holes proxysim found in the reference kernel's code, open there: --bug
restores the kernel's code, the default runs the proposed fix; see
docs/findings.md).

NEEDS says what an entry's code needs in a run to run at all, by the flag
(or workload) that provides it; run, stress and explore switch it on or
refuse the command line (see 'proxysim run --help').

Flags:
`

// bugsFlags are the flags of proxysim bugs (most only with --hunt).
type bugsFlags struct {
	json, hunt, quiet, race bool
	seeds                   int
	seed                    seedFlag
	budget, control         time.Duration
	only                    []string
	sf                      stressFlags // the hunt's stress options (sf.o)
}

// common points the common flags at f's storage.
func (f *bugsFlags) common() commonFlags {
	return commonFlags{seed: &f.seed, cpus: &f.sf.o.CPUs, workload: &f.sf.o.Workload, quiet: &f.quiet, json: &f.json}
}

// newBugsFlags is bugs's flag set.
func newBugsFlags() (*flag.FlagSet, *bugsFlags) {
	fs := newFlagSet("bugs")
	f := &bugsFlags{seed: fixedSeed(1)}
	f.sf.o = stressDefaults()
	f.common().register(fs, map[string]string{
		"seed":     "with --hunt: the first; default 1",
		"cpus":     "with --hunt",
		"workload": "with --hunt; a few entries' hunts swap stress for the workload they show on (coresched, coresched-hog)",
		"quiet":    "with --hunt: the line per run",
		"json":     "the catalogue: a list of {name, kind, fixed_in, description, number, detector, needs, needs_flags}; with --hunt: the table",
	})
	fs.BoolVar(&f.hunt, "hunt", false, "measure time to detection: run 'proxysim stress --bug NAME' for every bug (or each --only) over --seeds seeds")
	fs.IntVar(&f.seeds, "seeds", 5, "with --hunt: seeds per bug (--seed, --seed+1, ...)")
	fs.DurationVar(&f.budget, "budget", 60*time.Second, "with --hunt: wall-clock budget of one run")
	fs.DurationVar(&f.control, "control", 20*time.Second, "with --hunt: length of the control run (no bug) per seed (0: none)")
	fs.Var(listFlag{&f.only}, "only", "with --hunt: hunt only this bug (repeatable)")
	fs.Float64Var(&f.sf.o.Jitter, "jitter", f.sf.o.Jitter, "with --hunt: stress jitter probability")
	fs.BoolVar(&f.sf.o.Deterministic, "deterministic", false, "with --hunt: hunt in deterministic (serial) mode")
	fs.StringVar(&f.sf.o.Strategy, "strategy", "random", "with --hunt --deterministic: time, random or pct:D")
	fs.DurationVar(&f.sf.o.MaxSkew, "max-skew", f.sf.o.MaxSkew, "with --hunt: clock skew bound of the stress runs (see proxysim stress --help)")
	fs.BoolVar(&f.race, "race", false, "with --hunt: hunt with the race detector: build the -race binary of the source tree in the current directory (go build -race) into a temporary directory and run the hunt with it")
	return fs, f
}

func cmdBugs(args []string, stdout, stderr io.Writer) (int, error) {
	fs, f := newBugsFlags()
	asJSON, hunt, seeds, budget, control, race := &f.json, &f.hunt, &f.seeds, &f.budget, &f.control, &f.race
	firstSeed := &f.seed.v
	only := f.only
	sf := &f.sf
	if err := parse(fs, args, bugsUsage, stdout); err != nil {
		return 0, err
	}
	if fs.NArg() > 0 {
		return 0, usagef("unexpected argument %q", fs.Arg(0))
	}
	only = f.only
	if len(only) > 0 {
		if _, err := bugs.Parse(only); err != nil {
			return 0, usagef("--only: %v", err)
		}
	}
	if sf.o.MaxSkew < 100*time.Nanosecond {
		return 0, usagef("--max-skew must be at least 100ns, not %v", sf.o.MaxSkew)
	}
	if !*hunt {
		huntOnly := []string{}
		fs.Visit(func(f *flag.Flag) {
			if f.Name != "json" && f.Name != "hunt" {
				huntOnly = append(huntOnly, "--"+f.Name)
			}
		})
		if len(huntOnly) > 0 {
			return 0, usagef("%s applies only with --hunt", strings.Join(huntOnly, ", "))
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return exitOK, enc.Encode(bugs.Catalogue)
		}
		fmt.Fprintf(stdout, "%-24s %-10s %-53s %-13s %s\n", "NAME", "KIND", "NEEDS", "FIXED IN", "DESCRIPTION")
		for _, b := range bugs.Catalogue {
			needs := b.Needs().Flags()
			if needs == "" {
				needs = "-"
			}
			fmt.Fprintf(stdout, "%-24s %-10s %-53s %-13s %s\n", b.Name, b.Kind, needs, b.FixedIn, b.Description)
		}
		return exitOK, nil
	}
	if *seeds < 1 || *budget <= 0 || *control < 0 {
		return 0, usagef("--seeds must be at least 1 and --budget positive")
	}
	if *firstSeed == 0 || *firstSeed > math.MaxUint64-uint64(*seeds) {
		return 0, usagef("--seed %d out of range 1-%d", *firstSeed, uint64(math.MaxUint64)-uint64(*seeds))
	}
	if sf.o.CPUs < 1 || sf.o.CPUs > 1024 {
		return 0, usagef("--cpus %d out of range 1-1024", sf.o.CPUs)
	}
	if _, err := sim.LoadScenario(sf.o.Workload, sf.o.CPUs, 0); err != nil {
		return 0, usagef("--workload: %v", err)
	}
	if !(sf.o.Jitter >= 0 && sf.o.Jitter <= 1) {
		return 0, usagef("--jitter %v out of range 0-1", sf.o.Jitter)
	}
	if _, err := conductor.ParseStrategy(sf.o.Strategy); err != nil {
		return 0, usagef("--strategy: %v", err)
	}
	if *race && !raceEnabled {
		return runRaceBuild(args, stdout, stderr)
	}
	names := sim.BugNames()
	if len(only) > 0 {
		if _, err := bugs.Parse(only); err != nil {
			return 0, usagef("--only: %v", err)
		}
		names = only
	}
	rl := newRaceLog()
	huntOnce := func(o sim.Options, budget time.Duration) (sim.HuntResult, error) {
		defer serialProcs(o)()
		if rl == nil {
			return sim.Hunt(o, budget)
		}
		rl.mark()
		r, err := sim.HuntWatched(o, budget, rl.since)
		rl.dump(stderr)
		return r, err
	}
	var rows []sim.HuntRow
	for _, name := range names {
		set, _ := bugs.Parse([]string{name})
		if b, _ := bugs.Lookup(name); b.HuntSkip() != "" && len(only) == 0 && !(b.RaceOnly() && rl != nil) {
			fmt.Fprintf(stderr, "hunt: %-24s skipped: %s\n", name, b.HuntSkip())
			continue
		}
		var rs []sim.HuntResult
		for seed := *firstSeed; seed < *firstSeed+uint64(*seeds); seed++ {
			o := sf.o
			o.Seed, o.Bugs = seed, set
			r, err := huntOnce(o, *budget)
			if err != nil {
				return 0, err
			}
			at := ""
			if r.CPUs != o.CPUs {
				at = fmt.Sprintf(" (at %d CPUs)", r.CPUs)
			}
			if !f.quiet {
				fmt.Fprintf(stderr, "hunt: %-24s seed %d: caught=%v after %v %s%s\n", name, seed, r.Caught, r.Elapsed.Round(time.Millisecond), r.Invariant, at)
			}
			rs = append(rs, r)
		}
		rows = append(rows, sim.SummarizeHunt(name, rs))
	}
	var ctl []sim.HuntResult
	if *control > 0 {
		for seed := *firstSeed; seed < *firstSeed+uint64(*seeds); seed++ {
			o := sf.o
			o.Seed = seed
			if len(only) > 0 {
				// the control of a hunt by name runs what those entries
				// need (SHARED_RUNQ, core scheduling, ...), without them
				o.Bugs, _ = bugs.Parse(only)
				if sc, err := sim.LoadScenario(o.Workload, o.CPUs, o.Tasks); err == nil {
					if _, err := sim.EnableBugNeeds(&o, sc, sim.NeedsOff{}); err != nil {
						return 0, usagef("%v", err)
					}
				}
				o.Bugs = 0
			}
			r, err := huntOnce(o, *control)
			if err != nil {
				return 0, err
			}
			if !f.quiet {
				fmt.Fprintf(stderr, "hunt: control (no bug)         seed %d: violation=%v %s\n", seed, r.Caught, r.Message)
			}
			ctl = append(ctl, r)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return exitOK, enc.Encode(map[string]any{"bugs": rows, "control": ctl, "budget_ns": *budget, "cpus": sf.o.CPUs, "first_seed": *firstSeed})
	}
	mode := "concurrent"
	if sf.o.Deterministic {
		mode = "deterministic --strategy " + sf.o.Strategy
	}
	if raceEnabled {
		mode += ", race detector"
	}
	fmt.Fprintf(stdout, "time to detection, proxysim stress --cpus %d (%s), %d seeds from %d, budget %v per run\n", sf.o.CPUs, mode, *seeds, *firstSeed, *budget)
	fmt.Fprintf(stdout, "%-24s %-7s %-9s %-9s %s\n", "BUG", "CAUGHT", "MEDIAN", "MAX", "CAUGHT BY")
	code := exitOK
	for _, r := range rows {
		var inv []string
		for k, v := range r.Invariants {
			inv = append(inv, fmt.Sprintf("%s x%d", k, v))
		}
		sort.Strings(inv)
		by := strings.Join(inv, ", ")
		if r.CPUs != sf.o.CPUs {
			by += fmt.Sprintf(" (at %d CPUs)", r.CPUs) // HuntSetup's smaller machine
		}
		fmt.Fprintf(stdout, "%-24s %d/%-5d %-9v %-9v %s\n", r.Bug, r.Caught, r.Runs, r.Median.Round(time.Millisecond), r.Max.Round(time.Millisecond), by)
		if r.Caught < r.Runs {
			code = exitViolation
		}
	}
	if len(ctl) > 0 {
		bad := 0
		for _, r := range ctl {
			if r.Caught {
				bad++
			}
		}
		fmt.Fprintf(stdout, "control (no bug)         %d of %d runs of %v found a violation\n", bad, len(ctl), *control)
		if bad > 0 {
			code = exitViolation
		}
	}
	return code, nil
}

func cmdVersion(args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		fmt.Fprintf(stdout, "Usage: proxysim version\n\nPrints the version, the VCS revision the binary was built from, and the Go toolchain.\n")
		return exitOK, nil
	}
	if len(args) > 0 {
		return 0, usagef("version takes no arguments")
	}
	fmt.Fprintln(stdout, sim.Version())
	fmt.Fprintf(stdout, "kernel reference: %s (docs/kernel-map.md)\n", bugs.ReferenceFull)
	return exitOK, nil
}

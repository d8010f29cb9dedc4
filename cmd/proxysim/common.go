package main

import "flag"

// commonFlags are the flags that the commands running a machine share,
// each with one name and one meaning wherever it is taken (README,
// "Common flags"). A command points those it takes at its own storage
// (nil: it does not take that flag) and registers them here, so the
// names and the help text exist once.
type commonFlags struct {
	seed     *seedFlag // --seed
	cpus     *int      // --cpus
	workload *string   // --workload
	quiet    *bool     // --quiet
	json     *bool     // --json
	logLevel *string   // --log-level
	report   *string   // --report
	out      *string   // --out
}

// commonHelp is each common flag's meaning; a command may add a note on
// its own values (the workloads it takes, the default file name).
var commonHelp = map[string]string{
	"seed":      "random seed; a command that runs several seeds runs --seed, --seed+1, ...",
	"cpus":      "number of simulated CPUs (1-1024)",
	"workload":  "the workload the machine runs",
	"quiet":     "no progress output on stderr (the progress line, periodic stat or progress lines); results, warnings and errors still print. The progress line is drawn only when stderr is a terminal, without escape sequences under TERM=dumb or NO_COLOR",
	"json":      "print the command's result as JSON on stdout",
	"log-level": "log level of the structured log on stderr: debug, info, warn, error",
	"report":    "failure report file, written only when a run fails",
	"out":       "file the command writes its result to",
}

// commonNames lists the common flags in the order help and README give them.
var commonNames = []string{"seed", "cpus", "workload", "quiet", "json", "log-level", "report", "out"}

// register registers the common flags c points at on fs; notes adds to a
// flag's help ("default ..."); defaults are the pointed-at values.
func (c commonFlags) register(fs *flag.FlagSet, notes map[string]string) {
	help := func(name string) string {
		if n := notes[name]; n != "" {
			return commonHelp[name] + " (" + n + ")"
		}
		return commonHelp[name]
	}
	if c.seed != nil {
		fs.Var(c.seed, "seed", help("seed"))
	}
	if c.cpus != nil {
		fs.IntVar(c.cpus, "cpus", *c.cpus, help("cpus"))
	}
	if c.workload != nil {
		fs.StringVar(c.workload, "workload", *c.workload, help("workload"))
	}
	if c.quiet != nil {
		fs.BoolVar(c.quiet, "quiet", *c.quiet, help("quiet"))
	}
	if c.json != nil {
		fs.BoolVar(c.json, "json", *c.json, help("json"))
	}
	if c.logLevel != nil {
		fs.StringVar(c.logLevel, "log-level", *c.logLevel, help("log-level"))
	}
	if c.report != nil {
		fs.StringVar(c.report, "report", *c.report, help("report"))
	}
	if c.out != nil {
		fs.StringVar(c.out, "out", *c.out, help("out"))
	}
}

// fixedSeed is a seedFlag whose default is v (the commands whose seed is
// the first of a series, 1 by default).
func fixedSeed(v uint64) seedFlag { return seedFlag{v: v, set: true} }

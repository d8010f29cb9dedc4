package main

import (
	"flag"
	"os"
	"strings"
	"testing"
)

// commonFlagSets are the commands that run a machine, each with the
// common flags it takes (the README's "Common flags" table).
var commonFlagSets = []struct {
	name  string
	takes string
	make  func() (*flag.FlagSet, commonFlags)
}{
	{"run", "seed cpus workload quiet json log-level report", func() (*flag.FlagSet, commonFlags) { fs, f := newRunFlags(); return fs, f.common() }},
	{"stress", "seed cpus workload quiet json log-level report", func() (*flag.FlagSet, commonFlags) { fs, f := newStressFlags(); return fs, f.common() }},
	{"explore", "seed cpus workload quiet json log-level report", func() (*flag.FlagSet, commonFlags) { fs, f := newExploreFlags(); return fs, f.common() }},
	{"ab", "seed cpus workload quiet json out", func() (*flag.FlagSet, commonFlags) { fs, f := newABFlags(); return fs, f.common() }},
	{"bugs --hunt", "seed cpus workload quiet json", func() (*flag.FlagSet, commonFlags) { fs, f := newBugsFlags(); return fs, f.common() }},
	{"replay", "json", func() (*flag.FlagSet, commonFlags) { fs, f := newReplayFlags(); return fs, f.common() }},
	{"explain", "json", func() (*flag.FlagSet, commonFlags) { fs, f := newExplainFlags(); return fs, f.common() }},
	{"shrink", "quiet json out", func() (*flag.FlagSet, commonFlags) { fs, f := newShrinkFlags(); return fs, f.common() }},
}

// Every command that runs a machine takes the common flags it should,
// under the same names, with the same help, into the same meaning: the
// same flag line parses to the same values everywhere. (stress and
// explore had no --quiet, ab no --json, bugs --hunt no --workload,
// replay no flag at all.)
func TestCommonFlags(t *testing.T) {
	value := map[string]string{"seed": "7", "cpus": "4", "workload": "hackbench", "log-level": "warn", "report": "r.txt", "out": "o.json"}
	for _, c := range commonFlagSets {
		fs, cf := c.make()
		var line []string
		for _, name := range strings.Fields(c.takes) {
			f := fs.Lookup(name)
			if f == nil {
				t.Errorf("%s: no --%s", c.name, name)
				continue
			}
			if !strings.HasPrefix(f.Usage, commonHelp[name]) {
				t.Errorf("%s --%s: help %q does not start with the common meaning %q", c.name, name, f.Usage, commonHelp[name])
			}
			line = append(line, "--"+name)
			if v, ok := value[name]; ok {
				line = append(line, v)
			}
		}
		if err := fs.Parse(line); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		got := map[string]bool{
			"seed":      cf.seed != nil && cf.seed.set && cf.seed.v == 7,
			"cpus":      cf.cpus != nil && *cf.cpus == 4,
			"workload":  cf.workload != nil && *cf.workload == "hackbench",
			"quiet":     cf.quiet != nil && *cf.quiet,
			"json":      cf.json != nil && *cf.json,
			"log-level": cf.logLevel != nil && *cf.logLevel == "warn",
			"report":    cf.report != nil && *cf.report == "r.txt",
			"out":       cf.out != nil && *cf.out == "o.json",
		}
		for _, name := range commonNames {
			if want := strings.Contains(" "+c.takes+" ", " "+name+" "); got[name] != want {
				t.Errorf("%s: --%s parsed into the command's value: %v, want %v", c.name, name, got[name], want)
			}
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(readme), "## Common flags")
	if i < 0 {
		t.Fatal("README has no \"Common flags\" section")
	}
	for _, name := range commonNames {
		if !strings.Contains(string(readme[i:]), "`--"+name) {
			t.Errorf("README's common flags lack --%s", name)
		}
	}
}

// --help of every command exits 0 with its usage on stdout; a flag it
// does not know exits 2 with one line on stderr.
func TestHelpAndBadFlagEverywhere(t *testing.T) {
	for _, c := range commands {
		code, out, errs := runCLI(t, c.name, "--help")
		if code != exitOK || !strings.HasPrefix(out, "Usage: proxysim "+c.name) || errs != "" {
			t.Errorf("%s --help: exit %d, stdout %q, stderr %q", c.name, code, tail(out, 200), errs)
		}
		code, out, errs = runCLI(t, c.name, "--no-such-flag")
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		if code != exitUsage || out != "" || len(lines) != 1 || !strings.HasPrefix(lines[0], "proxysim "+c.name+": ") {
			t.Errorf("%s --no-such-flag: exit %d, stdout %q, stderr %q; want exit 2 and one line", c.name, code, out, errs)
		}
	}
}

package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/sim"
)

// --bug of an entry that needs a feature the run lacks switches it on,
// saying so on the first line of stderr, where that is unambiguous, and
// is refused (exit 2, one line naming what to add) where the command
// line or the workload rules it out. `stress --bug core-dl-tie` used to
// run without core scheduling: the entry's code never ran, and nothing
// said so.
func TestBugNeedsSwitchedOnOrRefused(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		line string // the first line of stderr
		core string // the summary's core_sched
	}{
		{[]string{"stress", "--cpus", "8", "--bug", "core-dl-tie", "--sim-time", "5ms", "--stat-interval", "0"},
			"proxysim stress: --bug core-dl-tie: switched on what it needs: core scheduling, the 5.14 core-wide pick (--core-sched)", "5.14"},
		{[]string{"run", "--cpus", "4", "--bug", "coresched-stall", "--sim-time", "5ms"},
			"proxysim run: --bug coresched-stall: switched on what it needs: core scheduling with RFC v3's pick (--core-sched=v3)", "v3"},
		{[]string{"explore", "--runs", "1", "--cpus", "4", "--bug", "core-lock-flip", "--sim-time", "5ms"},
			"proxysim explore: --bug core-lock-flip: switched on what it needs: core scheduling, the 5.14 core-wide pick (--core-sched); core scheduling switched off or on every 20ms", ""},
		{[]string{"run", "--cpus", "4", "--bug", "return-to-offline", "--sim-time", "5ms"},
			"proxysim run: --bug return-to-offline: switched on what it needs: CPU hotplug, a CPU down or up every 20ms", ""},
	} {
		args := append(c.args, "--seed", "1", "--report", filepath.Join(dir, "r.txt"))
		if c.args[0] != "explore" {
			args = append(args, "--json")
		}
		code, out, errs := runCLI(t, args...)
		if code != exitOK && code != exitViolation {
			t.Errorf("%v: exit %d\n%s", c.args, code, errs)
			continue
		}
		if first, _, _ := strings.Cut(errs, "\n"); !strings.HasPrefix(first, c.line) {
			t.Errorf("%v: first line of stderr\n%q\nwant it to start with\n%q", c.args, first, c.line)
		}
		if c.core != "" {
			var s struct {
				Core string `json:"core_sched"`
			}
			if err := json.Unmarshal([]byte(out), &s); err != nil || s.Core != c.core {
				t.Errorf("%v: core_sched %q (%v), want %q", c.args, s.Core, err, c.core)
			}
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--bug", "core-dl-tie", "--workload", "locktorture"}, "needs SCHED_DEADLINE tasks in the workload: workload locktorture has none (use --workload mixed, pi or stress"},
		{[]string{"run", "--bug", "core-dl-tie", "--core-sched=off"}, "needs core scheduling: use --core-sched, not --core-sched=off"},
		{[]string{"run", "--bug", "coresched-stall", "--core-sched"}, "use --core-sched=v3, not --core-sched"},
		{[]string{"stress", "--bug", "return-to-offline", "--hotplug-interval", "0"}, "give --hotplug-interval a positive interval"},
		{[]string{"stress", "--bug", "return-to-offline", "--core-sched"}, "CPU hotplug with core scheduling is not modelled"},
		{[]string{"stress", "--bug", "core-flip-repick", "--core-sched", "--core-sched-toggle-interval", "0"}, "give --core-sched-toggle-interval a positive interval"},
		{[]string{"run", "--bug", "srq-pulls-donor", "--sched-features", "SHARED_RUNQ", "--shared-runq-hooks", "v2"}, "use --shared-runq-hooks v3 or v4"},
		{[]string{"run", "--bug", "srq-pulls-donor", "--sched-features", "NO_SHARED_RUNQ"}, "use --sched-features SHARED_RUNQ, not NO_SHARED_RUNQ"},
		{[]string{"stress", "--bug", "delayed-plain-read", "--sched-features", "NO_DELAY_DEQUEUE"}, "drop NO_DELAY_DEQUEUE"},
		{[]string{"run", "--bug", "ww-wound-wrong-lock"}, "needs ww_mutexes in the workload: workload mixed has none (use --workload stress or wwtorture"},
		{[]string{"stress", "--bug", "activate-exited", "--signal-rate", "0"}, "give --signal-rate and --signal-fatal positive values"},
		{[]string{"ab", "--configs", "full;full+srq-pulls-donor"}, "--bug srq-pulls-donor needs SHARED_RUNQ"},
	} {
		code, _, errs := runCLI(t, append(c.args, "--cpus", "4")...)
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		if code != exitUsage || len(lines) != 1 || !strings.Contains(lines[0], c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line containing %q", c.args, code, errs, c.want)
		}
	}
}

// The catalogue says as data what each entry needs, `proxysim bugs` and
// its JSON show it, and every entry whose description ends in "Needs
// ..." has it; with them switched on, every entry can run on the stress
// workload.
func TestBugNeedsInTheCatalogue(t *testing.T) {
	code, out, _ := runCLI(t, "bugs", "--json")
	if code != exitOK {
		t.Fatalf("bugs --json: exit %d", code)
	}
	var list []struct {
		Name       string   `json:"name"`
		Needs      []string `json:"needs"`
		NeedsFlags string   `json:"needs_flags"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	byName := map[string]int{}
	for i, b := range list {
		byName[b.Name] = i
	}
	says := regexp.MustCompile(`Needs [^.]*$`)
	for _, b := range bugs.Catalogue {
		j := list[byName[b.Name]]
		if says.MatchString(b.Description) && len(j.Needs) == 0 {
			t.Errorf("%s: the description says %q, the catalogue lists no need", b.Name, says.FindString(b.Description))
		}
		if (len(j.Needs) == 0) != (j.NeedsFlags == "") {
			t.Errorf("%s: needs %v, needs_flags %q", b.Name, j.Needs, j.NeedsFlags)
		}
		o := stressDefaults()
		o.CPUs, o.Bugs = 8, bugs.Set(0).With(b.ID)
		sc, err := sim.LoadScenario(o.Workload, o.CPUs, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sim.EnableBugNeeds(&o, sc, sim.NeedsOff{}); err != nil {
			t.Errorf("%s on the stress workload: %v", b.Name, err)
		}
	}
	code, out, _ = runCLI(t, "bugs")
	if code != exitOK || !strings.Contains(out, "NEEDS") || !regexp.MustCompile(`(?m)^core-dl-tie +finding +--core-sched, a workload with SCHED_DEADLINE tasks`).MatchString(out) {
		t.Errorf("bugs: exit %d, no NEEDS column with core-dl-tie's needs:\n%s", code, tail(out, 800))
	}
}

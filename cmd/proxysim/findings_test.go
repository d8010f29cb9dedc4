package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxysim/proxysim/internal/bugs"
)

// findings are the holes proxysim found in the reference kernel's code
// (docs/findings.md, the index; each written up under docs/findings/). Each has a shrunk scenario under testdata/findings
// and a seed: with --bug NAME (the kernel's code) the documented command
// breaks the named invariant, replay reproduces it at the same event, and
// without the switch (the proposed fix) the same command runs clean.
var findings = []struct {
	bug, seed, invariant string
	extra                []string
}{
	// F1's shrunk scenario was found without optimistic spinning; with
	// it (the default since) its spinners rarely leave the owner asleep
	// with a donor parked, and seeds 1-60 ran clean, so the reproducer
	// switches spinning off. The 256-CPU hunt catches F1 with it on.
	// The seeds of F1, F7 and F8 were re-found when newidle balancing
	// got the kernel's cut-offs (its schedules moved every seed). F7's
	// window is prev_balance()'s lock drop, which the cut-offs make rare
	// on its CPU-bound scenario: 1 of seeds 1-60 (docs/findings.md).
	{"early-activation", "9", "no-stranded-waiter", []string{"--optimistic-spin", "off"}},
	{"proxy-keeps-donor", "115309719035642", "curr-donor", nil},
	// F6 (SHARED_RUNQ): the fixed form runs the shared runqueue too.
	// F6-F8 were shrunk before stress sent signals and spurious wake-ups
	// by default: their reproducers switch those injectors off.
	// F6 was shrunk with the v3 hooks.
	{"srq-pulls-donor", "238", "no-stale-rq-ref", append([]string{"--sched-features", "SHARED_RUNQ", "--shared-runq-hooks", "v3"}, quietInjectors...)},
	// F7 and F8 need core scheduling switched off and on at run time:
	// the toggler takes every cookie away (the last put's work switches
	// core scheduling off) and gives them back (the first get switches
	// it on). Their seeds were re-found when core scheduling came to be
	// switched off only by the last cookie's put (4 Dec 2026): F7 then
	// broke on 2 of seeds 1-60 (10, 38), F8 on 9.
	{"core-flip-repick", "10", "rq-lock-identity", append([]string{"--core-sched", "--core-sched-toggle-interval", "1ms", "--sim-time", "1s"}, quietInjectors...)},
	{"core-flip-stale-pick", "19", "one-queue", append([]string{"--core-sched", "--core-sched-toggle-interval", "1ms", "--sim-time", "1s"}, quietInjectors...)},
	// F13: w tasks contend for one mutex while a FIFO task moves their
	// masks to random 2-CPU windows; a donor handed the lock runs outside
	// its new mask.
	{"donor-affinity-exempt", "1", "affinity", quietInjectors},
	// F14: deadline donors of cookie 1 and owners of cookie 2 on two SMT
	// cores; two donors with equal deadlines on siblings.
	{"core-dl-tie", "33", "core-tie-max", quietInjectors},
	// F17: fair owners and deadline donors of one cookie, with fair
	// churn on the siblings making core-wide selections.
	{"core-throttle-stale-pick", "1", "dl-throttled-pick", quietInjectors},
}

// quietInjectors switches off the stress injectors that are on by default
// (signals, spurious wake-ups, interruptible locks).
var quietInjectors = []string{"--signal-rate", "0", "--spurious-wake-rate", "0", "--lock-interruptible", "0"}

func TestFindingsReproduce(t *testing.T) {
	for _, f := range findings {
		t.Run(f.bug, func(t *testing.T) {
			file := filepath.Join("..", "..", "testdata", "findings", f.bug+".json")
			if _, err := os.Stat(file); err != nil {
				t.Fatal(err)
			}
			report := filepath.Join(t.TempDir(), "r.txt")
			args := []string{"stress", "--deterministic", "--strategy", "random", "--sim-time", "100ms",
				"--stat-interval", "0", "--duration", "0", "--seed", f.seed, "--workload", file}
			args = append(args, f.extra...)
			code, out, errOut := runCLI(t, append(append([]string{}, args...), "--bug", f.bug, "--report", report)...)
			rep, _ := os.ReadFile(report)
			if code != exitViolation || !strings.Contains(string(rep), "("+f.invariant+")") {
				t.Fatalf("kernel form: exit %d, want %d with invariant %s:\n%s%s\n%s", code, exitViolation, f.invariant, out, errOut, tail(string(rep), 2000))
			}
			code, out, errOut = runCLI(t, "replay", report)
			if code != exitOK || !strings.Contains(out+errOut, "same violation at the same event") {
				t.Fatalf("replay: exit %d:\n%s%s", code, out, errOut)
			}
			checkExplanation(t, f.bug, report)
			code, _, errOut = runCLI(t, args...)
			if code != exitOK {
				t.Fatalf("fixed form: exit %d, want 0:\n%s", code, tail(errOut, 2000))
			}
		})
	}
}

// rewriteExplained regenerates the findings' explanations:
// go test ./cmd/proxysim -run FindingsReproduce -rewrite-explained
var rewriteExplained = flag.Bool("rewrite-explained", false, "rewrite testdata/findings/*.explain.txt instead of checking them")

// checkExplanation holds a finding's explanation fixed: proxysim explain
// of its reproducer's report must print testdata/findings/BUG.explain.txt
// (the interleaving the finding's write-up shows). A changed model shows up as
// a changed diagram, in review; rewrite with -rewrite-explained.
func checkExplanation(t *testing.T, bug, report string) {
	t.Helper()
	code, out, errOut := runCLI(t, "explain", report, "--width", "100")
	if code != exitOK {
		t.Fatalf("explain: exit %d:\n%s%s", code, out, errOut)
	}
	golden := filepath.Join("..", "..", "testdata", "findings", bug+".explain.txt")
	if *rewriteExplained {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (write it with -rewrite-explained)", err)
	}
	if out != string(want) {
		t.Errorf("proxysim explain of %s's reproducer differs from %s (rewrite with -rewrite-explained if the model changed on purpose):\n%s", bug, golden, diffLines(string(want), out))
	}
}

// TestFindingDocsShowExplanation: the write-up of each finding with a
// reproducer shows the explanation proxysim generates for it, verbatim
// (the golden TestFindingsReproduce holds fixed), so a regenerated
// golden that was not copied into the write-up fails here.
func TestFindingDocsShowExplanation(t *testing.T) {
	for _, f := range findings {
		doc := bugs.FindingDoc(f.bug)
		if doc == "" {
			t.Errorf("%s: no write-up (internal/bugs findingDocs)", f.bug)
			continue
		}
		text, err := os.ReadFile(filepath.Join("..", "..", doc))
		if err != nil {
			t.Errorf("%s: %v", f.bug, err)
			continue
		}
		golden, err := os.ReadFile(filepath.Join("..", "..", "testdata", "findings", f.bug+".explain.txt"))
		if err != nil {
			t.Errorf("%s: %v", f.bug, err)
			continue
		}
		if !strings.Contains(string(text), "```\n"+string(golden)+"```\n") {
			t.Errorf("%s does not show testdata/findings/%s.explain.txt verbatim in a code block", doc, f.bug)
		}
	}
}

// diffLines shows the first lines where want and got differ.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 12; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %q\n  got  %q\n", i+1, wl, gl)
			shown++
		}
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestExplainFinding explains finding F1's reproducer through the CLI:
// a CPU-column diagram naming the kernel functions of the race and its
// locks, within 30 rows, in at most 100 columns.
func TestExplainFinding(t *testing.T) {
	f := findings[0]
	report := filepath.Join(t.TempDir(), "r.txt")
	args := []string{"stress", "--deterministic", "--strategy", "random", "--sim-time", "100ms",
		"--stat-interval", "0", "--duration", "0", "--seed", f.seed, "--workload", filepath.Join("..", "..", "testdata", "findings", f.bug+".json"),
		"--bug", f.bug, "--report", report}
	if code, out, errOut := runCLI(t, append(args, f.extra...)...); code != exitViolation {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	rep, _ := os.ReadFile(report)
	if !strings.Contains(string(rep), "explanation of this run (proxysim explain):") {
		t.Errorf("the report does not open with its explanation:\n%s", tail(string(rep), 3000))
	}
	code, out, errOut := runCLI(t, "explain", report, "--width", "100")
	if code != exitOK {
		t.Fatalf("explain: exit %d:\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"find_proxy_task", "proxy_enqueue_on_owner", "->blocked_lock", "->sleeping_owner = ", "The kernel promises:"} {
		if !strings.Contains(out, want) {
			t.Errorf("explanation lacks %q:\n%s", want, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if len([]rune(l)) > 100 {
			t.Errorf("line over 100 columns: %q", l)
		}
	}
}

// TestFailureDirectory: a failing stress run files everything it
// produced into one directory per signature, and the same failure met
// again is counted there, not written again.
func TestFailureDirectory(t *testing.T) {
	f := findings[0]
	root := filepath.Join(t.TempDir(), "failures")
	args := []string{"stress", "--deterministic", "--strategy", "random", "--sim-time", "100ms",
		"--stat-interval", "0", "--duration", "0", "--seed", f.seed, "--workload", filepath.Join("..", "..", "testdata", "findings", f.bug+".json"),
		"--bug", f.bug, "--failures", root, "--shrink-budget", "3s"}
	args = append(args, f.extra...)
	code, _, errOut := runCLI(t, append(args, "--report", filepath.Join(t.TempDir(), "a.report"))...)
	if code != exitViolation {
		t.Fatalf("exit %d:\n%s", code, tail(errOut, 2000))
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	last := lines[len(lines)-1]
	dir, ok := strings.CutPrefix(last, "proxysim: everything about this failure: ")
	if !ok {
		t.Fatalf("the last line does not give the failure's directory: %q", last)
	}
	for _, name := range []string{"failure.json", "report.txt", "scenario.json", "reproduce.txt", "explain.txt", "explain.md", "slice.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	ex, _ := os.ReadFile(filepath.Join(dir, "explain.txt"))
	if !strings.Contains(string(ex), "find_proxy_task") {
		t.Errorf("explain.txt:\n%s", ex)
	}
	// the catalogue's signatures (internal/bugs/signatures_gen.go, from
	// the hunt and the findings' reproducers) name the failure
	if want := "proxysim: this is `" + f.bug + "`, finding F1: see docs/findings/F1-early-activation.md"; !strings.Contains(errOut, want) {
		t.Errorf("the failure is not recognised: want %q in\n%s", want, tail(errOut, 2000))
	}
	var first failureMeta
	if b, err := os.ReadFile(filepath.Join(dir, "failure.json")); err != nil || json.Unmarshal(b, &first) != nil || first.Catalogue != f.bug {
		t.Errorf("failure.json names catalogue entry %q, want %q (%v)", first.Catalogue, f.bug, err)
	}
	code, _, errOut = runCLI(t, append(args, "--report", filepath.Join(t.TempDir(), "b.report"))...)
	if code != exitViolation || !strings.Contains(errOut, "the same failure as "+dir) {
		t.Fatalf("second run: exit %d, want it counted in %s:\n%s", code, dir, tail(errOut, 2000))
	}
	var meta failureMeta
	b, err := os.ReadFile(filepath.Join(dir, "failure.json"))
	if err != nil || json.Unmarshal(b, &meta) != nil || meta.Count != 2 || len(meta.Seeds) != 2 {
		t.Fatalf("failure.json after two runs: %v %s", err, b)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Errorf("%d directories for one failure", len(entries))
	}
}

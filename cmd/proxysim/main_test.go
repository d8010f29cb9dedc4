package main

import (
	"bytes"
	"encoding/json"
	"github.com/proxysim/proxysim/internal/workload"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	if len(args) > 0 && (args[0] == "stress" || args[0] == "explore") && !slices.Contains(args, "--failures") {
		// A failing run files its failure into a directory (with a
		// shrink of up to a minute): in a test's own directory, and with
		// no shrink unless the test asks.
		args = append(args, "--failures", filepath.Join(t.TempDir(), "failures"))
		if !slices.Contains(args, "--shrink-budget") {
			args = append(args, "--shrink-budget", "0")
		}
	}
	var out, errb bytes.Buffer
	code := realMain(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunJSONSummary(t *testing.T) {
	dir := t.TempDir()
	code, out, _ := runCLI(t, "run", "--cpus", "4", "--sim-time", "50ms", "--seed", "3", "--json", "--report", filepath.Join(dir, "r.txt"))
	if code != exitOK {
		t.Fatalf("exit %d, want 0", code)
	}
	var obj map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&obj); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	if dec.More() {
		t.Fatal("stdout holds more than one JSON value")
	}
	for _, k := range []string{"seed", "cpus", "tasks", "workload", "proxy_exec", "sim_time_ns", "wall_time_ns", "context_switches",
		"wakeups", "migrations", "switches_per_wall_second", "violations", "counters", "groups"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("summary lacks %q", k)
		}
	}
	if obj["seed"].(float64) != 3 || obj["cpus"].(float64) != 4 || obj["proxy_exec"] != true {
		t.Errorf("seed/cpus/proxy_exec = %v/%v/%v", obj["seed"], obj["cpus"], obj["proxy_exec"])
	}
	groups := obj["groups"].(map[string]any)
	for name, g := range groups {
		for _, k := range []string{"tasks", "runtime_ns", "max_mutex_wait_ns", "p99_mutex_wait_ns", "max_wakeup_latency_ns", "p99_wakeup_latency_ns"} {
			if _, ok := g.(map[string]any)[k]; !ok {
				t.Errorf("group %s lacks %q", name, k)
			}
		}
	}
	if v := obj["violations"].([]any); len(v) != 0 {
		t.Errorf("violations: %v", v)
	}
}

func TestBadInputIsOneLineExit2(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{\n  \"groups\": [\n    {\"name\": \"a\", \"program\": [{\"lok\": \"m\"}]}\n  ]\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := [][]string{
		{"run", "--cpus", "0"},
		{"run", "--cpus", "2000"},
		{"run", "--bogus"},
		{"run", "--sim-time", "-1s"},
		{"run", "--proxy-exec", "maybe"},
		{"run", "--bug", "no-such-bug"},
		{"run", "--workload", "nope"},
		{"run", "--workload", bad},
		{"stress", "--jitter", "2"},
		{"run", "--sched-features", "SHARED_RUNQS"},
		{"run", "--sched-features", "SHARED_RUNQ", "--shared-runq-hooks", "v5"},
		{"run", "--sched-features", "SHARED_RUNQ", "--shared-runq-bailouts", "overload,nope"},
		{"run", "--sched-features", "SHARED_RUNQ", "--shared-runq-shard-size", "0"},
		{"run", "--shared-runq-hooks", "v4"},
		{"run", "--newidle-cost", "-1us"},
		{"run", "--newidle-cpu-cost", "101us"},
		{"stress", "--newidle-task-cost", "-1ns"},
		{"ab", "--newidle-cpu-cost", "1ms"},
		{"stress", "--srq-toggle-interval", "-1ms"},
		{"stress", "--shard", "3", "--shards", "2"},
		{"bugs", "extra"},
		{"nosuchcommand"},
	}
	for _, args := range cases {
		code, _, errs := runCLI(t, args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d (stderr %q)", args, code, exitUsage, errs)
		}
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		last := lines[len(lines)-1]
		if strings.Contains(errs, "goroutine ") || strings.Contains(errs, "panic") {
			t.Errorf("%v: stack trace on bad input:\n%s", args, errs)
		}
		if !strings.HasPrefix(last, "proxysim") {
			t.Errorf("%v: error line %q does not start with proxysim", args, last)
		}
	}
	_, _, errs := runCLI(t, "run", "--workload", bad)
	if !strings.Contains(errs, "bad.json: line 3") || !strings.Contains(errs, "lok") {
		t.Errorf("scenario error does not name file, line and key: %q", errs)
	}
}

func TestBugsJSON(t *testing.T) {
	code, out, _ := runCLI(t, "bugs", "--json")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) < 12 {
		t.Fatalf("%d bugs, want at least 12", len(list))
	}
	numbers := map[float64]bool{}
	for _, b := range list {
		for _, k := range []string{"name", "fixed_in", "description"} {
			if s, _ := b[k].(string); s == "" {
				t.Errorf("bug %v has no %s", b["name"], k)
			}
		}
		numbers[b["number"].(float64)] = true
	}
	for _, n := range []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 14, 15, 16, 18, 25} {
		if !numbers[n] {
			t.Errorf("catalogue lacks bug number %v of the protocol notes", n)
		}
	}
}

func TestVersionAndHelp(t *testing.T) {
	if code, out, _ := runCLI(t, "version"); code != exitOK || !strings.HasPrefix(out, "proxysim ") {
		t.Errorf("version: exit %d, %q", code, out)
	}
	if code, out, _ := runCLI(t, "run", "--help"); code != exitOK || !strings.Contains(out, "--cpus") || !strings.Contains(out, "Exit codes") {
		t.Errorf("run --help: exit %d, %q", code, out)
	}
	if code, out, _ := runCLI(t, "--help"); code != exitOK || !strings.Contains(out, "stress") {
		t.Errorf("--help: exit %d", code)
	} else {
		_ = out
	}
}

// A violation exits 1 and leaves a report naming the reproducer.
func TestViolationExits1WithReport(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "rep.txt")
	code, _, _ := runCLI(t, "run", "--cpus", "8", "--workload", "stress", "--sim-time", "2s", "--seed", "1",
		"--bug", "runnable-without-return", "--report", rep, "--duration", "60s")
	if code != exitViolation {
		t.Fatalf("exit %d, want %d", code, exitViolation)
	}
	b, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"reproduce: proxysim run", "--seed 1", "violations (", "last ", "events"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// A deterministic failure replays from its report to the same violation at
// the same event.
func TestReplayDeterministicReport(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "det.report")
	code, _, _ := runCLI(t, "stress", "--cpus", "8", "--deterministic", "--strategy", "random", "--seed", "3",
		"--bug", "runnable-without-return", "--report", rep, "--stat-interval", "0", "--duration", "60s")
	if code != exitViolation {
		t.Fatalf("deterministic stress with a bug: exit %d, want 1", code)
	}
	// The report ends with the reporting CPU's own ring, every line that
	// CPU's.
	b, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`\] invariant \d+ \([a-z-]+\) on cpu (\d+)`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("no violation line in the report:\n%s", tail(string(b), 1500))
	}
	head := "events of cpu" + m[1] + " (its own ring):\n"
	i := strings.Index(string(b), head)
	if i < 0 {
		t.Fatalf("no %q section in the report", strings.TrimSpace(head))
	}
	ring := strings.Split(strings.TrimSpace(string(b)[i+len(head):]), "\n")
	for _, l := range ring {
		if f := strings.Fields(l); len(f) < 3 || f[2] != "cpu"+m[1] {
			t.Fatalf("cpu%s's ring section holds %q", m[1], l)
		}
	}
	if len(ring) < 10 {
		t.Errorf("cpu%s's ring section has %d events", m[1], len(ring))
	}
	code, out, errs := runCLI(t, "replay", rep)
	if code != exitOK || !strings.Contains(out, "reproduced: same violation at the same event") {
		t.Fatalf("replay: exit %d\n%s%s", code, out, errs)
	}
	if code, _, _ := runCLI(t, "replay", filepath.Join(dir, "missing")); code != exitUsage {
		t.Errorf("replay of a missing file: exit %d, want 2", code)
	}
}

func TestDeterministicJSONHasTraceHash(t *testing.T) {
	var hashes []string
	for i := 0; i < 2; i++ {
		code, out, _ := runCLI(t, "run", "--cpus", "4", "--sim-time", "20ms", "--seed", "8", "--deterministic", "--strategy", "pct:3", "--json")
		if code != exitOK {
			t.Fatalf("exit %d", code)
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(out), &obj); err != nil {
			t.Fatal(err)
		}
		h, _ := obj["trace_hash"].(string)
		if len(h) != 16 {
			t.Fatalf("trace_hash %q", h)
		}
		hashes = append(hashes, h)
	}
	if hashes[0] != hashes[1] {
		t.Fatalf("same seed, different hashes: %v", hashes)
	}
}

// explore finds a catalogued bug in deterministic runs, stops, and its
// report replays to the same violation.
func TestExploreFindsAndReplays(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "ex.report")
	code, out, _ := runCLI(t, "explore", "--runs", "20", "--cpus", "4", "--workers", "1", "--seed", "10",
		"--bug", "runnable-without-return", "--report", rep)
	if code != exitViolation || !strings.Contains(out, "violation at seed") {
		t.Fatalf("explore: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "replay", rep)
	if code != exitOK {
		t.Fatalf("replay of the explore report: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "explore", "--runs", "4", "--cpus", "4", "--workers", "1", "--seed", "10")
	if code != exitOK || !strings.Contains(out, "4 distinct interleavings") {
		t.Fatalf("explore without a bug: exit %d\n%s", code, out)
	}
}

// shrink turns a deterministic failure into a small scenario file that
// still fails with the same invariant.
func TestShrinkCatalogueBug(t *testing.T) {
	if testing.Short() {
		t.Skip("dozens of candidate runs")
	}
	dir := t.TempDir()
	rep := filepath.Join(dir, "s.report")
	// Seed 4 since newidle's cut-offs: seed 3's failure then shrank to 2
	// CPUs but kept 17 of its 22 tasks (seeds 4-6 shrink to 2 CPUs and
	// 3-4 tasks; 1 and 2 keep 7-8 CPUs).
	code, _, _ := runCLI(t, "stress", "--cpus", "8", "--deterministic", "--strategy", "random", "--seed", "4", "--sim-time", "200ms",
		"--bug", "runnable-without-return", "--report", rep, "--stat-interval", "0", "--duration", "60s", "--retry-deterministic", "0")
	if code != exitViolation {
		t.Fatalf("set-up run: exit %d, want 1", code)
	}
	minFile := filepath.Join(dir, "min.json")
	code, out, errs := runCLI(t, "shrink", rep, "--out", minFile, "--seeds", "1") // one seed: cheap enough under -race
	if code != exitOK {
		t.Fatalf("shrink: exit %d\n%s%s", code, out, errs)
	}
	sc, err := workload.ParseFile(minFile)
	if err != nil {
		t.Fatalf("shrunk scenario does not parse: %v", err)
	}
	if sc.CPUs > 4 || sc.NumTasks() > 8 {
		t.Errorf("shrunk to %d CPUs and %d tasks, want at most 4 and 8\n%s", sc.CPUs, sc.NumTasks(), out)
	}
	if !strings.Contains(out, "\nchecked: it fails with affinity at event #") {
		t.Errorf("shrink did not check the command it prints:\n%s", out)
	}
	// the command shrink prints (the shrunk scenario may fail on a seed
	// after the recorded one)
	i := strings.Index(out, "run it: ")
	if i < 0 {
		t.Fatalf("no 'run it:' line:\n%s", out)
	}
	words, err := shellWords(strings.TrimSpace(strings.SplitN(out[i+len("run it: "):], "\n", 2)[0]))
	if err != nil || len(words) < 2 {
		t.Fatalf("cannot split the 'run it:' command: %v", err)
	}
	code, _, _ = runCLI(t, append(words[1:], "--report", filepath.Join(dir, "again.report"))...)
	if code != exitViolation {
		t.Fatalf("the shrunk scenario does not fail again (exit %d)", code)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "again.report"))
	if !strings.Contains(string(b), "(affinity)") {
		t.Errorf("the shrunk scenario fails with another invariant:\n%s", b[:600])
	}
}

// --keep-going records violations and runs on to --sim-time, then exits
// 1 with the report; without it the same run stops at its first one.
func TestRunKeepGoing(t *testing.T) {
	args := []string{"run", "--workload", "../../docs/coresched/vm.json", "--cpus", "8", "--topology", "1s-1llc-4c-2t",
		"--core-sched=v3", "--sched-features", "NO_CORESCHED_STALL_FIX", "--sim-time", "200ms", "--seed", "1",
		"--audit-every", "0", "--json", "--quiet", "--deterministic"}
	simTime := func(out string) (int64, int) {
		var s struct {
			SimTime    int64             `json:"sim_time_ns"`
			Violations []json.RawMessage `json:"violations"`
		}
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("summary: %v\n%s", err, out)
		}
		return s.SimTime, len(s.Violations)
	}
	code, out, _ := runCLI(t, append(args, "--report", filepath.Join(t.TempDir(), "a.txt"))...)
	stopped, n := simTime(out)
	if code != exitViolation || n != 1 || stopped >= 200_000_000 {
		t.Fatalf("without --keep-going: exit %d, %d violations, stopped at %d ns; want exit 1 at the first", code, n, stopped)
	}
	code, out, _ = runCLI(t, append(args, "--keep-going", "--report", filepath.Join(t.TempDir(), "b.txt"))...)
	ran, n := simTime(out)
	if code != exitViolation || n < 2 || ran < 200_000_000 {
		t.Fatalf("--keep-going: exit %d, %d violations, ran to %d ns; want exit 1 after the whole 200 ms", code, n, ran)
	}
}

// A concurrent stress failure is retried on its seed in deterministic
// mode, after its own report is written, and the retry's report replays
// as it is: same violation at the same event, whatever the host's speed
// (its command is bounded in virtual time, not wall time).
func TestConcurrentFailureRetriedDeterministically(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "c.report")
	code, _, errs := runCLI(t, "stress", "--cpus", "8", "--seed", "4", "--bug", "runnable-without-return", "--report", rep,
		"--stat-interval", "0", "--duration", "60s", "--retry-deterministic", "5s")
	if code != exitViolation {
		t.Fatalf("concurrent run: exit %d, want 1\n%s", code, tail(errs, 2000))
	}
	if _, err := os.Stat(rep); err != nil {
		t.Fatalf("no concurrent report: %v", err)
	}
	det := filepath.Join(dir, "c.det.report")
	if i, j := strings.Index(errs, "report written to "+rep), strings.Index(errs, "reproduced deterministically"); i < 0 || j < i {
		t.Fatalf("want the concurrent report written, then the deterministic reproduction:\n%s", tail(errs, 2000))
	}
	b, err := os.ReadFile(det)
	if err != nil {
		t.Fatalf("no deterministic report: %v\n%s", err, tail(errs, 2000))
	}
	if !strings.Contains(string(b), "--deterministic --strategy ") || !strings.Contains(string(b), "--duration 0 --sim-time ") {
		t.Errorf("deterministic report's command is not a bounded deterministic run:\n%s", tail(string(b[:min(len(b), 600)]), 600))
	}
	code, out, errs := runCLI(t, "replay", det)
	if code != exitOK || !strings.Contains(out, "reproduced: same violation at the same event") {
		t.Fatalf("replay of the deterministic report: exit %d\n%s%s", code, out, errs)
	}
}

package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/sim"
)

// Every bad flag value and every unwritable output path is one line on
// stderr naming the problem, exit 2, and nothing run.
func TestFlagAndPathErrors(t *testing.T) {
	dir := t.TempDir()
	three := filepath.Join(dir, "three.json")
	if err := os.WriteFile(three, []byte(`{"cpus": 3, "mutexes": ["a"], "groups": [{"name": "g", "program": [{"lock": "a"}, {"unlock": "a"}, {"sleep": "1ms"}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// a report good enough for shrink to reach its --out check
	rep := filepath.Join(dir, "det.report")
	if err := os.WriteFile(rep, []byte("proxysim failure report\nreproduce: proxysim run --deterministic --strategy random --cpus 4 --sim-time 10ms --seed 1\nviolations (1):\n  [event #5, t=1.000ms] invariant 5 (queued-here) on cpu 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "no", "such", "dir")
	scenario := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	wideMask := scenario("wide.json", "{\"groups\": [\n  {\"name\": \"g\",\n   \"cpus\": \"0-15\",\n   \"program\": [{\"sleep\": \"1ms\"}]}]}\n")
	freeUnlock := scenario("free.json", "{\"mutexes\": [\"a\"], \"groups\": [{\"name\": \"g\", \"program\": [\n  {\"unlock\": \"a\"},\n  {\"sleep\": \"1ms\"}]}]}\n")
	abba := scenario("abba.json", `{"mutexes": ["a", "b"], "groups": [
  {"name": "g", "count": 2, "program": [{"lock": "a"}, {"lock": "b"}, {"compute": "1ms"}, {"unlock": "b"}, {"unlock": "a"}]},
  {"name": "h", "count": 2, "program": [{"lock": "b"}, {"lock": "a"}, {"compute": "1ms"}, {"unlock": "a"}, {"unlock": "b"}]}]}`)
	offline7 := scenario("off7.json", `{"groups": [{"name": "h", "program": [{"offline": 7}, {"sleep": "1ms"}]}]}`)
	cases := []struct {
		args []string
		want string // in the error line
	}{
		{[]string{"stress", "--jitter", "NaN"}, "--jitter NaN out of range"},
		{[]string{"run", "--waking-bound", "-1s"}, "--waking-bound must not be negative"},
		{[]string{"run", "--hang-timeout", "0"}, "--hang-timeout must be positive"},
		{[]string{"run", "--hang-timeout", "-1s"}, "--hang-timeout must be positive"},
		{[]string{"stress", "--retry-deterministic", "-1s"}, "--retry-deterministic must not be negative"},
		{[]string{"stress", "--hotplug-interval", "-1ms"}, "--hotplug-interval must not be negative"},
		{[]string{"stress", "--migrate-disable", "2"}, "--migrate-disable 2 out of range 0-1"},
		{[]string{"stress", "--hotplug-max-offline", "-1"}, "--hotplug-max-offline -1: want 0"},
		{[]string{"stress", "--cpus", "4", "--core-sched", "--hotplug-interval", "1ms"}, "CPU hotplug with core scheduling is not modelled"},
		{[]string{"run", "--cpus", "4", "--sim-time", "10ms", "--workload", offline7}, offline7 + ": line 1: groups[0].program[0]: offline: cpu 7 out of range"},
		{[]string{"run", "--sched-features", "DELAY_DEQUEUE,NO_NOSUCH"}, `unknown sched feature "NO_NOSUCH"`},
		{[]string{"stress", "--sched-features", "delay_dequeue"}, `unknown sched feature "delay_dequeue"`},
		{[]string{"run", "--strategy", "foo"}, "--strategy"},
		{[]string{"run", "--strategy", "pct:0"}, "--strategy"},
		{[]string{"run", "--strategy", "random"}, "add --deterministic"},
		{[]string{"bugs", "--only", "nosuch"}, "--only"},
		{[]string{"bugs", "--seeds", "3"}, "--seeds applies only with --hunt"},
		{[]string{"bugs", "--race"}, "--race applies only with --hunt"},
		{[]string{"bugs", "--hunt", "--jitter", "NaN"}, "--jitter NaN"},
		{[]string{"bugs", "--hunt", "--seed", "0"}, "--seed 0 out of range"},
		{[]string{"bugs", "--seed", "5"}, "--seed applies only with --hunt"},
		{[]string{"explore", "--workers", "0"}, "--workers 0 out of range"},
		{[]string{"explore", "--workers", "100000"}, "--workers 100000 out of range"},
		{[]string{"explore", "--progress", "0"}, "--progress must be positive"},
		{[]string{"explore", "--progress", "-1s"}, "--progress must be positive"},
		{[]string{"run", "--cpus", "8", "--workload", three}, "--cpus 8 contradicts " + three},
		{[]string{"run", "--tasks", "8", "--workload", three}, "--tasks applies to built-in workloads"},
		{[]string{"run", "--trace", filepath.Join(missing, "t.json")}, filepath.Join(missing, "t.json")},
		{[]string{"run", "--trace", dir}, dir + " is a directory"},
		{[]string{"run", "--report", filepath.Join(missing, "r.txt")}, filepath.Join(missing, "r.txt")},
		{[]string{"stress", "--report", filepath.Join(missing, "r.txt")}, filepath.Join(missing, "r.txt")},
		{[]string{"explore", "--report", filepath.Join(missing, "r.txt")}, filepath.Join(missing, "r.txt")},
		{[]string{"run", "--cpuprofile", filepath.Join(missing, "cpu.pprof")}, "--cpuprofile: cannot write " + filepath.Join(missing, "cpu.pprof")},
		{[]string{"stress", "--cpuprofile", dir}, "--cpuprofile: " + dir + " is a directory"},
		{[]string{"explore", "--cpuprofile", filepath.Join(missing, "cpu.pprof")}, filepath.Join(missing, "cpu.pprof")},
		{[]string{"shrink", rep, "--out", filepath.Join(missing, "x.json")}, filepath.Join(missing, "x.json")},
		{[]string{"shrink", rep, "--seeds", "0"}, "--seeds 0 out of range"},
		{[]string{"run", "--cpus", "4", "--workload", wideMask}, wideMask + ": line 3: groups[0].cpus"},
		{[]string{"run", "--cpus", "4", "--sim-time", "50ms", "--workload", freeUnlock}, freeUnlock + ": line 2: groups[0].program[0]: unlocks a"},
		{[]string{"stress", "--cpus", "4", "--sim-time", "50ms", "--workload", abba}, "lock order cycle a -> b -> a"},
	}
	for _, c := range cases {
		start := time.Now()
		code, _, errs := runCLI(t, c.args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d (stderr %q)", c.args, code, exitUsage, errs)
			continue
		}
		if strings.Contains(errs, "goroutine ") || strings.Contains(errs, "panic") {
			t.Errorf("%v: stack trace on bad input:\n%s", c.args, errs)
		}
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "proxysim") || !strings.Contains(lines[0], c.want) {
			t.Errorf("%v: stderr %q, want one proxysim line containing %q", c.args, errs, c.want)
		}
		if strings.Contains(errs, ".tmp") {
			t.Errorf("%v: the error names a temporary file: %q", c.args, errs)
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("%v: took %v: the input was checked after running", c.args, el)
		}
	}
}

// Help and version: --help exits 0 everywhere, stress's --sim-time default
// is not a number of hours nobody meant.
func TestHelpEverywhere(t *testing.T) {
	for _, c := range commands {
		code, out, errs := runCLI(t, c.name, "--help")
		if code != exitOK || !strings.Contains(out, "Usage") {
			t.Errorf("%s --help: exit %d\n%s%s", c.name, code, out, errs)
		}
	}
	_, out, _ := runCLI(t, "stress", "--help")
	if strings.Contains(out, "1281023h") || !strings.Contains(out, "0: until --duration") {
		t.Errorf("stress --help shows the sim-time default as a number:\n%s", out)
	}
	for _, cmd := range []string{"run", "stress", "explore"} {
		_, out, _ := runCLI(t, cmd, "--help")
		if !strings.Contains(out, "130 interrupted") {
			t.Errorf("%s --help: exit codes lack the interrupt's", cmd)
		}
	}
}

// A report write that fails names the user's path, not the temporary file.
func TestWriteFileAtomicErrorNamesPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "r.txt")
	err := sim.WriteFileAtomic(path, func(w io.Writer) error { return nil })
	if err == nil || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), ".tmp") {
		t.Fatalf("error %v: want it to name %s and no temporary file", err, path)
	}
}

// --cpuprofile writes a pprof profile of the run under the name given and
// leaves no temporary file beside it.
func TestCPUProfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cpu.pprof")
	code, _, errs := runCLI(t, "run", "--cpus", "4", "--sim-time", "20ms", "--seed", "1", "--quiet", "--cpuprofile", path)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// a pprof profile is gzipped protobuf
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("%s is not a gzipped profile: % x", path, b[:min(len(b), 8)])
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("%d files in %s, want only the profile", len(ents), dir)
	}
}

// bugs --hunt --race hunts with a race-detector binary: built on the fly
// from a plain binary, in-process from a race build (as under go test
// -race).
func TestHuntRace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the race binary")
	}
	code, out, errs := runCLI(t, "bugs", "--hunt", "--race", "--only", "runnable-without-return", "--seeds", "1", "--cpus", "8", "--control", "0", "--budget", "30s")
	if code != exitOK || !strings.Contains(out, "race detector") || !strings.Contains(out, "runnable-without-return  1/1") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}

// --seed starts the hunt's seeds elsewhere than 1: each run's line names
// its seed, and the table says where the seeds began.
func TestHuntFirstSeed(t *testing.T) {
	code, out, errs := runCLI(t, "bugs", "--hunt", "--only", "runnable-without-return", "--seeds", "2", "--seed", "5", "--cpus", "8", "--control", "100ms", "--budget", "30s")
	if code != exitOK || !strings.Contains(out, "2 seeds from 5") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"seed 5: caught=true", "seed 6: caught=true", "control (no bug)         seed 5", "control (no bug)         seed 6"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "seed 1:") || strings.Contains(errs, "seed 7") {
		t.Errorf("the hunt ran seeds outside 5-6:\n%s", errs)
	}
}

// A row the hunt ran on a smaller machine than --cpus (HuntSetup's, for
// the forced-idle entries 4 CPUs) says so in its run lines and the table.
func TestHuntNamesASmallerMachine(t *testing.T) {
	code, out, errs := runCLI(t, "bugs", "--hunt", "--only", "core-fi-no-tick", "--seeds", "1", "--seed", "5", "--cpus", "8", "--control", "0", "--budget", "30s")
	if code != exitOK || !strings.Contains(out, "(at 4 CPUs)") || !strings.Contains(errs, "seed 5: caught=true") || !strings.Contains(errs, "(at 4 CPUs)") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, "bugs", "--hunt", "--only", "runnable-without-return", "--seeds", "1", "--seed", "5", "--cpus", "8", "--control", "0", "--budget", "30s")
	if code != exitOK || strings.Contains(out+errs, "(at ") {
		t.Fatalf("a hunt at the machine asked for names another:\nexit %d\n%s%s", code, out, errs)
	}
}

func TestWithoutRace(t *testing.T) {
	got := strings.Join(withoutRace([]string{"--hunt", "--race", "-race", "--race=true", "--only", "race", "--seeds", "1"}), " ")
	if want := "--hunt --only race --seeds 1"; got != want {
		t.Errorf("withoutRace: %q, want %q", got, want)
	}
}

// The deterministic replay suggested after a concurrent stress failure
// keeps every flag of the run (features, injectors, bugs), drops the
// outputs and the mode, and sets the seed and the deterministic ones.
func TestReplayCommandKeepsTheRunsFlags(t *testing.T) {
	mf := &machineFlags{}
	mf.o.Seed = 3
	args := []string{"--cpus", "32", "--sched-features", "SHARED_RUNQ", "--srq-toggle-interval", "1ms", "--report", "x.report",
		"--seed", "3", "--duration=20s", "--deterministic", "--bug", "srq-drain-irqs-on", "--trace=t.json", "--strategy", "random"}
	got := boundedReplayCommand(args, mf, "pct:3", 20*time.Millisecond)
	want := "proxysim stress --cpus 32 --sched-features SHARED_RUNQ --srq-toggle-interval 1ms --bug srq-drain-irqs-on --seed 3 --deterministic --strategy pct:3 --duration 0 --sim-time 20ms"
	if got != want {
		t.Errorf("replay command\n got %s\nwant %s", got, want)
	}
}

// --sched-features takes the kernel's names, NO_ clears, later writes win,
// and a feature switched off changes the run (DELAY_DEQUEUE: no delayed
// dequeues).
func TestSchedFeatures(t *testing.T) {
	var o sim.Options
	f := schedFeatures{&o}
	if err := f.Set("NO_DELAY_DEQUEUE,NO_RUN_TO_PARITY,RUN_TO_PARITY"); err != nil {
		t.Fatal(err)
	}
	got := f.String()
	for _, w := range []string{"NO_DELAY_DEQUEUE", " RUN_TO_PARITY", "PLACE_LAG", "CORESCHED_STALL_FIX"} {
		if !strings.Contains(" "+got, w) {
			t.Errorf("features %q lack %q", got, w)
		}
	}
	if strings.Contains(got, "NO_RUN_TO_PARITY") {
		t.Errorf("features %q: the later RUN_TO_PARITY did not win", got)
	}
	count := func(args ...string) string {
		code, out, errs := runCLI(t, append([]string{"run", "--cpus", "8", "--sim-time", "50ms", "--seed", "3", "--json"}, args...)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		i := strings.Index(out, `"delayed_dequeues":`)
		if i < 0 {
			t.Fatalf("%v: no delayed_dequeues counter in %s", args, tail(out, 500))
		}
		return strings.SplitN(out[i+len(`"delayed_dequeues":`):], ",", 2)[0]
	}
	if n := count(); n == "0" {
		t.Errorf("default run: delayed_dequeues 0, want some (DELAY_DEQUEUE is on by default)")
	}
	if n := count("--sched-features", "NO_DELAY_DEQUEUE"); n != "0" {
		t.Errorf("NO_DELAY_DEQUEUE run: delayed_dequeues %s, want 0", n)
	}
}

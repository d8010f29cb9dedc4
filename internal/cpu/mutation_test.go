package cpu

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/proxysim/proxysim/internal/workload"
)

// newWorkloadMachine builds a machine running a built-in workload.
func newWorkloadMachine(t testing.TB, cfg Config, name string, ntasks int) *Machine {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := workload.Builtin(name, cfg.CPUs, ntasks)
	if err != nil {
		t.Fatal(err)
	}
	addScenarioMutexes(m, sc)
	plans, err := sc.Plan(cfg.CPUs, cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range plans {
		c := p.Mask.Next((i * 7919) % cfg.CPUs)
		if c < 0 {
			c = p.Mask.Next(0)
		}
		if _, err := m.AddTask(TaskSpec{Name: p.Name, Group: p.Group, Policy: p.Policy, Prio: p.Prio, DL: p.DL, Mask: p.Mask, Prog: p.Prog, CPU: c, Seed: cfg.Seed + uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// runMutantChild runs test name of this package in a child process built
// with -tags mutants (and -race if race), where the deliberate mistakes
// exist, and returns its output.
func runMutantChild(t *testing.T, name string, race bool) string {
	t.Helper()
	if os.Getenv("PROXYSIM_MUTANT_CHILD") != "" {
		t.Skip("in the child")
	}
	if testing.Short() {
		t.Skip("builds a child test binary")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go toolchain on PATH: %v", err)
	}
	args := []string{"test", "-tags", "mutants", "-count=1", "-v", "-run", "^" + name + "$", "."}
	if race {
		args = append(args[:1], append([]string{"-race"}, args[1:]...)...)
	}
	cmd := exec.Command(gobin, args...)
	cmd.Env = append(os.Environ(), "PROXYSIM_MUTANT_CHILD=1", "GORACE=halt_on_error=1")
	out, err := cmd.CombinedOutput()
	t.Logf("child %s exit: %v", name, err)
	return string(out)
}

// A select_task_rq that ignores the affinity mask must be reported as an
// affinity violation (the child checks that, and that the same run
// without the mistake is clean).
func TestBrokenSelectTaskRQIsCaught(t *testing.T) {
	out := runMutantChild(t, "TestMutantChildSelectIgnoresMask", false)
	if !strings.Contains(out, "--- PASS: TestMutantChildSelectIgnoresMask") {
		t.Fatalf("the mutant child did not pass:\n%s", tail(out, 3000))
	}
}

// A remote enqueue without the rq lock is reported by the race detector.
// The mutant runs in a child test process built with -race.
func TestUnlockedRemoteEnqueueIsCaughtByRaceDetector(t *testing.T) {
	text := runMutantChild(t, "TestMutantChildUnlockedEnqueue", true)
	if !strings.Contains(text, "WARNING: DATA RACE") {
		t.Fatalf("the race detector did not report the unlocked enqueue:\n%s", tail(text, 3000))
	}
	// The first race reported may be on the enqueue itself or on the
	// wake-up that follows it in the mutant, both without the rq lock.
	if !strings.Contains(text, "MutantEnqueueWithoutLock") && !strings.Contains(text, "mutantUnlockedEnqueue") {
		t.Fatalf("a race was reported, but not in the mutant enqueue:\n%s", tail(text, 3000))
	}
}

// A find_proxy_task that asks for a re-pick without moving anything
// must be reported as a livelock (invariant 18).
func TestFPTRetryLivelockIsCaught(t *testing.T) {
	out := runMutantChild(t, "TestMutantChildFPTRetry", false)
	if !strings.Contains(out, "--- PASS: TestMutantChildFPTRetry") {
		t.Fatalf("the mutant child did not pass:\n%s", tail(out, 3000))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// addScenarioMutexes creates a scenario's plain mutexes, then its ww
// classes and ww_mutexes, in the index order Plan assumes (as sim does).
func addScenarioMutexes(m *Machine, sc *workload.Scenario) {
	for _, n := range sc.Mutexes {
		m.AddMutex(n)
	}
	for _, w := range sc.WW {
		k := m.AddWWClass(w.Name, w.WaitDie)
		for j := 0; j < w.Count; j++ {
			m.AddWWMutex(fmt.Sprintf("%s%d", w.Name, j), k)
		}
	}
}

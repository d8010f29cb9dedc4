package cpu

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/check"
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
	for _, n := range sc.Mutexes {
		m.AddMutex(n)
	}
	plans, err := sc.Plan(cfg.CPUs, cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range plans {
		c := p.Mask.Next((i * 7919) % cfg.CPUs)
		if c < 0 {
			c = p.Mask.Next(0)
		}
		if _, err := m.AddTask(TaskSpec{Name: p.Name, Group: p.Group, Policy: p.Policy, Prio: p.Prio, Mask: p.Mask, Prog: p.Prog, CPU: c, Seed: cfg.Seed + uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func names(vs []check.Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return out
}

// A select_task_rq that ignores the affinity mask must be reported as an
// affinity violation; the same run without the mistake is clean.
func TestBrokenSelectTaskRQIsCaught(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CPUs, cfg.SimTime, cfg.Seed, cfg.AuditEvery = 8, 200_000_000, 3, 5

	clean := newWorkloadMachine(t, cfg, "stress", 24)
	clean.Run()
	if vs := clean.Rep.Violations(); len(vs) > 0 {
		t.Fatalf("control run broke invariants: %v", vs[0])
	}

	setMutationSelectIgnoresMask(true)
	defer setMutationSelectIgnoresMask(false)
	m := newWorkloadMachine(t, cfg, "stress", 24)
	m.Run()
	vs := m.Rep.Violations()
	if len(vs) == 0 {
		t.Fatal("select_task_rq ignoring the mask went unnoticed")
	}
	switch vs[0].Invariant {
	case check.InvAffinity, check.InvRunnableInMask, check.InvWakeCPU:
		t.Logf("caught: %v", vs[0])
	default:
		t.Fatalf("caught as %v, want an affinity invariant: %v", names(vs), vs[0])
	}
}

// A remote enqueue without the rq lock is reported by the race detector.
// The mutant runs in a child test process built with -race.
func TestUnlockedRemoteEnqueueIsCaughtByRaceDetector(t *testing.T) {
	if os.Getenv("PROXYSIM_MUTANT_CHILD") != "" {
		t.Skip("in the child")
	}
	if testing.Short() {
		t.Skip("builds a -race child process")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go toolchain on PATH")
	}
	cmd := exec.Command(gobin, "test", "-race", "-count=1", "-run", "^TestMutantChildUnlockedEnqueue$", ".")
	cmd.Env = append(os.Environ(), "PROXYSIM_MUTANT_CHILD=1", "GORACE=halt_on_error=1")
	out, err := cmd.CombinedOutput()
	text := string(out)
	if !strings.Contains(text, "WARNING: DATA RACE") {
		t.Fatalf("the race detector did not report the unlocked enqueue (err %v):\n%s", err, tail(text, 3000))
	}
	if !strings.Contains(text, "MutantEnqueueWithoutLock") {
		t.Fatalf("a race was reported, but not in the mutant enqueue:\n%s", tail(text, 3000))
	}
	t.Logf("race detector report found (child exit: %v)", err)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestMutantChildUnlockedEnqueue runs only as the child of the test above.
func TestMutantChildUnlockedEnqueue(t *testing.T) {
	if os.Getenv("PROXYSIM_MUTANT_CHILD") == "" {
		t.Skip("only run as the -race child of TestUnlockedRemoteEnqueueIsCaughtByRaceDetector")
	}
	setMutationUnlockedRemoteEnqueue(true)
	cfg := DefaultConfig()
	cfg.CPUs, cfg.SimTime, cfg.Seed = 8, 2_000_000_000, 5
	cfg.WallLimit = 20 * time.Second
	m := newWorkloadMachine(t, cfg, "mixed", 32)
	m.Run()
	t.Log("no race reported: the child ran to its end")
}

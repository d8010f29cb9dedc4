//go:build mutants

package cpu

import (
	"os"
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/check"
)

func childOnly(t *testing.T) {
	if os.Getenv("PROXYSIM_MUTANT_CHILD") == "" {
		t.Skip("only run as a child of mutation_test.go's tests")
	}
}

// TestMutantChildSelectIgnoresMask runs only as the child of
// TestBrokenSelectTaskRQIsCaught.
func TestMutantChildSelectIgnoresMask(t *testing.T) {
	childOnly(t)
	cfg := DefaultConfig()
	cfg.CPUs, cfg.SimTime, cfg.Seed, cfg.AuditEvery = 8, 200_000_000, 3, 5

	clean := newWorkloadMachine(t, cfg, "stress", 24)
	clean.Run()
	if vs := clean.Rep.Violations(); len(vs) > 0 {
		t.Fatalf("control run broke invariants: %v", vs[0])
	}

	mutations.selectIgnoresMask = true
	defer func() { mutations.selectIgnoresMask = false }()
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

// TestMutantChildFPTRetry runs only as the child of
// TestFPTRetryLivelockIsCaught.
func TestMutantChildFPTRetry(t *testing.T) {
	childOnly(t)
	mutations.fptRetryForever = true
	defer func() { mutations.fptRetryForever = false }()
	cfg := DefaultConfig()
	cfg.CPUs, cfg.SimTime, cfg.Seed = 4, 200_000_000, 3
	m := newWorkloadMachine(t, cfg, "mixed", 16)
	m.Run()
	vs := m.Rep.Violations()
	if len(vs) == 0 || vs[0].Invariant != check.InvFPTNoWait {
		t.Fatalf("a find_proxy_task that never makes progress was caught as %v, want invariant 18", names(vs))
	}
	t.Logf("caught: %v", vs[0])
}

// TestMutantChildUnlockedEnqueue runs only as the -race child of
// TestUnlockedRemoteEnqueueIsCaughtByRaceDetector.
func TestMutantChildUnlockedEnqueue(t *testing.T) {
	childOnly(t)
	mutations.unlockedRemoteEnqueue = true
	cfg := DefaultConfig()
	cfg.CPUs, cfg.SimTime, cfg.Seed = 8, 2_000_000_000, 5
	cfg.WallLimit = 20 * time.Second
	// The unlocked enqueue may also break a queue invariant before the
	// race detector has seen two unordered accesses (1 run in 5): the
	// run goes on past such violations, so that the race detector, the
	// detector this test is about, gets its chance.
	cfg.KeepGoing = true
	m := newWorkloadMachine(t, cfg, "mixed", 32)
	m.Run()
	if vs := m.Rep.Violations(); len(vs) > 0 {
		t.Fatalf("no race reported; the run broke invariants instead: %v", names(vs))
	}
	t.Log("no race reported: the child ran to its end")
}

func names(vs []check.Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return out
}

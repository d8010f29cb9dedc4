package cpu

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/bugs"
)

// Finding F4 (docs/findings.md): the kernel's plain read of is_blocked in
// do_activate_blocked_waiter, under the waiter's pi_lock alone, races with
// its writers, which hold only the rq lock. With --bug
// is-blocked-plain-read the race detector reports it; the fixed form
// (READ_ONCE) is what every other -race test and soak runs.
func TestFindingIsBlockedPlainReadIsARace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a -race child: not in -short")
	}
	text := runMutantChild(t, "TestFindingChildIsBlockedPlainRead", true)
	if !strings.Contains(text, "WARNING: DATA RACE") {
		t.Fatalf("the race detector did not report the plain is_blocked read:\n%s", tail(text, 3000))
	}
	if !strings.Contains(text, "doActivateBlockedWaiter") || !strings.Contains(text, "IsBlocked") {
		t.Fatalf("a race was reported, but not the is_blocked read of do_activate_blocked_waiter:\n%s", tail(text, 3000))
	}
}

// TestFindingChildIsBlockedPlainRead runs only as the -race child of
// TestFindingIsBlockedPlainReadIsARace: the stress workload on the
// default 256 CPUs with the kernel's read (proxysim stress --bug
// is-blocked-plain-read, seed 7, reports it after about 20 s of wall time
// under -race on a 2-core machine).
func TestFindingChildIsBlockedPlainRead(t *testing.T) {
	if os.Getenv("PROXYSIM_MUTANT_CHILD") == "" {
		t.Skip("only run as a child of TestFindingIsBlockedPlainReadIsARace")
	}
	cfg := DefaultConfig()
	cfg.CPUs, cfg.SimTime, cfg.Seed = 256, 1<<40, 7
	cfg.ShuffleEvery = 20_000_000 // the stress command's --shuffle-interval
	cfg.WallLimit = 180 * time.Second
	cfg.Bugs = cfg.Bugs.With(bugs.IsBlockedPlainRead)
	// Without optimistic spinning (--optimistic-spin=false): spinners that
	// take the lock instead of sleeping make parked waiters, and so
	// do_activate_blocked_waiter, rarer; seed 7 with spinning ran its 180 s
	// without the race showing.
	cfg.NoOptimisticSpin = true
	m := newWorkloadMachine(t, cfg, "stress", 512)
	m.Run()
	if vs := m.Rep.Violations(); len(vs) > 0 {
		t.Fatalf("no race reported: the run stopped first at a violation: %v", vs[0])
	}
	t.Log("no race reported: the child ran to its end")
}

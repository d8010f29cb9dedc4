//go:build mutants

package cpu

import (
	"strings"
	"testing"

	"github.com/proxysim/proxysim/internal/audit"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/conductor"
	"github.com/proxysim/proxysim/internal/mutex"
)

// liveMutantRun runs the stress workload deterministically on 8 CPUs, once
// clean and once with mutex mutant name switched on, with only the
// liveness checks in live switched on besides the ordinary audit, and
// returns the mutant run's violations.
func liveMutantRun(t *testing.T, name string, proxyOn bool, live audit.LiveConfig, opts ...func(*Config)) []check.Violation {
	t.Helper()
	childOnly(t)
	st, err := conductor.ParseStrategy("random")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.CPUs, cfg.SimTime, cfg.Seed, cfg.AuditEvery, cfg.Strategy = 8, 1_500_000_000, 3, 5, &st
	cfg.Proxy = proxyOn
	// Shorter bounds than the defaults keep the test short; the clean
	// control run shows they are still no false alarm.
	live.HandoffBound = min(live.HandoffBound, 40_000_000)
	live.WaitBound = min(live.WaitBound, 40_000_000)
	cfg.Live = live
	for _, o := range opts {
		o(&cfg)
	}
	clean := newWorkloadMachine(t, cfg, "stress", 24)
	clean.Run()
	if vs := clean.Rep.Violations(); len(vs) > 0 {
		t.Fatalf("control run broke invariants: %v", vs[0])
	}
	if !mutex.SetMutant(name, true) {
		t.Fatalf("no mutant %q", name)
	}
	defer mutex.SetMutant(name, false)
	m := newWorkloadMachine(t, cfg, "stress", 24)
	m.Run()
	vs := m.Rep.Violations()
	if len(vs) == 0 {
		t.Fatalf("mutant %s went unnoticed (%v virtual)", name, m.Now(0))
	}
	t.Logf("caught at t=%d ns, event #%d: %v", vs[0].Time, vs[0].Seq, vs[0])
	return vs
}

func wantFirst(t *testing.T, vs []check.Violation, inv check.Invariant) {
	t.Helper()
	if vs[0].Invariant != inv {
		t.Fatalf("caught as %v first, want %v: %v", names(vs), inv.Name(), vs[0])
	}
}

// A waiter that re-arms blocked_on after dropping wait_lock is handed the
// lock and sleeps on it: with proxy execution it stays queued as a donor
// whose chain ends at itself. Invariant 33 reports the hand-off.
func TestMutantChildLostHandoff(t *testing.T) {
	live := audit.DefaultLiveConfig()
	live.WaitBound, live.LivelockFactor, live.ProgressFloor = 0, 0, 0 // leave it to the hand-off check
	vs := liveMutantRun(t, "late-blocked-on", true, live)
	wantFirst(t, vs, check.InvHandoffLiveness)
	// The report names the event that gave the waiter the lock (the grant
	// index of liveness.go), not "no longer in the flight recorder".
	if !strings.Contains(vs[0].Message, "Hand-off event: event #") {
		t.Errorf("the report does not name the hand-off event: %s", vs[0].Message)
	}
}

// The same mistake without proxy execution: the waiter leaves the
// runqueue owning the lock, and nothing will wake it (invariant 35).
func TestMutantChildLostWakeup(t *testing.T) {
	live := audit.DefaultLiveConfig()
	live.HandoffBound, live.WaitBound, live.LivelockFactor, live.ProgressFloor = 0, 0, 0, 0
	// Seed 3 meets nothing within the run since the causal clocks; of
	// seeds 1-16, 4, 6, 11 and 16 meet the lost wake-up first, 3, 5 and
	// 10 nothing, the others a blocked_on cycle (invariant 32).
	vs := liveMutantRun(t, "late-blocked-on", false, live, func(c *Config) { c.Seed = 4 })
	wantFirst(t, vs, check.InvLostWakeup)
}

// The waiters queued behind the lost hand-off wait on a chain that makes
// no progress (invariant 34).
func TestMutantChildWaitAge(t *testing.T) {
	live := audit.DefaultLiveConfig()
	live.HandoffBound, live.LostAudits, live.LivelockFactor, live.ProgressFloor = 0, 0, 0, 0
	vs := liveMutantRun(t, "late-blocked-on", true, live)
	wantFirst(t, vs, check.InvWaitAge)
}

// The CPUs whose donors' chains end at the sleeping owner pick and idle
// over and over: re-picks per switch jump above the run's baseline
// (invariant 36).
func TestMutantChildLivelock(t *testing.T) {
	live := audit.DefaultLiveConfig()
	live.HandoffBound, live.WaitBound, live.LostAudits, live.ProgressFloor = 0, 0, 0, 0
	// Without optimistic spinning: spinners that take the lock instead of
	// queueing break up the wake-and-re-pick cycles this detector is
	// tested on (with spinning the mutant is caught as a lost hand-off).
	// The cycles depend on the schedule: with the causal clocks seeds 4,
	// 5, 6, 10, 11 and 16 of 1-16 meet the livelock first, 3 nothing
	// within the run, the others a blocked_on cycle (invariant 32). (Seed
	// 3 was the livelock's from 3 Dec, when __schedule began deferring a
	// DL donor's budget charge as the reference does, 5 from 1 Dec.)
	vs := liveMutantRun(t, "late-blocked-on", true, live, func(c *Config) { c.NoOptimisticSpin = true; c.Seed = 4 })
	wantFirst(t, vs, check.InvLivelock)
}

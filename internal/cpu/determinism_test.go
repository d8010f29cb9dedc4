package cpu

import (
	"testing"

	"github.com/proxysim/proxysim/internal/conductor"
)

func detRun(t *testing.T, cpus int, seed uint64, strat string, simTime int64) (uint64, uint64, *Machine) {
	t.Helper()
	st, err := conductor.ParseStrategy(strat)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.CPUs, cfg.Seed, cfg.SimTime, cfg.Strategy = cpus, seed, simTime, &st
	m := newWorkloadMachine(t, cfg, "mixed", 0)
	m.Run()
	if vs := m.Rep.Violations(); len(vs) > 0 {
		t.Fatalf("cpus %d seed %d %s: %v", cpus, seed, strat, vs[0])
	}
	if m.TraceHash() == 0 {
		t.Fatal("no trace hash in deterministic mode")
	}
	return m.TraceHash(), m.Log.Seq(), m
}

// The same seed gives the same run, event for event; another seed does
// not. At 4, 16 and 256 CPUs, for every strategy.
func TestDeterministicReplay(t *testing.T) {
	sizes := []struct {
		cpus int
		sim  int64
	}{{4, 50_000_000}, {16, 20_000_000}, {256, 3_000_000}}
	if testing.Short() || raceEnabled {
		// 256 CPUs one at a time take minutes under -race; the golden
		// trace hashes (internal/sim) check determinism under -race.
		sizes = sizes[:2]
	}
	for _, sz := range sizes {
		for _, strat := range []string{"time", "random", "pct:3"} {
			h1, n1, _ := detRun(t, sz.cpus, 1, strat, sz.sim)
			h2, n2, _ := detRun(t, sz.cpus, 1, strat, sz.sim)
			if h1 != h2 || n1 != n2 {
				t.Errorf("cpus %d %s: seed 1 twice gave hashes %x (%d events) and %x (%d events)", sz.cpus, strat, h1, n1, h2, n2)
			}
			h3, _, _ := detRun(t, sz.cpus, 2, strat, sz.sim)
			if h3 == h1 {
				t.Errorf("cpus %d %s: seeds 1 and 2 gave the same hash %x", sz.cpus, strat, h1)
			}
			t.Logf("cpus %3d %-6s seed 1: %x (%d events)", sz.cpus, strat, h1, n1)
		}
	}
}

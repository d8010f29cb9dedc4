package cpu

import (
	"testing"

	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/trace"
)

// The affinity shuffler (stress --shuffle-interval) fires once per
// interval of a busy CPU's virtual time: about one shuffle per
// interval/tick ticks.
func TestShufflerFiresAtItsInterval(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CPUs, cfg.SimTime, cfg.Seed = 8, 300_000_000, 4
	cfg.ShuffleEvery = 5 * cfg.Tick
	m := newWorkloadMachine(t, cfg, "stress", 32)
	m.Run()
	if vs := m.Rep.Violations(); len(vs) > 0 {
		t.Fatal(vs[0])
	}
	ticks := stats.Sum(m.Stats, stats.Ticks)
	shuffles := stats.Sum(m.Stats, stats.AffinityShuffles)
	// each CPU shuffles at every 5th of its ticks: floor(ticks_i/5) each
	var want float64
	for _, st := range m.Stats {
		want += float64(st.C[stats.Ticks].Load() / 5)
	}
	t.Logf("%d ticks, %d shuffles (expected %.0f)", ticks, shuffles, want)
	if shuffles == 0 || float64(shuffles) != want {
		t.Fatalf("%d shuffles in %d ticks at one per 5 ticks: want %.0f", shuffles, ticks, want)
	}
	var moved uint64
	for _, st := range m.Stats {
		moved += st.MigrateBy[trace.ReasonAffinity].Load()
	}
	if moved == 0 {
		t.Fatal("shuffles never moved a task")
	}
}

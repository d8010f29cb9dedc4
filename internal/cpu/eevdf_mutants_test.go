//go:build mutants

package cpu

import (
	"testing"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/conductor"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/stats"
)

// TestMutantChildDelayedOutOfAvg runs only as the child of
// TestEEVDFLagCatchesDelayedOutOfAvg: a delayed entity taken out of
// avg_vruntime while it stays queued (the kernel keeps it in) unbalances
// the runqueue's lags, which the audit reports as invariant 55.
func TestMutantChildDelayedOutOfAvg(t *testing.T) {
	childOnly(t)
	st, err := conductor.ParseStrategy("random")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.CPUs, cfg.SimTime, cfg.Seed, cfg.AuditEvery, cfg.Strategy = 4, 100_000_000, 3, 1, &st
	clean := newWorkloadMachine(t, cfg, "stress", 16)
	clean.Run()
	if vs := clean.Rep.Violations(); len(vs) > 0 {
		t.Fatalf("control run broke invariants: %v", vs[0])
	}
	var n uint64
	for _, st := range clean.Stats {
		n += st.C[stats.DelayedDequeues].Load()
	}
	if n == 0 {
		t.Fatal("the control run delayed no dequeue: the mutant would have nothing to break")
	}
	rq.SetMutant("delayed-out-of-avg", true)
	defer rq.SetMutant("delayed-out-of-avg", false)
	m := newWorkloadMachine(t, cfg, "stress", 16)
	m.Run()
	vs := m.Rep.Violations()
	if len(vs) == 0 {
		t.Fatal("a delayed entity left out of avg_vruntime went unnoticed")
	}
	if vs[0].Invariant != check.InvEEVDFLag {
		t.Fatalf("caught as %v, want eevdf-lag first: %v", names(vs), vs[0])
	}
	t.Logf("caught at t=%d ns: %v", vs[0].Time, vs[0])
}

//go:build mutants

package cpu

import (
	"testing"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/conductor"
	"github.com/proxysim/proxysim/internal/rq"
)

// TestMutantChildChargeCurr runs only as the child of
// TestChargeLedgerCatchesClassTimeToCurr: update_curr charging class time
// to the execution context is reported by the ledger at the first proxied
// interval it charges.
func TestMutantChildChargeCurr(t *testing.T) {
	childOnly(t)
	st, err := conductor.ParseStrategy("random")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.CPUs, cfg.SimTime, cfg.Seed, cfg.AuditEvery, cfg.Strategy = 8, 300_000_000, 3, 5, &st
	clean := newWorkloadMachine(t, cfg, "stress", 24)
	clean.Run()
	if vs := clean.Rep.Violations(); len(vs) > 0 {
		t.Fatalf("control run broke invariants: %v", vs[0])
	}
	rq.SetMutant("charge-curr", true)
	defer rq.SetMutant("charge-curr", false)
	m := newWorkloadMachine(t, cfg, "stress", 24)
	m.Run()
	vs := m.Rep.Violations()
	if len(vs) == 0 {
		t.Fatal("class time charged to the execution context went unnoticed")
	}
	if vs[0].Invariant != check.InvChargeLedger {
		t.Fatalf("caught as %v, want charge-ledger first: %v", names(vs), vs[0])
	}
	t.Logf("caught at t=%d ns, event #%d: %v", vs[0].Time, vs[0].Seq, vs[0])
}

//go:build mutants

package cpu

import (
	"testing"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/conductor"
	"github.com/proxysim/proxysim/internal/rq"
)

// TestMutantChildDLNoThrottle runs only as the child of
// TestDLBudgetCatchesMissingThrottle: an update_curr_dl that charges the
// budget but never throttles is reported as invariant 54 (dl-budget), by
// the tick's check or the audit, before anything else breaks.
func TestMutantChildDLNoThrottle(t *testing.T) {
	childOnly(t)
	st, err := conductor.ParseStrategy("random")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.CPUs, cfg.SimTime, cfg.Seed, cfg.AuditEvery, cfg.Strategy = 8, 100_000_000, 3, 5, &st
	clean := newWorkloadMachine(t, cfg, "stress", 24)
	clean.Run()
	if vs := clean.Rep.Violations(); len(vs) > 0 {
		t.Fatalf("control run broke invariants: %v", vs[0])
	}
	rq.SetMutant("dl-no-throttle", true)
	defer rq.SetMutant("dl-no-throttle", false)
	m := newWorkloadMachine(t, cfg, "stress", 24)
	m.Run()
	vs := m.Rep.Violations()
	if len(vs) == 0 {
		t.Fatal("a DL budget running out without a throttle went unnoticed")
	}
	if vs[0].Invariant != check.InvDLBudget {
		t.Fatalf("caught as %v, want dl-budget first: %v", names(vs), vs[0])
	}
	t.Logf("caught at t=%d ns, event #%d: %v", vs[0].Time, vs[0].Seq, vs[0])
}

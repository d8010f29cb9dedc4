//go:build mutants

package cpu

import (
	"strings"
	"testing"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/conductor"
	"github.com/proxysim/proxysim/internal/trace"
)

// TestMutantChildPanicIsRecordedInTurn runs only as the child of
// TestPanickingCPURecordsItsViolationInTurn: in deterministic mode a CPU
// that panics records its violation while it still holds the conductor's
// turn, so the violation's event number, the trace hash and the event
// sequence are the same in every run, and the violation event is the
// panicking CPU's.
func TestMutantChildPanicIsRecordedInTurn(t *testing.T) {
	childOnly(t)
	type result struct {
		seq, hash uint64
		v         check.Violation
	}
	run := func() result {
		st, err := conductor.ParseStrategy("random")
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.CPUs, cfg.SimTime, cfg.Seed, cfg.Strategy = 8, 100_000_000, 4, &st
		panicAt.Store(7_000_000)
		panicCPU.Store(3)
		m := newWorkloadMachine(t, cfg, "stress", 24)
		m.Run()
		vs := m.Rep.Violations()
		if len(vs) == 0 || vs[0].Invariant != check.InvInternal || vs[0].CPU != 3 || !strings.Contains(vs[0].Message, "deliberate panic") {
			t.Fatalf("want the panic on cpu 3 as the first violation, got %v", vs)
		}
		// The violation names the event the panicking CPU emitted.
		found := false
		for _, e := range m.Log.Rings[3].Events() {
			if e.Seq == vs[0].Seq {
				found = e.Kind == trace.EvViolation && e.A == int32(check.InvInternal)
			}
		}
		if !found {
			t.Fatalf("violation event #%d is not cpu 3's violation event", vs[0].Seq)
		}
		return result{m.Log.Seq(), m.TraceHash(), vs[0]}
	}
	first := run()
	for i := 0; i < 4; i++ {
		r := run()
		if r.v.Seq != first.v.Seq || r.hash != first.hash || r.seq != first.seq || r.v.Time != first.v.Time {
			t.Fatalf("run %d: violation at event #%d (t=%d), hash %x, %d events; first run: #%d (t=%d), %x, %d events",
				i+2, r.v.Seq, r.v.Time, r.hash, r.seq, first.v.Seq, first.v.Time, first.hash, first.seq)
		}
	}
	t.Logf("panic recorded at event #%d, trace hash %x, five runs alike", first.v.Seq, first.hash)
}

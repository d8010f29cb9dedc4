package cpu

import (
	"strings"
	"testing"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/trace"
)

// Checker defect: a panicking CPU in deterministic mode used to
// hand the conductor's turn on before recording its violation, so the
// violation raced with the next CPU on the trace hash (under -race: a data
// race in the event log's hash; with halt_on_error=1 the report was lost).
// The child, built with -race, panics a CPU on purpose and checks five
// runs alike; with the old defer order it fails on the race.
func TestPanickingCPURecordsItsViolationInTurn(t *testing.T) {
	out := runMutantChild(t, "TestMutantChildPanicIsRecordedInTurn", true)
	if strings.Contains(out, "WARNING: DATA RACE") {
		t.Fatalf("the panicking CPU's report races with the next CPU:\n%s", tail(out, 3000))
	}
	if !strings.Contains(out, "--- PASS: TestMutantChildPanicIsRecordedInTurn") {
		t.Fatalf("the child did not pass:\n%s", tail(out, 3000))
	}
}

// Checker defect: lock-order violations used to be recorded at
// event seq -1, so replay's same-event test matched any of them. Now the
// violation carries the number of the violation event the offending CPU
// emitted, and two inversions at different events have different numbers.
func TestLockOrderViolationHasItsEvent(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CPUs = 2
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mx := m.AddMutex("a")
	c := m.cpus[1].c
	c.Emit(trace.EvTick, 0, 0, 0, 0) // some history first
	// wait_lock, then an rq lock: the inverse of rq->lock -> wait_lock.
	mx.WaitLock().Lock(c.CPU)
	m.rqs[1].Lock(c)
	m.rqs[1].Unlock(c)
	mx.WaitLock().Unlock(c.CPU)
	vs := m.Rep.Violations()
	if len(vs) == 0 || vs[0].Invariant != check.InvLockOrder {
		t.Fatalf("want a lock-order violation, got %v", vs)
	}
	v := vs[0]
	if v.CPU != 1 || v.Seq == 0 || v.Seq == ^uint64(0) {
		t.Fatalf("lock-order violation on cpu %d at event #%d: want cpu 1 and a real event", v.CPU, v.Seq)
	}
	var ev *trace.Event
	for _, e := range m.Log.Rings[1].Events() {
		if e.Seq == v.Seq {
			e := e
			ev = &e
		}
	}
	if ev == nil || ev.Kind != trace.EvViolation || ev.A != int32(check.InvLockOrder) {
		t.Fatalf("event #%d is not cpu 1's lock-order violation event: %+v", v.Seq, ev)
	}
	t.Logf("%v at event #%d", v, v.Seq)
}

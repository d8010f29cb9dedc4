package cpu

import (
	"testing"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/task"
)

// An IPI un-parks a CPU waiting at the epoch barrier only if its sender
// is still in the epoch (its clock before the horizon): one sent past the
// horizon is taken in the next epoch. Two CPUs past the horizon IPIing
// each other used to keep the epoch open for ever, every other CPU
// stopped at the barrier (a core-scheduling push ping-pong and a newidle
// chase were reported as machine hangs, invariant 40).
func TestIPIPastHorizonWaitsForNextEpoch(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CPUs = 3
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := &m.bar
	h := b.horizon.Load()
	park := func(id int) {
		b.mu.Lock()
		b.parked[id], b.arrived = true, b.arrived+1
		b.flags[id].Store(true)
		b.mu.Unlock()
	}
	parked := func(id int) bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.parked[id]
	}
	c0 := m.cpus[0].c

	park(1)
	c0.Now = h
	m.sendIPI(c0, 1, ipiResched)
	if !parked(1) {
		t.Fatalf("an IPI sent at the horizon (%d) un-parked its target within the epoch", h)
	}
	if m.cpus[1].ipiAt.Load() != h {
		t.Fatalf("ipiAt = %d, want the sender's clock %d", m.cpus[1].ipiAt.Load(), h)
	}
	// The target arriving anew with that IPI pending stays parked too.
	b.mu.Lock()
	b.parked[1], b.arrived = false, b.arrived-1
	b.mu.Unlock()
	park(1)
	if m.cpus[1].pending() && m.cpus[1].ipiAt.Load() < h {
		t.Fatal("the pending IPI counts as sent within the epoch")
	}

	park(2)
	c0.Now = h - 1
	m.sendIPI(c0, 2, ipiResched)
	if parked(2) {
		t.Fatal("an IPI sent within the epoch left its target parked")
	}
	// Taking the IPIs forgets their time.
	m.cpus[2].handleIPIs()
	if at := m.cpus[2].ipiAt.Load(); at != noIPI {
		t.Fatalf("ipiAt = %d after handleIPIs, want none", at)
	}
}

// The audit lets a task run outside a mask that was just narrowed only
// while its mover, migration_cpu_stop, is queued on its CPU (the
// stopper's IPI may have been sent at the horizon and be due next
// epoch); without that work it is invariant 2.
func TestAuditAffinityWhileStopperPending(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CPUs = 2
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	prog := &task.Program{Ops: []task.Op{{Kind: task.OpCompute, Min: 1 << 40, Max: 1 << 40}}}
	p, err := m.AddTask(TaskSpec{Name: "T", Mask: task.MaskAll(2), Prog: prog, CPU: 0, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	cp := m.cpus[0]
	for i := 0; i < 3 && m.rqs[0].Curr() != p; i++ {
		cp.iterate(cfgHorizon)
	}
	if m.rqs[0].Curr() != p {
		t.Fatal("T does not run on cpu0")
	}
	m.setCPUsAllowed(m.cpus[1].c, p, task.MaskOf(1))
	if !p.MigrationReady || !m.StopperPending(0) {
		t.Fatalf("narrowing the mask of running T queued no stopper (MigrationReady %v)", p.MigrationReady)
	}
	affinity := func() int {
		n := 0
		for _, v := range m.Rep.Violations() {
			if v.Invariant == check.InvAffinity {
				n++
			}
		}
		return n
	}
	m.Audit()
	if n := affinity(); n != 0 {
		t.Fatalf("invariant 2 reported %d times with the stopper queued", n)
	}
	cp.stopWork = nil // a stopper that was never queued
	m.Audit()
	if n := affinity(); n != 1 {
		t.Fatalf("invariant 2 reported %d times with no stopper queued, want 1", n)
	}
}

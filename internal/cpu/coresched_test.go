package cpu

import (
	"testing"

	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/topology"
)

// With core scheduling on, the SMT siblings of a core reach one lock
// through rq_lockp() and no two siblings can ever hold "different" rq
// locks; double_rq_lock of two siblings takes that lock once, and two
// cores lock in (core, CPU) order whatever the argument order.
func TestCoreSchedSharedLock(t *testing.T) {
	tp, err := topology.Parse("1s-1llc-2c-2t")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.CPUs, cfg.Topology, cfg.CoreSched = 4, tp, Core514
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			same := m.RQ(i).LockP() == m.RQ(j).LockP()
			if sib := tp.Core(i) == tp.Core(j); same != sib {
				t.Fatalf("cpu%d and cpu%d: shared lock %v, siblings %v", i, j, same, sib)
			}
		}
		if l := m.RQ(i).Core.Leader; l != m.RQ(tp.CoreLeader(i)) {
			t.Fatalf("cpu%d: rq->core is rq%d, want rq%d", i, l.CPU, tp.CoreLeader(i))
		}
	}
	c := m.cpus[0].c
	a, b := m.RQ(0), m.RQ(2) // thread 0 and thread 1 of core 0
	rq.DoubleLock(c, a, b)
	if n := c.CPU.Held(); n != 1 {
		t.Fatalf("double_rq_lock of siblings holds %d locks (%s), want 1", n, c.CPU.HeldLocks())
	}
	b.AssertHeld(c) // holding one sibling's lock is holding the other's
	rq.DoubleUnlock(c, a, b)
	if n := c.CPU.Held(); n != 0 {
		t.Fatalf("%d locks held after double_rq_unlock", n)
	}
	// cpu3 (core 1) and cpu0 (core 0): core 0's lock first, from either side.
	for _, pair := range [][2]*rq.RQ{{m.RQ(3), m.RQ(0)}, {m.RQ(0), m.RQ(3)}, {m.RQ(1), m.RQ(2)}} {
		rq.DoubleLock(c, pair[0], pair[1])
		if n := c.CPU.Held(); n != 2 {
			t.Fatalf("double_rq_lock of two cores holds %d locks", n)
		}
		rq.DoubleUnlock(c, pair[0], pair[1])
	}
	if v := m.Rep.Violations(); len(v) != 0 {
		t.Fatalf("violations: %v", v)
	}
	// Without core scheduling every runqueue keeps its own lock.
	cfg.CoreSched = CoreOff
	m2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if m2.RQ(0).LockP() == m2.RQ(2).LockP() || m2.RQ(0).CoreEnabled() {
		t.Fatal("core scheduling off, yet siblings share a lock")
	}
}

package cpu

import (
	"testing"

	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/topology"
)

// With core scheduling on, the SMT siblings of a core reach one lock
// through rq_lockp() and no two siblings can ever hold "different" rq
// locks; double_rq_lock of two siblings takes that lock once, and two
// cores lock in (core, CPU) order whatever the argument order.
func TestCoreSchedSharedLock(t *testing.T) {
	m, cfg := newCoreMachine(t)
	tp := cfg.Topology
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

// Core scheduling follows sched_core_count, the cookie references tasks
// hold: it goes off only when the last one is put, and then only when
// sched_core_put's work runs (__sched_core_put: a get that came since
// keeps it on), and the first get switches it on before its cookie is
// installed. A flip never finds a cookie in a core_tree
// (sched_core_assert_empty, invariant 62).
func TestSchedCoreCount(t *testing.T) {
	m, _ := newCoreMachine(t)
	all := task.Mask{}
	for i := 0; i < 4; i++ {
		all.Set(i)
	}
	p1, err := m.AddTask(TaskSpec{Name: "p1", Mask: all, CPU: 0, Cookie: 1, Prog: &task.Program{}})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := m.AddTask(TaskSpec{Name: "p2", Mask: all, CPU: 1, Cookie: 1, Prog: &task.Program{}})
	if err != nil {
		t.Fatal(err)
	}
	c := m.cpus[3].c
	state := func(want bool, count int32, step string) {
		t.Helper()
		if got := m.RQ(0).CoreEnabled(); got != want {
			t.Fatalf("%s: core scheduling enabled %v, want %v (sched_core_count %d)", step, got, want, m.coreCount.Load())
		}
		if n := m.coreCount.Load(); n != count {
			t.Fatalf("%s: sched_core_count %d, want %d", step, n, count)
		}
	}
	state(true, 2, "two tagged tasks")
	m.setCookie(c, p1, 0)
	if m.corePutWork(c) {
		t.Fatal("__sched_core_put switched core scheduling off while p2 holds a cookie")
	}
	state(true, 1, "one cookie put")
	m.setCookie(c, p2, 0)
	if !m.corePutQueued.Load() {
		t.Fatal("the last put queued no __sched_core_put work")
	}
	state(true, 1, "the last put, its work not run yet")
	if !m.corePutWork(c) {
		t.Fatal("__sched_core_put did not switch core scheduling off")
	}
	state(false, 0, "after the put work")
	m.setCookie(c, p1, 7)
	state(true, 1, "the first get")
	if p1.CoreCookie != 7 {
		t.Fatalf("p1's cookie %d, want 7", p1.CoreCookie)
	}
	// A get between the last put and its work keeps core scheduling on.
	m.setCookie(c, p1, 0)
	m.setCookie(c, p2, 9)
	if m.corePutWork(c) {
		t.Fatal("__sched_core_put switched core scheduling off with a cookie held")
	}
	state(true, 1, "a get came before the put work")
	if v := m.Rep.Violations(); len(v) != 0 {
		t.Fatalf("violations: %v", v)
	}
}

// newCoreMachine is a machine of two cores of two threads (cpu0/cpu2,
// cpu1/cpu3) with core scheduling on.
func newCoreMachine(t *testing.T) (*Machine, Config) {
	t.Helper()
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
	return m, cfg
}

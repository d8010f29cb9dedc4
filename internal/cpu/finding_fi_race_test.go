package cpu

import (
	"sync"
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/topology"
)

// Finding F9 (docs/findings.md): __sched_core_account_forceidle charges
// rq_i->core_pick ?: rq_i->curr. A core_pick that an enqueue or dequeue
// voided (core_task_seq moved on) may name a task that now belongs to
// another core, whose accounting charges it under that core's lock: two
// plain read-modify-writes of core_forceidle_sum under two different
// locks. The child charges task X from core 0 (a stale core_pick of cpu2)
// and from core 1 (a valid core_pick of cpu3), each under its own core
// lock, once with the kernel's code (--bug core-fi-charge-stale) and once
// with the proposed fix, in -race child processes.
func TestFindingForceidleChargeStaleIsARace(t *testing.T) {
	checkRaceFinding(t, "TestFindingChildForceidleCharge", "the charge of a stale core_pick", "SchedCoreAccountForceidle")
}

// TestFindingChildForceidleCharge runs only as the -race child of
// TestFindingForceidleChargeStaleIsARace.
func TestFindingChildForceidleCharge(t *testing.T) {
	findingChildOnly(t, "TestFindingForceidleChargeStaleIsARace")
	tp, err := topology.Parse("1s-1llc-2c-2t")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.CPUs, cfg.Topology, cfg.CoreSched = 4, tp, Core514
	if findingBug() {
		cfg.Bugs = cfg.Bugs.With(bugs.CoreFIChargeStale)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	prog := &task.Program{Ops: []task.Op{{Kind: task.OpCompute, Min: 1e9}}}
	x, _ := m.AddTask(TaskSpec{Name: "X", Policy: task.Normal, Mask: task.MaskAll(4), Prog: prog, CPU: 3, Seed: 1})
	// Core 0 (cpu0, cpu2): forced idle since t=1, its last pick left
	// core_pick = X on cpu2 and was voided since (X moved to cpu3).
	// Core 1 (cpu1, cpu3): forced idle since t=1, its pick for cpu3 is
	// X and still valid.
	for _, lead := range []int{0, 1} {
		cs := &m.rqs[lead].Core
		cs.ForceidleCount, cs.ForceidleStart, cs.ForceidleOccupation = 1, 1, 1
		cs.PickSeq, cs.TaskSeq = 5, 5
	}
	m.rqs[0].Core.TaskSeq = 6
	m.rqs[2].Core.Pick = x
	m.rqs[3].Core.Pick = x
	var wg sync.WaitGroup
	wg.Add(2)
	for _, cpu := range []int{0, 1} {
		go func(cpu int) {
			defer wg.Done()
			if cpu == 1 {
				time.Sleep(50 * time.Millisecond)
			}
			c, r := m.cpus[cpu].c, m.rqs[cpu]
			r.Lock(c)
			c.Now = 1_000_000
			r.SchedCoreAccountForceidle(c)
			r.Unlock(c)
			if cpu == 0 {
				time.Sleep(200 * time.Millisecond)
			}
		}(cpu)
	}
	wg.Wait()
}

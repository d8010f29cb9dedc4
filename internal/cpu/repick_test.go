package cpu

import (
	"testing"

	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
)

// A runqueue full of donors whose owner moved away drains in one
// __schedule, one proxy migration per re-pick: that is progress, not the
// livelock invariant 18 looks for. 1,200 waiters pinned to cpu0 block on
// a mutex whose owner runs there as their proxy; the owner then moves
// itself to cpu1 (sched_setaffinity while holding the lock), and cpu0's
// next __schedule proxy-migrates every donor. With a fixed bound of 1,000
// re-picks (the model before this test) the run broke invariant 18; 1,024
// CPUs running the default workload met the same false report.
func TestRepickDrainIsNotALivelock(t *testing.T) {
	const waiters = 1200
	cfg := DefaultConfig()
	cfg.CPUs, cfg.SimTime, cfg.Seed = 2, 12_000_000, 1
	cfg.NoOptimisticSpin = true // the waiters block at once
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.AddMutex("M")
	owner := &task.Program{Ops: []task.Op{
		{Kind: task.OpLock, Mutex: 0},
		{Kind: task.OpCompute, Min: 1_000_000},
		{Kind: task.OpAffinity, Mask: task.MaskOf(1)},
		{Kind: task.OpCompute, Min: 50_000_000},
		{Kind: task.OpUnlock, Mutex: 0},
	}}
	waiter := &task.Program{Ops: []task.Op{
		{Kind: task.OpSleep, Min: 10_000},
		{Kind: task.OpLock, Mutex: 0},
		{Kind: task.OpUnlock, Mutex: 0},
	}}
	if _, err := m.AddTask(TaskSpec{Name: "owner", Policy: task.Normal, Mask: task.MaskAll(2), Prog: owner, CPU: 0, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < waiters; i++ {
		if _, err := m.AddTask(TaskSpec{Name: "w", Policy: task.Normal, Mask: task.MaskOf(0), Prog: waiter, CPU: 0, Seed: uint64(i + 2)}); err != nil {
			t.Fatal(err)
		}
	}
	m.Run()
	if vs := m.Rep.Violations(); len(vs) > 0 {
		t.Fatalf("violation: %v", vs[0])
	}
	if n := stats.Sum(m.Stats, stats.ProxyMigrations); n < waiters {
		t.Fatalf("%d proxy migrations, want every one of the %d donors moved after the owner", n, waiters)
	}
}

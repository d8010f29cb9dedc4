package cpu

import (
	"sync"
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/task"
)

// An RT task killed inside a migrate_disable region, pinned to cpu0 (it
// was switched out there), exits: dropMigrateDisable restores cpus_ptr
// while cpu1's pull_rt_task reads the task's candidates under cpu0's rq
// lock. The write must hold that lock too: under -race this test fails
// (the detector reports the pair) if dropMigrateDisable writes PinnedCPU
// without it, as it did before 3a99cc4. Sleeps, which order nothing for
// the detector, keep the two sides apart in time.
func TestExitMigrateDisabledRestoresMaskUnderLock(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CPUs = 2
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	prog := &task.Program{Ops: []task.Op{{Kind: task.OpCompute, Min: 1e9}}}
	p, err := m.AddTask(TaskSpec{Name: "P", Policy: task.FIFO, Prio: 10, Mask: task.MaskOf(0, 1), Prog: prog, CPU: 0, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	p.MigrationDisabled = 1
	p.SetPinnedCPU(0)
	cp0, c1 := m.cpus[0], m.cpus[1].c
	cp0.nrPinned = 1
	r0 := m.rqs[0]
	var got []*task.Task
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // cpu0: the exiting task ends its migrate_disable region
		defer wg.Done()
		cp0.dropMigrateDisable(p)
		time.Sleep(200 * time.Millisecond)
	}()
	go func() { // cpu1: pull_rt_task's scan of cpu0, under cpu0's rq lock
		defer wg.Done()
		time.Sleep(50 * time.Millisecond)
		r0.Lock(c1)
		got = rtCandidates(c1, r0)
		r0.Unlock(c1)
	}()
	wg.Wait()
	if p.PinnedCPU != -1 || p.MigrationDisabled != 0 || cp0.nrPinned != 0 {
		t.Fatalf("after the exit: pinned %d, migration_disabled %d, nr_pinned %d", p.PinnedCPU, p.MigrationDisabled, cp0.nrPinned)
	}
	if len(got) != 1 || got[0] != p {
		t.Fatalf("pull_rt_task's candidates after the exit: %v, want [P] (unpinned, queued on cpu0)", got)
	}
}

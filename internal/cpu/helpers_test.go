package cpu

import (
	"testing"

	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/task"
)

// relaxUntil counts cpu_relax() calls of one CPU and, at the n-th, runs
// done (the other side of the wait finishing).
type relaxUntil struct {
	n, seen int
	done    func()
}

func (h *relaxUntil) Yield(_ *spinlock.CPU, pt spinlock.Point) {
	if pt != spinlock.PointRelax {
		return
	}
	if h.seen++; h.seen == h.n {
		h.done()
	}
}

func (h *relaxUntil) Spin(*spinlock.CPU, *spinlock.Lock) bool { return false }

// __task_rq_lock, finding its task MIGRATING, drops the rq lock and
// spins on task_on_rq_migrating() without it, taking the lock again only
// once the move is over: two acquisitions, however long the move takes.
func TestTaskRQLockWaitsUnlocked(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CPUs = 2
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	prog := &task.Program{Ops: []task.Op{{Kind: task.OpCompute, Min: 1e9}}}
	p, err := m.AddTask(TaskSpec{Name: "P", Mask: task.MaskOf(0, 1), Prog: prog, CPU: 0, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := m.cpus[1].c
	p.SetOnRQ(task.OnRQMigrating) // a mover holds it (deactivate_task)
	c.Hooks = &relaxUntil{n: 5, done: func() { p.SetOnRQ(task.OnRQQueued) }}
	p.PiLock.Lock(c.CPU)
	before := c.Acquisitions.Load()
	r := m.taskRQLock(c, p)
	got := c.Acquisitions.Load() - before
	r.Unlock(c)
	p.PiLock.Unlock(c.CPU)
	c.Hooks = nil
	if got != 2 {
		t.Fatalf("__task_rq_lock took the rq lock %d times while the task was MIGRATING for 5 cpu_relax(), want 2", got)
	}
}

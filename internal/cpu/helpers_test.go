package cpu

import (
	"testing"

	"github.com/proxysim/proxysim/internal/proxy"
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
	m := newHelperMachine(t, 2, nil)
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

// task_is_pushable, proxy execution on: a chain whose owner is queued
// here as rq->donor "leads off the rq" (find_exec_ctx returns NULL) and
// its links before the donor may be pushed; and a pending affinity move
// (the stopper queued for the task) is no reason not to push a task, nor
// for can_migrate_task not to pull it.
func TestTaskIsPushable(t *testing.T) {
	m := newHelperMachine(t, 2, nil)
	mx := m.AddMutex("L")
	prog := &task.Program{Ops: []task.Op{{Kind: task.OpCompute, Min: 1e9}}}
	add := func(name string, pol task.Policy, prio int, seed uint64) *task.Task {
		p, err := m.AddTask(TaskSpec{Name: name, Policy: pol, Prio: prio, Mask: task.MaskOf(0, 1), Prog: prog, CPU: 0, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	d, p, q := add("D", task.FIFO, 50, 1), add("P", task.FIFO, 50, 2), add("Q", task.Normal, 0, 3)
	c := m.cpus[0].c
	r := m.rqs[0]
	if !mx.TryLockFast(c, d) {
		t.Fatal("L is not free")
	}
	p.BlockedLock.Lock(c.CPU)
	p.SetBlockedOn(c, mx)
	p.BlockedLock.Unlock(c.CPU)
	r.Lock(c)
	r.SetDonor(c, d)
	ok, chain := taskIsPushable(c, r, p, 1)
	if ok != pushable || len(chain) != 1 || chain[0] != p {
		t.Errorf("P, blocked on L owned by rq->donor D: task_is_pushable %d, chain %v; want 1, [P]", ok, chain)
	}
	q.MigrationReady = true
	if ok, _ := taskIsPushable(c, r, q, 1); ok != pushable {
		t.Errorf("Q with a pending affinity move: task_is_pushable %d, want 1", ok)
	}
	r.SetDonor(c, r.Idle)
	r.Unlock(c)
	c1 := m.cpus[1].c
	r.Lock(c1)
	if !m.cpus[1].movable(r, q, 1) {
		t.Error("Q with a pending affinity move: can_migrate_task refuses it")
	}
	r.Unlock(c1)
}

// task_is_blocked() is sched_proxy_exec() && blocked_on.lock: false with
// proxy execution off whatever blocked_on holds.
func TestTaskIsBlockedHelper(t *testing.T) {
	for _, on := range []bool{true, false} {
		m := newHelperMachine(t, 1, func(cfg *Config) { cfg.Proxy = on })
		mx := m.AddMutex("L")
		prog := &task.Program{Ops: []task.Op{{Kind: task.OpCompute, Min: 1e9}}}
		p, err := m.AddTask(TaskSpec{Name: "P", Mask: task.MaskOf(0), Prog: prog, CPU: 0, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		c := m.cpus[0].c
		if proxy.TaskIsBlocked(c, p) {
			t.Fatalf("proxy %v: task_is_blocked with blocked_on clear", on)
		}
		p.BlockedLock.Lock(c.CPU)
		p.SetBlockedOn(c, mx)
		p.BlockedLock.Unlock(c.CPU)
		if got := proxy.TaskIsBlocked(c, p); got != on {
			t.Fatalf("proxy %v, blocked_on set: task_is_blocked %v", on, got)
		}
	}
}

// is_cpu_allowed() for a user task: in cpus_ptr, then a migrate-disabled
// task may stay on an online CPU, any other needs an active one.
func TestIsCPUAllowed(t *testing.T) {
	m := newHelperMachine(t, 3, func(cfg *Config) { cfg.Hotplug = true })
	prog := &task.Program{Ops: []task.Op{{Kind: task.OpCompute, Min: 1e9}}}
	p, err := m.AddTask(TaskSpec{Name: "P", Mask: task.MaskOf(0, 1), Prog: prog, CPU: 0, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	m.active[1].Store(false) // cpu1 going down: online, not active
	for _, tc := range []struct {
		cpu, disabled int
		want          bool
	}{{0, 0, true}, {1, 0, false}, {1, 1, true}, {2, 0, false}, {2, 1, false}} {
		p.MigrationDisabled = tc.disabled
		if got := m.isCPUAllowed(p, tc.cpu); got != tc.want {
			t.Errorf("is_cpu_allowed(cpu%d, migration_disabled %d) = %v, want %v", tc.cpu, tc.disabled, got, tc.want)
		}
	}
	p.MigrationDisabled = 0
}

// newHelperMachine is a machine of cpus CPUs with the default
// configuration, changed by set if given; it is not started.
func newHelperMachine(t *testing.T, cpus int, set func(*Config)) *Machine {
	t.Helper()
	cfg := DefaultConfig()
	cfg.CPUs = cpus
	if set != nil {
		set(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// An offline CPU schedules nothing until it is brought up, whatever
// need_resched its idle task carries: at the barrier it has nothing to
// do. (Reading that flag as work to do kept an offline CPU coming back
// to the barrier at its own clock for ever, and no window ever reached
// the epoch's end: the hang of stress --cpus 16 --seed 1.)
func TestOfflineCPUParksDespiteNeedResched(t *testing.T) {
	m := newHelperMachine(t, 2, func(c *Config) { c.Hotplug = true })
	cp := m.cpus[1]
	m.online[1].Store(false)
	cp.rq.SetNeedResched() // on the idle task, rq->curr
	if at, busy := cp.wakeAt(); at != never || busy {
		t.Fatalf("offline cpu1 with need_resched set on its idle task: wakeAt %d busy %v, want never and not busy", at, busy)
	}
	m.online[1].Store(true)
	if at, _ := cp.wakeAt(); at != cp.c.Now {
		t.Fatalf("online idle cpu1 with need_resched set: wakeAt %d, want its clock %d (pick again first)", at, cp.c.Now)
	}
}

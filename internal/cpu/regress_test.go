package cpu

// Regression tests for model deviations found by the test suite and stress
// runs, each pinning the interleaving that broke an invariant (they fail
// with their fix reverted).

import (
	"testing"

	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/task"
)

// quietHooks: no lock-layer hooks (the test drives the CPUs itself).
type quietHooks struct{}

func (quietHooks) Yield(*spinlock.CPU, spinlock.Point)     {}
func (quietHooks) Spin(*spinlock.CPU, *spinlock.Lock) bool { return false }

func stepMachine(t *testing.T, cpus int) *Machine {
	t.Helper()
	cfg := DefaultConfig()
	cfg.CPUs = cpus
	cfg.Epoch = cfgHorizon
	cfg.SimTime = cfgHorizon
	cfg.Seed = 1
	cfg.AuditEvery = 0
	cfg.NoOptimisticSpin = true
	cfg.Hooks = func(int) spinlock.Hooks { return quietHooks{} }
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The stopper is a class the pick sees. W is woken onto cpu0's wake list
// (TASK_WAKING); cpu0 takes the call-function IPI, and before it flushes
// the list W's mask becomes {2}: affine_move_task punts to cpu0's
// stopper (stop_one_cpu_nowait wakes it under cpu0's rq lock). cpu0 then
// enqueues W and schedules. In the kernel the stop task is queued by
// then and stop_sched_class wins the pick; W must not run on cpu0, and
// the stopper moves it to cpu2. (TestHotplugRunClean met this window
// under its affinity shuffles: invariant 2.)
func TestStopperPickedBeforeWokenTask(t *testing.T) {
	m := stepMachine(t, 3)
	prog := &task.Program{Ops: []task.Op{
		{Kind: task.OpSleep, Min: 3_600_000_000_000},
		{Kind: task.OpCompute, Min: 3_600_000_000_000},
	}}
	w, err := m.AddTask(TaskSpec{Name: "W", Mask: task.MaskAll(3), Prog: prog, CPU: 0})
	if err != nil {
		t.Fatal(err)
	}
	cp0 := m.cpus[0]
	for i := 0; i < 2; i++ {
		cp0.iterate(cfgHorizon) // W runs and sleeps
	}
	if w.State() == task.Running {
		t.Fatalf("W did not go to sleep")
	}
	if !m.tryToWakeUp(m.cpus[1].c, w, task.WakeNormal) || w.State() != task.Waking || cp0.wakeList.Load() == nil {
		t.Fatalf("setup: want W on cpu0's wake list, state %v", w.State())
	}
	// cpu0 takes its pending IPIs: the call-function one only, so far.
	if kinds := cp0.ipi.Swap(0); kinds&ipiWakeList == 0 {
		t.Fatalf("setup: cpu0 has no call-function IPI pending (kinds %#x)", kinds)
	}
	m.setCPUsAllowed(m.cpus[1].c, w, task.MaskOf(2))
	cp0.c.HardirqEnter()
	cp0.ttwuPending()
	cp0.c.HardirqExit()
	cp0.schedule(true)
	if m.rqs[0].Curr() == w {
		t.Fatalf("W runs on cpu0 outside its mask {2} before cpu0's stopper moved it")
	}
	for i := 0; i < 4 && w.CPU() != 2; i++ {
		cp0.iterate(cfgHorizon) // the stopper's IPI: migration_cpu_stop
	}
	if w.CPU() != 2 || !w.Queued() {
		t.Fatalf("the stopper did not move W to cpu2: cpu %d, on_rq %d", w.CPU(), w.OnRQ())
	}
}

// rt_revalidate_rq_state, after push_rt_task's double_lock_balance has
// dropped the rq lock: the candidate must still be on the pushable list.
// Here D, an RT task, is a blocked donor queued on cpu1 behind H (it
// blocked on m elsewhere and was proxy-migrated to m's owner O, which is
// migrate-disabled and preempted on cpu1). D is no push candidate, but
// task_is_pushable alone calls the chain pushable and would move O with
// it: a push that had picked D before its lock drop must give up here.
// (TestHotplugRunClean met this window: invariant 49, O moved.)
func TestRTPushRevalidatesTheCandidate(t *testing.T) {
	m := stepMachine(t, 3)
	m.AddMutex("m")
	long := int64(3_600_000_000_000)
	o, _ := m.AddTask(TaskSpec{Name: "O", Mask: task.MaskOf(1, 2), CPU: 1, Prog: &task.Program{Ops: []task.Op{
		{Kind: task.OpMigrateDisable}, {Kind: task.OpLock, Mutex: 0}, {Kind: task.OpCompute, Min: long}}}})
	h, _ := m.AddTask(TaskSpec{Name: "H", Policy: task.FIFO, Prio: 90, Mask: task.MaskOf(1), CPU: 1, Prog: &task.Program{Ops: []task.Op{
		{Kind: task.OpSleep, Min: long}, {Kind: task.OpCompute, Min: long}}}})
	d, _ := m.AddTask(TaskSpec{Name: "D", Policy: task.FIFO, Prio: 50, Mask: task.MaskAll(3), CPU: 0, Prog: &task.Program{Ops: []task.Op{
		{Kind: task.OpSleep, Min: 1_000_000}, {Kind: task.OpLock, Mutex: 0}, {Kind: task.OpCompute, Min: long}}}})
	cp0, cp1 := m.cpus[0], m.cpus[1]
	for i := 0; i < 40 && !(h.State() != task.Running && m.mutexes[0].OwnerTask() == o); i++ {
		cp1.iterate(cfgHorizon) // H sleeps; O pins itself and takes m
	}
	if m.mutexes[0].OwnerTask() != o || o.MigrationDisabled == 0 {
		t.Fatalf("setup: O does not hold m migrate-disabled")
	}
	m.tryToWakeUp(cp0.c, h, task.WakeNormal)
	for i := 0; i < 10 && m.rqs[1].Curr() != h; i++ {
		cp1.iterate(cfgHorizon) // H preempts O
	}
	for i := 0; i < 200 && !(d.CPU() == 1 && d.Queued()); i++ {
		cp0.iterate(cfgHorizon) // D wakes, blocks on m, is proxy-migrated to O's CPU
	}
	r1, r2 := m.rqs[1], m.rqs[2]
	if r1.Curr() != h || d.CPU() != 1 || !d.Queued() || !o.Queued() || o.OnCPU() {
		t.Fatalf("setup: want H running on cpu1 with D and O queued there: curr %v, D cpu %d on_rq %d, O on_rq %d", r1.Curr(), d.CPU(), d.OnRQ(), o.OnRQ())
	}
	c := cp1.c
	r1.Lock(c)
	r2.Lock(c)
	ok, chain := taskIsPushable(c, r1, d, 2)
	revalidated := rtRevalidateRQState(c, d, r1, r2)
	r2.Unlock(c)
	r1.Unlock(c)
	if ok != pushable || len(chain) != 2 || chain[1] != o {
		t.Fatalf("setup: task_is_pushable(D) = %d %v, want the chain D, O", ok, chain)
	}
	if revalidated {
		t.Fatalf("rt_revalidate_rq_state accepted the blocked donor D: the push would move D's chain and the migrate-disabled O with it")
	}
}

// kill(2) and complete() of a task that has exited and dropped its last
// reference find nothing (ESRCH; no waiter on the queue): no
// try_to_wake_up in freed memory. Stress with --signal-fatal sent its
// random signals, and programs their complete()s, to exited tasks, and
// invariant 53 fired on the model's own injector.
func TestSignalAndCompleteOfAReapedTask(t *testing.T) {
	m := stepMachine(t, 2)
	x, _ := m.AddTask(TaskSpec{Name: "X", Mask: task.MaskAll(2), CPU: 0, Prog: &task.Program{Ops: []task.Op{{Kind: task.OpExit}}}})
	w, _ := m.AddTask(TaskSpec{Name: "W", Mask: task.MaskAll(2), CPU: 1, Prog: &task.Program{Ops: []task.Op{
		{Kind: task.OpWake, Target: x.ID}, {Kind: task.OpCompute, Min: 3_600_000_000_000}}}})
	for i := 0; i < 10 && !x.Freed(); i++ {
		m.cpus[0].iterate(cfgHorizon)
		m.rcuBarrierPuts() // a grace period after each step
	}
	if !x.Freed() {
		t.Fatalf("setup: X did not exit and drop its last reference (state %v, refs %d)", x.State(), x.Refs())
	}
	if m.sendSignal(m.cpus[1].c, x, true) {
		t.Fatalf("a SIGKILL to the reaped X woke it")
	}
	for i := 0; i < 10 && w.Exec.PC == 0; i++ {
		m.cpus[1].iterate(cfgHorizon) // W's complete() of X
	}
	if w.Exec.PC == 0 {
		t.Fatalf("setup: W did not run its complete()")
	}
	if m.Rep.Failed() {
		t.Fatalf("violations: %v", m.Rep.Violations())
	}
}

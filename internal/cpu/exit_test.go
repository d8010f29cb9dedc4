package cpu

import (
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/task"
)

// TestExitStoresDeadUnderPiLock pins do_task_dead's set_special_state():
// TASK_DEAD is stored under the exiting task's pi_lock. A try_to_wake_up
// that matched one of the task's earlier sleeping states (a mutex waiter
// that then took the lock without that wake-up, ran, unlocked and
// exited) holds pi_lock until it has stored TASK_WAKING or TASK_RUNNING;
// with a plain store of TASK_DEAD the waker's store lands on top of it
// and the dead task is enqueued again (docs/findings/withdrawn.md, "a fair task
// that V never reaches": 1 in about 20 loaded 64-CPU runs stopped on
// invariant 30 that way). The test holds W's pi_lock, standing for that
// waker between its state test and its store, while W's CPU runs do_exit:
// W must wait for pi_lock with its state not yet DEAD, and be DEAD, off
// every queue, once the lock is released.
func TestExitStoresDeadUnderPiLock(t *testing.T) {
	hook := &spinReport{held: make(chan string, 1)}
	m, err := New(steppedConfig(hook))
	if err != nil {
		t.Fatal(err)
	}
	w, err := m.AddTask(TaskSpec{Name: "W", Mask: task.MaskOf(1), CPU: 1, Seed: 1, Prog: &task.Program{Ops: []task.Op{
		{Kind: task.OpCompute, Min: 10_000},
		{Kind: task.OpExit}}}})
	if err != nil {
		t.Fatal(err)
	}
	hook.watch = &w.PiLock
	me := spinlock.NewCPU(99)
	w.PiLock.Lock(me) // the waker, between ttwu_state_match and its store
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 50 && w.State() != task.Dead; i++ {
			m.cpus[1].iterate(cfgHorizon)
		}
	}()
	select {
	case <-hook.held:
		// The channel orders W's CPU's writes so far before these reads;
		// it is waiting for pi_lock and writes nothing until it has it.
		if !w.Exec.Exited {
			w.PiLock.Unlock(me)
			<-done
			t.Fatalf("W's CPU waited for W's pi_lock before do_exit (state %v)", w.State())
		}
		if s := w.State(); s == task.Dead {
			t.Errorf("W is DEAD while it waits for its own pi_lock: the store was not under it")
		}
	case <-done:
		t.Fatalf("W ran do_exit to state %v while a waker held its pi_lock: TASK_DEAD was not stored under pi_lock", w.State())
	case <-time.After(10 * time.Second):
		t.Fatal("W's CPU neither waited for W's pi_lock nor finished do_exit")
	}
	w.PiLock.Unlock(me)
	<-done
	if w.State() != task.Dead || w.OnRQ() != task.OnRQNone {
		t.Fatalf("W after do_exit: state %v, on_rq %d; want DEAD and off every queue", w.State(), w.OnRQ())
	}
	if vs := m.Rep.Violations(); len(vs) > 0 {
		t.Fatalf("violations: %v", vs)
	}
}

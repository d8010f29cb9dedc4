package cpu

import (
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/task"
)

// hrtimer_cancel waits for a callback that is already running: a sleeper
// woken early (by a signal) cancels its timer when it resumes, and must
// not go on, exit and drop its last reference while the CPU that popped
// the timer is still about to try_to_wake_up it. The model's cancel used
// to find nothing to remove and return at once (stress --workload
// coresched --cpus 16 --seed 1: invariant 53, try_to_wake_up of an
// exited task from its sleep timer).
func TestCancelTimerWaitsForRunningCallback(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CPUs = 2
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	prog := &task.Program{Ops: []task.Op{{Kind: task.OpCompute, Min: 1000, Max: 1000}}}
	p, err := m.AddTask(TaskSpec{Name: "S", Mask: task.MaskAll(2), Prog: prog, CPU: 0, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	owner := m.cpus[1]
	id := owner.armTimer(p, 1_000_000)

	// Not running, still queued: removed at once.
	m.cancelTimer(m.cpus[0].c, 1, id)
	if len(owner.timers) != 0 {
		t.Fatalf("cancel left %d timers", len(owner.timers))
	}

	// Popped by fireTimers, callback in flight: the cancel waits.
	id = owner.armTimer(p, 1_000_000)
	owner.timerLock.Lock(owner.c.CPU)
	owner.timers = owner.timers[1:]
	owner.timerRunning = id
	owner.timerLock.Unlock(owner.c.CPU)
	done := make(chan struct{})
	go func() {
		m.cancelTimer(m.cpus[0].c, 1, id)
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("hrtimer_cancel returned while the timer's callback was still running")
	case <-time.After(50 * time.Millisecond):
	}
	owner.timerLock.Lock(owner.c.CPU)
	owner.timerRunning = 0 // the callback ends
	owner.timerLock.Unlock(owner.c.CPU)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("hrtimer_cancel still waiting after the callback ended")
	}
}

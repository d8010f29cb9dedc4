package rq

import (
	"strings"
	"testing"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

func testCtx(id int, dep *spinlock.Validator) *percpu.Ctx {
	c := &percpu.Ctx{CPU: spinlock.NewCPU(id)}
	c.CPU.Dep = dep
	return c
}

func newRQ(cpu int) *RQ { return New(cpu, task.New(-cpu-1, "idle", 4, cpu)) }

// Two runqueues that share one lock (SMT siblings under core scheduling):
// double_rq_lock takes it once, double_rq_unlock releases it once, and
// the lock-order validator sees no recursion.
func TestDoubleLockSharedLockTakenOnce(t *testing.T) {
	var inv []spinlock.Inversion
	dep := spinlock.NewValidator(func(i spinlock.Inversion) { inv = append(inv, i) })
	a, b := newRQ(0), newRQ(1)
	b.ShareLock(a)
	if a.LockP() != b.LockP() {
		t.Fatal("ShareLock did not share the lock")
	}
	c := testCtx(0, dep)
	DoubleLock(c, a, b)
	if n := c.CPU.Held(); n != 1 {
		t.Fatalf("double_rq_lock of siblings holds %d locks (%s), want 1", n, c.CPU.HeldLocks())
	}
	a.AssertHeld(c)
	b.AssertHeld(c) // the sibling's lock is the same lock
	DoubleUnlock(c, a, b)
	if n := c.CPU.Held(); n != 0 || a.Holder() != -1 {
		t.Fatalf("after double_rq_unlock: %d held, holder %d", n, a.Holder())
	}
	// The lock really is free again: another CPU can take it.
	c2 := testCtx(1, dep)
	b.Lock(c2)
	if a.Holder() != 1 {
		t.Fatalf("holder %d after cpu1 took the sibling's lock, want 1", a.Holder())
	}
	b.Unlock(c2)
	if len(inv) > 0 {
		t.Fatalf("validator reported %v", inv)
	}
}

// Distinct locks are taken in (core, CPU) key order whatever the argument
// order, and double_lock_balance drops this_rq's lock only when busiest
// orders first.
func TestDoubleLockOrderAndBalance(t *testing.T) {
	var inv []spinlock.Inversion
	dep := spinlock.NewValidator(func(i spinlock.Inversion) { inv = append(inv, i) })
	a, b := newRQ(0), newRQ(1)
	// cpu1 is on core 0 and cpu0 on core 1: cpu1's lock orders first.
	a.SetLockOrder(1<<16 | 0)
	b.SetLockOrder(0<<16 | 1)
	c := testCtx(0, dep)
	DoubleLock(c, a, b)
	if got := c.CPU.HeldLocks(); !strings.HasPrefix(got, "rq->lock#1 ") {
		t.Fatalf("double_rq_lock took %s, want cpu1's (core 0) lock first", got)
	}
	DoubleUnlock(c, a, b)

	b.Lock(c)
	if dropped := DoubleLockBalance(c, b, a); dropped {
		t.Fatal("double_lock_balance dropped this_rq although it orders first")
	}
	DoubleUnlockBalance(c, b, a)
	b.AssertHeld(c)
	b.Unlock(c)

	a.Lock(c)
	if dropped := DoubleLockBalance(c, a, b); !dropped {
		t.Fatal("double_lock_balance kept this_rq although busiest orders first")
	}
	a.AssertHeld(c)
	b.AssertHeld(c)
	DoubleUnlockBalance(c, a, b)
	a.AssertHeld(c)
	if n := c.CPU.Held(); n != 1 {
		t.Fatalf("after double_unlock_balance %d locks held, want this_rq's only", n)
	}
	a.Unlock(c)
	if len(inv) > 0 {
		t.Fatalf("validator reported %v", inv)
	}
	// Taking them the wrong way round is caught.
	a.Lock(c)
	b.Lock(c)
	b.Unlock(c)
	a.Unlock(c)
	if len(inv) != 1 || !strings.Contains(inv[0].Reason, "double_rq_lock") {
		t.Fatalf("out-of-order rq locks: validator reported %v, want one double_rq_lock inversion", inv)
	}
}

// An enqueue of a queued task and a dequeue of a task queued elsewhere are
// reported as invariant 6 through the CPU's Warn, and leave the queues as
// they were (a WARN and return, not a panic).
func TestEnqueueDequeueMisuseIsReported(t *testing.T) {
	var got []check.Invariant
	c := testCtx(0, nil)
	c.Stats = &stats.CPU{}
	c.Trace = trace.NewLog(1, 64).Rings[0]
	c.OnWarn = func(_ *percpu.Ctx, inv check.Invariant, task int, name, msg string) { got = append(got, inv) }
	a, b := newRQ(0), newRQ(1)
	p := task.New(1, "p", 4, 0)
	a.Lock(c)
	a.ActivateTask(c, p, EnqueueWakeup)
	a.Enqueue(c, p, EnqueueWakeup)
	a.Unlock(c)
	b.Lock(c)
	b.Dequeue(c, p, DequeueSleep)
	b.Unlock(c)
	if len(got) != 2 || got[0] != check.InvOneQueue || got[1] != check.InvOneQueue {
		t.Fatalf("reported %v, want two one-queue violations", got)
	}
	if a.NrRunning() != 1 || b.NrRunning() != 0 || len(a.Tasks()) != 1 {
		t.Fatalf("queues changed by the rejected operations: rq0 %d (%d tasks), rq1 %d", a.NrRunning(), len(a.Tasks()), b.NrRunning())
	}
}

// set_task_cpu's state WARNs (proxy_set_task_cpu, keepWakeCPU, has none):
// a sleeper moved while not TASK_WAKING, a queued running fair task moved
// while not MIGRATING. Each is reported; the legal moves are not.
func TestSetTaskCPUWarns(t *testing.T) {
	var got []string
	c := testCtx(0, nil)
	c.Stats = &stats.CPU{}
	c.Trace = trace.NewLog(1, 64).Rings[0]
	c.OnWarn = func(_ *percpu.Ctx, inv check.Invariant, _ int, _, msg string) { got = append(got, msg) }
	p := task.New(1, "p", 4, 0)
	p.SetState(task.Interruptible) // asleep, on_rq 0
	SetTaskCPU(c, p, 1, false, 0)
	SetTaskCPU(c, p, 2, true, 0) // proxy_set_task_cpu: allowed
	p.SetState(task.Waking)
	SetTaskCPU(c, p, 3, false, 0) // ttwu's move: allowed
	p.SetState(task.Running)
	p.SetOnRQ(task.OnRQQueued)
	SetTaskCPU(c, p, 0, false, 0)
	p.SetOnRQ(task.OnRQMigrating)
	SetTaskCPU(c, p, 1, false, 0) // a migration: allowed
	if len(got) != 2 || !strings.Contains(got[0], "while asleep") || !strings.Contains(got[1], "not MIGRATING") {
		t.Fatalf("WARNs %q, want the asleep move and the queued running move", got)
	}
}

package rq

import (
	"testing"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// is_special_task_state (include/linux/sched.h) holds TASK_DEAD and
// TASK_WAKING among the model's states; no other state is special.
func TestIsSpecialTaskState(t *testing.T) {
	for st, want := range map[task.State]bool{
		task.Running: false, task.Interruptible: false, task.Uninterruptible: false,
		task.Killable: false, task.NewTask: false, task.Dead: true, task.Waking: true,
	} {
		if got := task.IsSpecialTaskState(st); got != want {
			t.Errorf("IsSpecialTaskState(%v) = %v, want %v", st, got, want)
		}
	}
}

// block_task adds DEQUEUE_SPECIAL for a special state, and dequeue_entity
// never delays a special dequeue: a fair task that is not eligible is
// kept queued (sched_delayed) by a TASK_INTERRUPTIBLE sleep, but leaves
// at once when blocked as TASK_WAKING (proxy_needs_return) or TASK_DEAD.
func TestBlockTaskSpecialNeverDelayed(t *testing.T) {
	for _, tc := range []struct {
		st      task.State
		delayed bool
	}{
		{task.Interruptible, true},
		{task.Uninterruptible, true},
		{task.Waking, false},
		{task.Dead, false},
	} {
		t.Run(tc.st.String(), func(t *testing.T) {
			r := newRQ(0)
			var got []check.Invariant
			c := warnCtx(0, nil, false, &got)
			c.Trace = trace.NewLog(1, 64).Rings[0]
			a := task.New(1, "A", 1, 0)
			b := task.New(2, "B", 1, 0)
			r.Lock(c)
			r.ActivateTask(c, a, EnqueueWakeup)
			r.ActivateTask(c, b, EnqueueWakeup)
			// A ran far ahead of V: not eligible.
			r.avgVruntimeSub(&a.SE)
			a.SE.Vruntime += 100 * FairSlice
			r.avgVruntimeAdd(&a.SE)
			if r.EntityEligible(a) {
				t.Fatal("setup: A is eligible")
			}
			left := r.BlockTask(c, a, tc.st)
			r.Unlock(c)
			if left == tc.delayed || a.SE.Delayed != tc.delayed || (a.OnRQ() == task.OnRQQueued) != tc.delayed {
				t.Fatalf("block_task(%v): left=%v sched_delayed=%v on_rq=%d, want delayed=%v", tc.st, left, a.SE.Delayed, a.OnRQ(), tc.delayed)
			}
			if len(got) != 0 {
				t.Fatalf("warnings: %v", got)
			}
		})
	}
}

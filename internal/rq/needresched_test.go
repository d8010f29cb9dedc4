package rq

import (
	"testing"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/task"
)

// TIF_NEED_RESCHED is a flag of the task, not of the CPU: resched_curr
// sets it on rq->curr, set_tsk_need_resched (proxy_resched_idle) on the
// idle task while another task is current, and a switch leaves each task
// with its own flag; need_resched() (NeedResched) reads curr's.
func TestNeedReschedIsPerTask(t *testing.T) {
	r := newRQ(0)
	var got []check.Invariant
	c := warnCtx(0, nil, false, &got)
	a := task.New(1, "A", 1, 0)
	b := task.New(2, "B", 1, 0)
	r.Lock(c)
	defer r.Unlock(c)
	r.SetCurr(c, a)
	r.ReschedCurr(c)
	if !a.TestTskNeedResched() || !r.NeedResched() {
		t.Fatal("resched_curr did not set rq->curr's flag")
	}
	r.SetCurr(c, b) // the switch; __schedule clears prev's flag only at picked:
	if r.NeedResched() {
		t.Fatal("B, just switched in, reads A's flag")
	}
	if !a.TestTskNeedResched() {
		t.Fatal("A's flag was lost with the switch")
	}
	r.Idle.SetTskNeedResched() // proxy_resched_idle while B is current
	if r.NeedResched() {
		t.Fatal("the idle task's flag reads as B's")
	}
	r.SetCurr(c, r.Idle)
	if !r.NeedResched() {
		t.Fatal("the idle task's flag is not seen once idle is current")
	}
	a.ClearTskNeedResched()
	if !r.NeedResched() {
		t.Fatal("clearing A's flag cleared the idle task's")
	}
	if len(got) != 0 {
		t.Fatalf("warnings: %v", got)
	}
}

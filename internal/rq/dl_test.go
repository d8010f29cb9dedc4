package rq

import (
	"testing"

	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

const dlMS = int64(1_000_000)

// dlSetup returns a locked runqueue at clock now and a DL task on it.
func dlSetup(t *testing.T, now int64, a task.DLParams) (*percpu.Ctx, *RQ, *task.Task) {
	t.Helper()
	c := &percpu.Ctx{CPU: spinlock.NewCPU(0), Stats: &stats.CPU{}, Trace: trace.NewLog(1, 64).Rings[0]}
	c.Now = now
	r := newRQ(0)
	r.StartDLTimer = func(_ *percpu.Ctx, _ *task.Task, when int64) uint64 { return 7 }
	p := task.New(1, "d", 4, 0)
	p.SetDL(a)
	r.Lock(c)
	r.UpdateClock(c)
	return c, r, p
}

// The CBS wakeup rule (update_dl_entity): a waking task keeps its
// deadline and budget when they fit its bandwidth, and gets a new period
// when they would overflow it or the deadline has passed.
func TestDLWakeupRule(t *testing.T) {
	a := task.DLParams{Runtime: 2 * dlMS, Deadline: 10 * dlMS, Period: 10 * dlMS}
	c, r, p := dlSetup(t, 100*dlMS, a)
	// 1 ms left with 8 ms to go: 1/8 < 2/10, no overflow: kept.
	p.SE.DL.Runtime, p.SE.DL.Deadline = 1*dlMS, 108*dlMS
	r.updateDLEntity(c, p)
	if p.SE.DL.Runtime != 1*dlMS || p.SE.DL.Deadline != 108*dlMS {
		t.Fatalf("fitting budget changed: runtime %d deadline %d", p.SE.DL.Runtime, p.SE.DL.Deadline)
	}
	// 1 ms left with 4 ms to go: 1/4 > 2/10: a new period from now.
	p.SE.DL.Runtime, p.SE.DL.Deadline = 1*dlMS, 104*dlMS
	r.updateDLEntity(c, p)
	if p.SE.DL.Runtime != 2*dlMS || p.SE.DL.Deadline != 110*dlMS {
		t.Fatalf("overflowing budget: runtime %d deadline %d, want 2ms and 110ms", p.SE.DL.Runtime, p.SE.DL.Deadline)
	}
	// A deadline in the past: a new period.
	p.SE.DL.Runtime, p.SE.DL.Deadline = 1*dlMS, 99*dlMS
	r.updateDLEntity(c, p)
	if p.SE.DL.Deadline != 110*dlMS {
		t.Fatalf("past deadline kept: %d", p.SE.DL.Deadline)
	}
}

// The revised rule for a constrained deadline (deadline < period): the
// budget is cut to density x laxity instead of a new period.
func TestDLRevisedWakeupRule(t *testing.T) {
	a := task.DLParams{Runtime: 2 * dlMS, Deadline: 5 * dlMS, Period: 10 * dlMS}
	c, r, p := dlSetup(t, 100*dlMS, a)
	p.SE.DL.Runtime, p.SE.DL.Deadline = 2*dlMS, 102*dlMS // 2 ms in 2 ms: overflows 2/5
	r.updateDLEntity(c, p)
	want := (task.ToRatio(5*dlMS, 2*dlMS) * 2 * dlMS) >> task.BWShift // 0.4 x 2 ms
	if p.SE.DL.Deadline != 102*dlMS || p.SE.DL.Runtime != want {
		t.Fatalf("revised rule: runtime %d deadline %d, want %d and 102ms", p.SE.DL.Runtime, p.SE.DL.Deadline, want)
	}
}

// update_curr_dl charges the donor's budget and throttles it at zero:
// off the tree, out of nr_running, timer armed at the next period; the
// replenishment pays the overrun back and puts it back in the tree.
func TestDLThrottleAndReplenish(t *testing.T) {
	a := task.DLParams{Runtime: 2 * dlMS, Deadline: 10 * dlMS, Period: 10 * dlMS}
	c, r, p := dlSetup(t, 0, a)
	r.Enqueue(c, p, EnqueueWakeup)
	p.SetOnRQ(task.OnRQQueued)
	if !p.SE.DL.OnDLRQ || p.SE.DL.Runtime != 2*dlMS || p.SE.DL.Deadline != 10*dlMS || r.NrRunning() != 1 {
		t.Fatalf("first enqueue: %+v, nr_running %d", p.SE.DL, r.NrRunning())
	}
	r.SetDonor(c, p)
	r.SetNextTask(c)
	c.Now = 3 * dlMS // 1 ms past the budget before the update sees it
	r.UpdateCurr(c)
	if !p.SE.DL.Throttled || p.SE.DL.OnDLRQ || r.NrRunning() != 0 || !p.SE.DL.TimerQueued || !r.NeedResched() {
		t.Fatalf("not throttled: %+v nr_running %d need_resched %v", p.SE.DL, r.NrRunning(), r.NeedResched())
	}
	if p.SE.DL.Runtime != -1*dlMS {
		t.Fatalf("runtime %d, want -1ms", p.SE.DL.Runtime)
	}
	c.Now = 10 * dlMS
	r.SetDonor(c, r.Idle)
	if r.DLTimerFire(c, p, 0, 6) || !p.SE.DL.Throttled {
		t.Fatal("a timer that is not p's armed one replenished it")
	}
	if !r.DLTimerFire(c, p, 0, 7) {
		t.Fatal("the timer did not put the queued task back")
	}
	if p.SE.DL.Throttled || !p.SE.DL.OnDLRQ || p.SE.DL.Runtime != 1*dlMS || p.SE.DL.Deadline != 20*dlMS || r.NrRunning() != 1 {
		t.Fatalf("after replenishment: %+v nr_running %d; want runtime 1ms (2ms less the 1ms overrun), deadline 20ms", p.SE.DL, r.NrRunning())
	}
}

// EDF: the earliest deadline is picked, before any RT task.
func TestDLPickEarliestDeadline(t *testing.T) {
	a := task.DLParams{Runtime: 1 * dlMS, Deadline: 10 * dlMS, Period: 10 * dlMS}
	c, r, p := dlSetup(t, 0, a)
	q := task.New(2, "e", 4, 0)
	q.SetDL(task.DLParams{Runtime: 1 * dlMS, Deadline: 5 * dlMS, Period: 10 * dlMS})
	f := task.New(3, "f", 4, 0)
	f.SetRT(task.FIFO, 99)
	for _, x := range []*task.Task{f, p, q} {
		r.Enqueue(c, x, EnqueueWakeup)
	}
	if got := r.PickNextTask(c); got != q {
		t.Fatalf("picked %v, want the earliest deadline %v", got, q)
	}
	if r.EarliestDL() != 5*dlMS {
		t.Fatalf("cpudl entry %d, want 5ms", r.EarliestDL())
	}
}

// Admission control: total bandwidth within 95% of the CPUs.
func TestDLAdmission(t *testing.T) {
	c := &percpu.Ctx{CPU: spinlock.NewCPU(0)}
	b := NewDLBandwidth(1)
	p, q := task.New(1, "p", 1, 0), task.New(2, "q", 1, 0)
	half := task.DLParams{Runtime: 5 * dlMS, Deadline: 10 * dlMS, Period: 10 * dlMS}
	if !b.SchedDLOverflow(c, p, task.Deadline, half) {
		t.Fatal("50% of one CPU refused")
	}
	p.SetDL(half)
	if b.SchedDLOverflow(c, q, task.Deadline, half) {
		t.Fatal("100% of one CPU admitted")
	}
	if !b.SchedDLOverflow(c, q, task.Deadline, task.DLParams{Runtime: 4 * dlMS, Deadline: 10 * dlMS, Period: 10 * dlMS}) {
		t.Fatal("90% of one CPU refused")
	}
	if !b.SchedDLOverflow(c, p, task.Normal, task.DLParams{}) || b.PeekTotal() != task.ToRatio(10*dlMS, 4*dlMS) {
		t.Fatalf("leaving DL did not free the bandwidth: total %d", b.PeekTotal())
	}
}

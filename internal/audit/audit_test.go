package audit

import (
	"strings"
	"testing"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/mutex"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/task"
)

type view struct {
	rqs   []*rq.RQ
	tasks []*task.Task
}

func (v *view) NumCPUs() int            { return len(v.rqs) }
func (v *view) RQ(cpu int) *rq.RQ       { return v.rqs[cpu] }
func (v *view) Tasks() []*task.Task     { return v.tasks }
func (v *view) Mutexes() []*mutex.Mutex { return nil }
func (v *view) Now(cpu int) int64       { return 0 }
func (v *view) Busy(cpu int) int64      { return 0 }
func (v *view) StopperPending(int) bool { return false }
func (v *view) IPIPending(int) bool     { return false }
func (v *view) RetiredRuntime() int64   { return 0 }

func machine(ncpu int) *view {
	v := &view{tasks: []*task.Task{nil}}
	for i := 0; i < ncpu; i++ {
		idle := task.New(-(i + 1), "idle", ncpu, i)
		idle.Idle = true
		idle.SetOnCPU(true)
		v.rqs = append(v.rqs, rq.New(i, idle))
	}
	return v
}

// reported audits v and returns the messages of invariant inv's reports.
func reported(v *view, inv check.Invariant) []string {
	var out []string
	Audit(v, Config{Proxy: true}, func(vi check.Violation) {
		if vi.Invariant == inv {
			out = append(out, vi.Message)
		}
	})
	return out
}

func counts(v *view) []string { return reported(v, check.InvCounts) }

// nr_uninterruptible: one runqueue may go negative (blocked on cpu0, woken
// on cpu1), only the sum must match the sleepers that count in the load.
func TestNrUninterruptibleSum(t *testing.T) {
	v := machine(2)
	a := task.New(1, "a", 2, 0)
	a.SetState(task.Uninterruptible)
	a.ContributesToLoad = true
	b := task.New(2, "b", 2, 1)
	b.SetState(task.Interruptible)
	v.tasks = append(v.tasks, a, b)
	// a slept on cpu0; another task slept on cpu0 and woke on cpu1
	v.rqs[0].NrUninterruptible = 2
	v.rqs[1].NrUninterruptible = -1
	if got := counts(v); len(got) != 0 {
		t.Fatalf("balanced counts reported: %v", got)
	}
	// A wake-up that forgot to take its count back (the v31 class of
	// imbalance) is caught.
	v.rqs[1].NrUninterruptible = 0
	got := counts(v)
	if len(got) != 1 || !strings.Contains(got[0], "sums to 2") {
		t.Fatalf("imbalance: %v, want one counts violation naming the sum", got)
	}
	// So is a sleeper counted nowhere.
	v.rqs[0].NrUninterruptible = 0
	v.rqs[1].NrUninterruptible = 0
	if got := counts(v); len(got) != 1 {
		t.Fatalf("uncounted sleeper: %v", got)
	}
}

func violations(v *view, cfg Config, inv check.Invariant) []string {
	var out []string
	Audit(v, cfg, func(vi check.Violation) {
		if vi.Invariant == inv {
			out = append(out, vi.Message)
		}
	})
	return out
}

// Invariant 31: TASK_RUNNING never with is_blocked (ttwu_do_wakeup clears
// it with the state; --bug ttwu-keeps-blocked does not).
func TestRunningNotBlocked(t *testing.T) {
	v := machine(1)
	p := task.New(1, "p", 1, 0)
	p.SetState(task.Running)
	v.tasks = append(v.tasks, p)
	if got := violations(v, Config{Proxy: true}, check.InvRunningNotBlocked); len(got) != 0 {
		t.Fatalf("a plain running task reported: %v", got)
	}
	p.SetIsBlocked(true)
	if got := violations(v, Config{Proxy: true}, check.InvRunningNotBlocked); len(got) != 1 || !strings.Contains(got[0], "is_blocked") {
		t.Fatalf("RUNNING with is_blocked: %v, want one violation", got)
	}
}

// Invariant 10: a donor whose blocked_on was cleared (a hand-off) and that
// is still queued with is_blocked must be run, returned or deactivated
// within the bound.
func TestWokenDonorPlacedInTime(t *testing.T) {
	v := machine(1)
	p := task.New(1, "p", 1, 0)
	p.SetState(task.Uninterruptible)
	p.SetIsBlocked(true)
	p.SetOnRQ(task.OnRQQueued)
	p.UnblockedAt = 1_000
	v.tasks = append(v.tasks, p)
	cfg := Config{Proxy: true, WakingBound: 5_000, Horizon: 5_500}
	if got := violations(v, cfg, check.InvWakingReturns); len(got) != 0 {
		t.Fatalf("within the bound: %v", got)
	}
	cfg.Horizon = 7_000
	if got := violations(v, cfg, check.InvWakingReturns); len(got) != 1 || !strings.Contains(got[0], "blocked_on was cleared") {
		t.Fatalf("past the bound: %v, want one violation", got)
	}
	p.SetOnRQ(task.OnRQNone) // deactivated: its wake-up places it
	if got := violations(v, cfg, check.InvWakingReturns); len(got) != 0 {
		t.Fatalf("a deactivated donor reported: %v", got)
	}
	// A sleeper whose dequeue was delayed (DELAY_DEQUEUE) is queued with
	// its sleep's is_blocked and no blocked_on: asleep, not a woken
	// donor (core-flip-stale-pick's fixed form hit this at 205 ms).
	p.SetOnRQ(task.OnRQQueued)
	p.SE.Delayed = true
	if got := violations(v, cfg, check.InvWakingReturns); len(got) != 0 {
		t.Fatalf("a sched_delayed sleeper reported: %v", got)
	}
}

func refViolations(v *view) []string { return reported(v, check.InvTaskRefs) }

// Invariant 60: a parked waiter's link holds a reference to its sleeping
// owner; a reference nobody accounts for (a leak) and a link without its
// reference (a put without a get) are both reported.
func TestTaskRefsBalance(t *testing.T) {
	v := machine(1)
	o := task.New(1, "o", 1, 0)
	o.SetState(task.Interruptible)
	w := task.New(2, "w", 1, 0)
	w.SetState(task.Uninterruptible)
	v.tasks = append(v.tasks, o, w)
	if got := refViolations(v); len(got) != 0 {
		t.Fatalf("no links, own references only: %v", got)
	}
	// w parks on o: proxy_enqueue_on_owner's get_task_struct(o).
	o.GetTaskStruct()
	w.SleepingOwner.Store(o)
	if got := refViolations(v); len(got) != 0 {
		t.Fatalf("a parked waiter with its reference: %v", got)
	}
	// A link cleared without its put: o leaks a reference.
	w.SleepingOwner.Store(nil)
	if got := refViolations(v); len(got) != 1 || !strings.Contains(got[0], "o/1") || !strings.Contains(got[0], "holds 2 task references") {
		t.Fatalf("leaked reference: got %v, want one report naming o/1 with 2 references", got)
	}
	o.PutTaskStruct()
	// A link made without a get: o has one reference too few.
	w.SleepingOwner.Store(o)
	if got := refViolations(v); len(got) != 1 || !strings.Contains(got[0], "holds 1 task references at the barrier, want 2") {
		t.Fatalf("link without a reference: got %v", got)
	}
	w.SleepingOwner.Store(nil)
	// Reaped: the task's own reference is gone.
	w.SetState(task.Dead)
	w.Exec.Reaped = true
	if got := refViolations(v); len(got) != 1 || !strings.Contains(got[0], "w/2") {
		t.Fatalf("reaped task still holding its own reference: got %v", got)
	}
	w.PutTaskStruct()
	if got := refViolations(v); len(got) != 0 {
		t.Fatalf("reaped and put: %v", got)
	}
}

// A waiter parked on a sleeping owner must wait for a lock that owner
// holds (invariant 14), unless it has been woken: a TASK_WAKING waiter
// whose blocked_on a ww die cleared stays on the list until its
// activation takes it off (a 256-CPU deterministic stress, seed 5, met
// one on a wake list whose IPI waited for the next epoch).
func TestParkedOwnerWokenWaiter(t *testing.T) {
	v := machine(2)
	o := task.New(1, "owner", 2, 0)
	o.SetState(task.Interruptible)
	w := task.New(2, "waiter", 2, 1)
	w.SetState(task.Waking)
	w.LinkSleepingOwner(o)
	o.BlockedHead = append(o.BlockedHead, w)
	v.tasks = append(v.tasks, o, w)
	if got := reported(v, check.InvParkedOwner); len(got) != 0 {
		t.Fatalf("a woken waiter still on the list was reported: %v", got)
	}
	// Not woken, with no lock to wait for: a stale park.
	w.SetState(task.Interruptible)
	if got := reported(v, check.InvParkedOwner); len(got) != 1 {
		t.Fatalf("a sleeping waiter on the list with no blocked_on: %v, want one report", got)
	}
}

// Invariant 63 for a task off every queue: once do_exit has run, any
// state but TASK_DEAD means a waker stored over it (the plain store of
// TASK_DEAD that a try_to_wake_up past its state test overwrote with
// TASK_WAKING, docs/findings/withdrawn.md).
func TestExitedDeadOffQueue(t *testing.T) {
	v := machine(1)
	p := task.New(1, "p", 1, 0)
	p.Exec.Exited = true
	p.SetState(task.Dead)
	v.tasks = append(v.tasks, p)
	if got := reported(v, check.InvExitedDead); len(got) != 0 {
		t.Fatalf("an exited task, DEAD and off every queue: %v", got)
	}
	p.SetState(task.Waking)
	if got := reported(v, check.InvExitedDead); len(got) != 1 || !strings.Contains(got[0], "p/1 ran do_exit but is WAKING") {
		t.Fatalf("an exited task stored over with TASK_WAKING: got %v, want one report naming p/1 WAKING", got)
	}
}

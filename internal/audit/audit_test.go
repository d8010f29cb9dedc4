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

func counts(v *view) []string {
	var out []string
	Audit(v, Config{Proxy: true}, func(vi check.Violation) {
		if vi.Invariant == check.InvCounts {
			out = append(out, vi.Message)
		}
	})
	return out
}

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

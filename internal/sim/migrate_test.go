package sim

import (
	"testing"

	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/workload"
)

// migrateDisableRegions wraps whole critical sections and renumbers jumps:
// a loop back to a wrapped lock lands on its migrate_disable, and a
// section a jump leaves is not wrapped.
func TestMigrateDisableRegions(t *testing.T) {
	ops := []task.Op{
		{Kind: task.OpLock, Mutex: 0},             // 0: wrapped
		{Kind: task.OpCompute, Min: 1},            // 1
		{Kind: task.OpUnlock, Mutex: 0},           // 2
		{Kind: task.OpLock, Mutex: 1},             // 3: a choose leaves it: not wrapped
		{Kind: task.OpChoose, Prob: 0.5, Jump: 6}, // 4
		{Kind: task.OpUnlock, Mutex: 1},           // 5
		{Kind: task.OpLoop, Jump: 0},              // 6
	}
	prog := &task.Program{Ops: append([]task.Op(nil), ops...)}
	migrateDisableRegions([]workload.TaskPlan{{Prog: prog}}, 1, 1)
	want := []task.OpKind{task.OpMigrateDisable, task.OpLock, task.OpCompute, task.OpUnlock, task.OpMigrateEnable,
		task.OpLock, task.OpChoose, task.OpUnlock, task.OpLoop}
	if len(prog.Ops) != len(want) {
		t.Fatalf("got %d ops: %+v", len(prog.Ops), prog.Ops)
	}
	for i, k := range want {
		if prog.Ops[i].Kind != k {
			t.Fatalf("op %d is %s, want %s (%+v)", i, prog.Ops[i].Kind, k, prog.Ops)
		}
	}
	if j := prog.Ops[6].Jump; j != 8 {
		t.Errorf("choose jumps to %d, want 8 (the loop)", j)
	}
	if j := prog.Ops[8].Jump; j != 0 {
		t.Errorf("loop jumps to %d, want 0 (the migrate_disable)", j)
	}
}

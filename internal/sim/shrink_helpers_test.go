package sim

import (
	"slices"
	"testing"

	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/workload"
)

// The machine chain halves sockets, then LLCs, then cores, and SMT
// threads last: a candidate keeps siblings (core scheduling) and an LLC
// of several cores (SHARED_RUNQ) while it has room for them.
func TestHalvingsKeepShape(t *testing.T) {
	var got []string
	for _, tp := range halvings("2s-8llc-8c-2t") {
		got = append(got, tp.String())
	}
	want := []string{"1s-8llc-8c-2t", "1s-4llc-8c-2t", "1s-2llc-8c-2t", "1s-1llc-8c-2t", "1s-1llc-4c-2t", "1s-1llc-2c-2t", "1s-1llc-1c-2t", "1s-1llc-1c-1t"}
	if !slices.Equal(got, want) {
		t.Errorf("halvings of 2s-8llc-8c-2t:\n got %v\nwant %v", got, want)
	}
	if h := halvings("1s-1llc-3c-1t"); len(h) != 1 || h[0].NumCPUs() != 1 {
		t.Errorf("halvings of 3 cores: %v, want one CPU", h)
	}
}

// A machine candidate cuts every group, and the mutexes and ww_mutexes
// tasks draw at random, in proportion, but never below what a group
// draws (a group with three slots needs three mutexes).
func TestScaledInProportion(t *testing.T) {
	sc, err := workload.Builtin("stress", 256, 0)
	if err != nil {
		t.Fatal(err)
	}
	sc.CPUs = 256
	tps := halvings("2s-8llc-8c-2t")
	c := scaled(sc, tps[4]) // 8 CPUs
	if c.CPUs != 8 || c.Topology != "1s-1llc-4c-2t" {
		t.Fatalf("scaled to %d CPUs, %s", c.CPUs, c.Topology)
	}
	for i, g := range c.Groups {
		if want := max(1, (sc.Groups[i].Count*8+255)/256); g.Count != want {
			t.Errorf("group %s: %d tasks, want %d (of %d)", g.Name, g.Count, want, sc.Groups[i].Count)
		}
	}
	if len(c.Mutexes) != 3 { // 64/32 = 2, but writers draw 3
		t.Errorf("%d mutexes, want 3 (the most slots a group draws)", len(c.Mutexes))
	}
	for k, w := range c.WW {
		if w.Count != 3 {
			t.Errorf("ww set %s: %d ww_mutexes, want 3 (the ww slots drawn)", w.Name, w.Count)
		}
		if sc.WW[k].Count == w.Count {
			t.Errorf("ww set %s not cut", w.Name)
		}
	}
	if !valid(cand{c, Defaults()}) {
		t.Errorf("the scaled scenario does not plan")
	}
}

// Removing a group drops the instructions that target it and renumbers
// the targets after it.
func TestWithoutGroup(t *testing.T) {
	sc, err := workload.Builtin("stress", 8, 0)
	if err != nil {
		t.Fatal(err)
	}
	// writer (0) wakes narrow (1); sleeper (2) wakes writer (0)
	c := withoutGroup(sc, 1)
	if len(c.Groups) != len(sc.Groups)-1 || c.Groups[1].Name != "sleeper" {
		t.Fatalf("groups left: %d, second %s", len(c.Groups), c.Groups[1].Name)
	}
	for _, op := range c.Groups[0].Program {
		if op.Kind == task.OpWake {
			t.Errorf("writer still wakes a task of group %d", op.TargetGroup)
		}
	}
	if len(c.Groups[0].Program) != len(sc.Groups[0].Program)-1 {
		t.Errorf("writer has %d steps, want %d", len(c.Groups[0].Program), len(sc.Groups[0].Program)-1)
	}
	c = withoutGroup(sc, 0)
	for _, op := range c.Groups[1].Program { // sleeper, now group 1
		if op.Kind == task.OpWake {
			t.Errorf("sleeper still wakes group %d", op.TargetGroup)
		}
	}
	if _, err := c.Plan(8, 1); err != nil {
		t.Errorf("the scenario without writers does not plan: %v", err)
	}
	if _, err := withoutGroup(sc, 5).Plan(8, 1); err != nil {
		t.Errorf("the scenario without the deadline group does not plan: %v", err)
	}
}

// reachable follows a choose fixed at 0 or 1 one way only, and a forever
// loop only back.
func TestReachable(t *testing.T) {
	op := func(k task.OpKind, jump int, prob float64) workload.Op {
		return workload.Op{Op: task.Op{Kind: k, Jump: jump, Prob: prob}, TargetGroup: -1}
	}
	p := []workload.Op{
		/* 0 */ op(task.OpCompute, 0, 0),
		/* 1 */ op(task.OpChoose, 3, 1), // always to 3
		/* 2 */ op(task.OpCompute, 0, 0), // unreachable
		/* 3 */ op(task.OpChoose, 6, 0), // never jumps
		/* 4 */ op(task.OpChoose, 0, 0.5),
		/* 5 */ op(task.OpLoop, 0, 0), // forever
		/* 6 */ op(task.OpCompute, 0, 0), // unreachable
	}
	want := []bool{true, true, false, true, true, true, false}
	if got := reachable(p); !slices.Equal(got, want) {
		t.Errorf("reachable: %v, want %v", got, want)
	}
}

// Unused mutexes go and the programs' references follow.
func TestWithMutexes(t *testing.T) {
	lock := func(m int) workload.Op {
		return workload.Op{Op: task.Op{Kind: task.OpLock, Mutex: m}, TargetGroup: -1}
	}
	unlock := func(m int) workload.Op {
		return workload.Op{Op: task.Op{Kind: task.OpUnlock, Mutex: m}, TargetGroup: -1}
	}
	sc := &workload.Scenario{Mutexes: []string{"a", "b", "c"}, Groups: []workload.Group{
		{Name: "g", Count: 1, Program: []workload.Op{lock(2), unlock(2)}},
	}}
	u := mutexUse(sc)
	if u.pool || !slices.Equal(u.used, []bool{false, false, true}) {
		t.Fatalf("mutexUse: pool %v, used %v", u.pool, u.used)
	}
	c := withMutexes(sc, u.used)
	if !slices.Equal(c.Mutexes, []string{"c"}) || c.Groups[0].Program[0].Mutex != 0 || c.Groups[0].Program[1].Mutex != 0 {
		t.Errorf("kept %v, program locks %d and %d", c.Mutexes, c.Groups[0].Program[0].Mutex, c.Groups[0].Program[1].Mutex)
	}
	if len(sc.Mutexes) != 3 || sc.Groups[0].Program[0].Mutex != 2 {
		t.Errorf("withMutexes changed its input")
	}
}

//go:build mutants

package cpu

import (
	"fmt"
	"strings"
	"testing"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
)

// policyChild runs the stress workload (fair writers boosted to FIFO 30
// and back, FIFO 40 narrow tasks, deadline tasks) clean, then with the
// mistake that on switches on, and wants invariant 65 first.
func policyChild(t *testing.T, on func(bool), want string) {
	childOnly(t)
	cfg := DefaultConfig()
	cfg.CPUs, cfg.SimTime, cfg.Seed, cfg.AuditEvery = 8, 200_000_000, 3, 5
	clean := newWorkloadMachine(t, cfg, "stress", 24)
	clean.Run()
	if vs := clean.Rep.Violations(); len(vs) > 0 {
		t.Fatalf("control run broke invariants: %v", vs[0])
	}
	on(true)
	defer on(false)
	m := newWorkloadMachine(t, cfg, "stress", 24)
	m.Run()
	vs := m.Rep.Violations()
	if len(vs) == 0 {
		t.Fatalf("%s went unnoticed", want)
	}
	if vs[0].Invariant != check.InvDonorOutranked {
		t.Fatalf("caught as %v, want donor-outranked first: %v", names(vs), vs[0])
	}
	t.Logf("caught at t=%d ns: %v", vs[0].Time, vs[0])
}

// TestMutantChildRTPrioInverted runs only as the child of
// TestDonorOutrankedCatchesMistakes: wakeup_preempt comparing two RT
// priorities the wrong way round is reported at the wake-up.
func TestMutantChildRTPrioInverted(t *testing.T) {
	policyChild(t, func(on bool) { rq.SetMutant("rt-prio-inverted", on) },
		"an RT wake-up that does not preempt a lower RT donor")
}

// pushMachine is every CPU but cpu0 busy with a pinned fair hog, and on
// cpu0 a FIFO 50 task B (free to move) that a pinned FIFO 90 task A
// preempts at 2 ms for 3 ms: B is then queued behind A, and push_rt_tasks moves
// it to a CPU whose donor is a fair hog, which B outranks; nothing on
// that CPU would reschedule for it (the hog is alone in the fair class),
// so only the push's resched_curr runs it.
func pushMachine(t *testing.T) *Machine {
	cfg := DefaultConfig()
	cfg.CPUs, cfg.SimTime, cfg.Seed, cfg.AuditEvery = 4, 30_000_000, 3, 1
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hog := &task.Program{Ops: []task.Op{{Kind: task.OpCompute, Min: 1e9}, {Kind: task.OpLoop}}}
	for cpu := 1; cpu < cfg.CPUs; cpu++ {
		if _, err := m.AddTask(TaskSpec{Name: fmt.Sprintf("hog%d", cpu), Policy: task.Normal, Mask: task.MaskOf(cpu), Prog: hog, CPU: cpu, Seed: uint64(cpu)}); err != nil {
			t.Fatal(err)
		}
	}
	// B first: it sleeps 10 us, then computes on cpu0 (idle by then).
	b := &task.Program{Ops: []task.Op{{Kind: task.OpSleep, Min: 10_000}, {Kind: task.OpCompute, Min: 5_000_000}, {Kind: task.OpSleep, Min: 100_000}, {Kind: task.OpLoop, Jump: 1}}}
	if _, err := m.AddTask(TaskSpec{Name: "B", Policy: task.FIFO, Prio: 50, Mask: task.MaskAll(cfg.CPUs), Prog: b, CPU: 0, Seed: 11}); err != nil {
		t.Fatal(err)
	}
	// A wakes on cpu0 at 2 ms, when every hog runs, and preempts B.
	a := &task.Program{Ops: []task.Op{{Kind: task.OpSleep, Min: 2_000_000}, {Kind: task.OpCompute, Min: 3_000_000}, {Kind: task.OpLoop}}}
	if _, err := m.AddTask(TaskSpec{Name: "A", Policy: task.FIFO, Prio: 90, Mask: task.MaskOf(0), Prog: a, CPU: 0, Seed: 10}); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMutantChildPushNoResched runs only as the child of
// TestDonorOutrankedCatchesMistakes: a push that forgets resched_curr
// on its target is reported by the target's tick (wakeup_preempt never
// runs for it, and the target is busy, so the idle audit does not see it).
func TestMutantChildPushNoResched(t *testing.T) {
	childOnly(t)
	clean := pushMachine(t)
	clean.Run()
	if vs := clean.Rep.Violations(); len(vs) > 0 {
		t.Fatalf("control run broke invariants: %v", vs[0])
	}
	var n uint64
	for _, st := range clean.Stats {
		n += st.C[stats.RTPushes].Load()
	}
	if n == 0 {
		t.Fatal("the control run pushed no RT task: the mutant would have nothing to break")
	}
	mutations.pushNoResched = true
	defer func() { mutations.pushNoResched = false }()
	m := pushMachine(t)
	m.Run()
	vs := m.Rep.Violations()
	if len(vs) == 0 {
		var pm uint64
		for _, st := range m.Stats {
			pm += st.C[stats.RTPushes].Load()
		}
		t.Fatalf("an RT push without resched_curr on its target went unnoticed (%d pushes)", pm)
	}
	if vs[0].Invariant != check.InvDonorOutranked || !strings.Contains(vs[0].Message, "since t=") {
		t.Fatalf("caught as %v, want donor-outranked at the tick first: %v", names(vs), vs[0])
	}
	t.Logf("caught at t=%d ns after %d pushes in the control run: %v", vs[0].Time, n, vs[0])
}

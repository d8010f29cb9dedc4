package cpu

import (
	"strings"
	"testing"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
)

// The audit's half of invariant 48: a task left queued on a CPU that is
// offline is reported (here the CPU is marked offline under a queued
// task, as the pre-v16 return migration would leave one).
func TestAuditOfflineCPUQueued(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CPUs = 2
	cfg.Hotplug = true
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	prog := &task.Program{Ops: []task.Op{{Kind: task.OpCompute, Min: 1_000_000}}}
	if _, err := m.AddTask(TaskSpec{Name: "t", Mask: task.MaskAll(2), Prog: prog, CPU: 1}); err != nil {
		t.Fatal(err)
	}
	m.Audit()
	if m.Rep.Failed() {
		t.Fatalf("clean machine: %v", m.Rep.Violations())
	}
	m.active[1].Store(false)
	m.online[1].Store(false)
	m.Audit()
	vs := m.Rep.Violations()
	if len(vs) == 0 || vs[0].Invariant != check.InvOffline || !strings.Contains(vs[0].Message, "offline cpu1") {
		t.Fatalf("want invariant 48 on cpu1, got %v", vs)
	}
}

// A short run with CPUs going down and up every 500us of virtual time:
// CPUs go offline and come back, tasks are pushed off dying CPUs, and no
// invariant breaks.
func TestHotplugRunClean(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CPUs = 8
	cfg.SimTime = 60_000_000
	cfg.AuditEvery = 1
	cfg.HotplugEvery = 500_000
	cfg.ShuffleEvery = 2_000_000
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.AddMutex("a")
	prog := &task.Program{Ops: []task.Op{
		{Kind: task.OpCompute, Min: 50_000, Max: 200_000},
		{Kind: task.OpMigrateDisable},
		{Kind: task.OpLock, Mutex: 0},
		{Kind: task.OpCompute, Min: 20_000, Max: 100_000},
		{Kind: task.OpUnlock, Mutex: 0},
		{Kind: task.OpMigrateEnable},
		{Kind: task.OpSleep, Min: 50_000, Max: 300_000},
		{Kind: task.OpLoop, Jump: 0},
	}}
	for i := 0; i < 16; i++ {
		pol, prio := task.Normal, 0
		if i%4 == 0 {
			pol, prio = task.FIFO, 10+i
		}
		if _, err := m.AddTask(TaskSpec{Name: "w", Policy: pol, Prio: prio, Mask: task.MaskAll(8), Prog: prog, CPU: i % 8, Seed: uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	m.Run()
	if m.Rep.Failed() {
		t.Fatalf("violations: %v", m.Rep.Violations())
	}
	var off, on, pushed uint64
	for _, s := range m.Stats {
		off += s.C[stats.HotplugOffline].Load()
		on += s.C[stats.HotplugOnline].Load()
		pushed += s.C[stats.HotplugPushed].Load()
	}
	if off == 0 || on == 0 {
		t.Fatalf("no hotplug cycles: %d offline, %d online", off, on)
	}
	t.Logf("offline %d, online %d, pushed %d", off, on, pushed)
}

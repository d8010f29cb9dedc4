package cpu

import (
	"fmt"
	"testing"

	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
)

func TestSmoke(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CPUs = 4
	cfg.SimTime = 200_000_000
	cfg.AuditEvery = 1
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.AddMutex("a")
	m.AddMutex("b")
	prog := &task.Program{Ops: []task.Op{
		{Kind: task.OpCompute, Min: 100_000, Max: 500_000},
		{Kind: task.OpLock, Mutex: 0},
		{Kind: task.OpCompute, Min: 50_000, Max: 200_000},
		{Kind: task.OpLock, Mutex: 1},
		{Kind: task.OpSleep, Min: 100_000, Max: 300_000},
		{Kind: task.OpUnlock, Mutex: 1},
		{Kind: task.OpUnlock, Mutex: 0},
		{Kind: task.OpSleep, Min: 100_000, Max: 1_000_000},
		{Kind: task.OpLoop, Jump: 0},
	}}
	for i := 0; i < 12; i++ {
		pol, prio := task.Normal, 0
		if i%4 == 0 {
			pol, prio = task.FIFO, 10+i
		}
		mask := task.MaskAll(4)
		if i%3 == 0 {
			mask = task.MaskOf(i % 4)
		}
		if _, err := m.AddTask(TaskSpec{Name: "w", Policy: pol, Prio: prio, Mask: mask, Prog: prog, CPU: mask.Next(0), Seed: uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	m.Run()
	for _, v := range m.Rep.Violations() {
		t.Errorf("violation: %v", v)
		if !m.Stuck {
			for _, e := range m.Log.Merged(0) {
				if int(e.Task) == v.Task || int(e.A) == v.Task {
					t.Log(e.Format(func(i int32) string { return fmt.Sprint(i) }))
				}
			}
		}
		break
	}
	// Something ran: the machine reached its virtual time, every task ran
	// and took its locks, and proxy execution had work.
	if r := m.StopReason(); r != "" {
		t.Errorf("stopped early: %s", r)
	}
	var now int64
	for _, st := range m.Stats {
		now = max(now, st.SimTime.Load())
	}
	// CPUs idle in the last epoch are released at the final barrier
	// without advancing their clocks: the latest clock is within an
	// epoch of the end.
	if now < cfg.SimTime-cfg.Epoch {
		t.Errorf("virtual time %d ns, want at least %d", now, cfg.SimTime-cfg.Epoch)
	}
	for _, p := range m.Tasks() {
		if p != nil && (p.SE.SumExecRuntime == 0 || p.Stats.Acquires == 0) {
			t.Errorf("%v ran %d ns and took %d locks", p, p.SE.SumExecRuntime, p.Stats.Acquires)
		}
	}
	for _, k := range []stats.Counter{stats.ContextSwitches, stats.Wakeups, stats.MutexContentions, stats.FindProxyTaskCalls, stats.Audits} {
		if stats.Sum(m.Stats, k) == 0 {
			t.Errorf("counter %s is 0", stats.CounterNames[k])
		}
	}
	t.Logf("stop=%q switches=%d wakeups=%d fpt=%d migr=%d park=%d act=%d ret=%d", m.StopReason(),
		stats.Sum(m.Stats, stats.ContextSwitches), stats.Sum(m.Stats, stats.Wakeups), stats.Sum(m.Stats, stats.FindProxyTaskCalls),
		stats.Sum(m.Stats, stats.ProxyMigrations), stats.Sum(m.Stats, stats.SleepingOwnerEnqueues), stats.Sum(m.Stats, stats.BlockedWaiterActivations), stats.Sum(m.Stats, stats.ReturnMigrations))
}

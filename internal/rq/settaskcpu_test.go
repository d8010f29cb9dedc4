package rq

import (
	"testing"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// set_task_cpu's hotplug and migrate_disable WARNs: a move to an offline
// CPU is invariant 48; a move of a migrate-disabled task is invariant 49
// unless it is the reference's proxy exemption (proxy execution on, the
// task is_blocked and away from its wake_cpu); proxy_set_task_cpu
// (keepWakeCPU) has neither WARN.
func TestSetTaskCPUHotplugWarns(t *testing.T) {
	var got []check.Invariant
	online := []bool{true, true, false}
	c := &percpu.Ctx{CPU: spinlock.NewCPU(0), Trace: trace.NewLog(1, 64).Rings[0], Stats: &stats.CPU{}, Proxy: true,
		OnWarn:    func(_ *percpu.Ctx, inv check.Invariant, _ int, _, _ string) { got = append(got, inv) },
		CPUOnline: func(cpu int) bool { return online[cpu] }}
	expect := func(what string, want ...check.Invariant) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: WARNs %v, want %v", what, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: WARNs %v, want %v", what, got, want)
			}
		}
		got = nil
	}
	p := task.New(1, "p", 3, 0)
	p.SetState(task.Waking)

	SetTaskCPU(c, p, 1, false, trace.ReasonWake)
	expect("waking task to an online CPU")
	SetTaskCPU(c, p, 2, false, trace.ReasonWake)
	expect("waking task to an offline CPU", check.InvOffline)

	p.SetCPU(0)
	p.WakeCPU = 0
	p.MigrationDisabled = 1
	SetTaskCPU(c, p, 1, false, trace.ReasonWake)
	expect("migrate-disabled task at home", check.InvMigrateDisabled)

	// Proxy-migrated to cpu1 (wake_cpu 0 kept), still is_blocked: the
	// wake-up's set_task_cpu back home is the exemption.
	SetTaskCPU(c, p, 0, false, trace.ReasonWake)
	expect("setup", check.InvMigrateDisabled)
	SetTaskCPU(c, p, 1, true, trace.ReasonProxy)
	expect("proxy_set_task_cpu of a migrate-disabled donor")
	p.SetIsBlocked(true)
	SetTaskCPU(c, p, 0, false, trace.ReasonReturn)
	expect("return of a proxy-migrated migrate-disabled donor")

	// Not is_blocked any more (woken in place, then moved): no exemption.
	p.SetCPU(1)
	p.WakeCPU = 0
	p.SetIsBlocked(false)
	SetTaskCPU(c, p, 0, false, trace.ReasonReturn)
	expect("migrate-disabled task that is not blocked", check.InvMigrateDisabled)

	// Proxy execution off: no exemption either.
	c.Proxy = false
	p.SetCPU(1)
	p.WakeCPU = 0
	p.SetIsBlocked(true)
	SetTaskCPU(c, p, 0, false, trace.ReasonReturn)
	expect("proxy execution off", check.InvMigrateDisabled)
}

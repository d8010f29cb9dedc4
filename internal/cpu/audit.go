// This file is the stop-the-world audit hook (package audit does the checking).

package cpu

import (
	"fmt"

	"github.com/proxysim/proxysim/internal/audit"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
)

// audit runs the stop-the-world invariant checks. Every CPU is parked at
// the barrier (the caller holds the barrier lock).
func (m *Machine) audit(horizon int64) {
	m.Stats[0].Inc(stats.Audits)
	audit.Audit(m, audit.Config{Proxy: m.cfg.Proxy, SleepingOwners: m.cfg.SleepingOwners, Horizon: horizon, WakingBound: m.cfg.WakingBound, ProgressBound: m.cfg.ProgressBound},
		func(v check.Violation) {
			v.Seq = m.Log.Seq()
			m.Rep.Report(v)
		})
	if m.cfg.CoreSched != CoreOff {
		m.auditCore(horizon)
	}
	if m.srq != nil {
		m.auditSRQ(func(inv check.Invariant, cpu int, p *task.Task, msg string) {
			v := check.Violation{Invariant: inv, CPU: cpu, Time: horizon, Message: msg, Seq: m.Log.Seq()}
			if p != nil {
				v.Task, v.TaskName = p.ID, p.String()
			}
			m.Rep.Report(v)
		})
		for cpu, r := range m.rqs {
			if d := r.PeekDonor(); d != r.Idle && d.CPU() != cpu {
				m.Rep.Report(check.Violation{Invariant: check.InvNoStaleRef, CPU: cpu, Time: horizon, Task: d.ID, TaskName: d.String(), Seq: m.Log.Seq(),
					Message: fmt.Sprintf("cpu%d's rq->donor %v is on cpu%d (dangling donor)", cpu, d, d.CPU())})
			}
		}
	}
	m.auditHotplug()
	m.checkLiveness(horizon)
}

// Audit runs the audit on a stopped machine (tests, final check), as of
// the latest CPU clock.
func (m *Machine) Audit() {
	var now int64
	for _, cp := range m.cpus {
		if cp.c.Now > now {
			now = cp.c.Now
		}
	}
	m.rcuBarrierPuts() // no CPU is inside a step: a grace period
	m.audit(now)
}

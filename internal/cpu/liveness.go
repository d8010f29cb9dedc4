// This file feeds the liveness checks of package audit (lost hand-offs,
// wait ages, lost wake-ups, run-scaled progress, livelock): what they
// read of the CPUs beyond the runqueues. No kernel file: these are the
// simulator's own detectors.

package cpu

import (
	"fmt"

	"github.com/proxysim/proxysim/internal/audit"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/mutex"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// liveView is the machine as the liveness checks see it at one audit
// (every CPU parked).
type liveView struct {
	*Machine
	pending map[*task.Task]bool
	grants  map[grantKey]trace.Event
}

type grantKey struct{ task, mutex int32 }

// WakePending: p is on a CPU's wake list or has an armed timer.
func (v *liveView) WakePending(p *task.Task) bool {
	if v.pending == nil {
		v.pending = map[*task.Task]bool{}
		for _, cp := range v.cpus {
			for q := cp.wakeList.Load(); q != nil; q = q.WakeEntry.Load() {
				v.pending[q] = true
			}
			for _, tm := range cp.timers {
				v.pending[tm.p] = true
			}
		}
	}
	return v.pending[p]
}

// RePicks sums context switches and empty picks over the CPUs.
func (v *liveView) RePicks() (switches, repicks uint64) {
	for _, st := range v.Stats {
		switches += st.C[stats.ContextSwitches].Load()
		repicks += st.C[stats.FindProxyTaskRetries].Load() + st.C[stats.ProxyReschedIdle].Load()
	}
	return switches, repicks
}

// Grant finds the latest event in the flight recorder that gave m to p.
func (v *liveView) Grant(p *task.Task, m *mutex.Mutex) string {
	if v.grants == nil {
		v.grants = map[grantKey]trace.Event{}
		for _, r := range v.Log.Rings {
			for _, e := range r.Events() {
				var k grantKey
				switch e.Kind {
				case trace.EvHandoff, trace.EvLock:
					k = grantKey{e.Task, e.A}
				case trace.EvUnlock:
					if e.B == 0 {
						continue
					}
					k = grantKey{e.B, e.A}
				default:
					continue
				}
				if old, ok := v.grants[k]; !ok || e.Seq > old.Seq {
					v.grants[k] = e
				}
			}
		}
	}
	e, ok := v.grants[grantKey{int32(p.ID), int32(m.ID())}]
	if !ok {
		return ""
	}
	how := map[trace.Kind]string{trace.EvHandoff: "hand-off to it", trace.EvLock: "its acquisition", trace.EvUnlock: "unlock naming it next owner"}[e.Kind]
	return fmt.Sprintf("event #%d (%s, %s) on cpu%d at t=%d", e.Seq, e.Kind, how, e.CPU, e.Time)
}

// checkLiveness runs the liveness checks at an audit (every CPU parked).
func (m *Machine) checkLiveness(horizon int64) {
	lc := mutantLiveConfig(m.cfg.Live)
	if lc == (audit.LiveConfig{}) {
		return
	}
	if m.live == nil {
		m.live = audit.NewLiveness(lc)
	}
	m.live.Check(&liveView{Machine: m}, horizon, func(v check.Violation) {
		v.Seq = m.Log.Seq()
		m.Rep.Report(v)
	})
}

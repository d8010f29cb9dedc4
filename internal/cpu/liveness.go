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
	pending     map[*task.Task]bool
	grantsFresh bool // grantIdx has read this audit's new events
}

type grantKey struct{ task, mutex int32 }

// grantIndex is the flight recorder's latest grant event per (task,
// mutex), for invariant 33's messages. It lives across audits and each
// audit reads only what the rings recorded since the one before, so its
// cost follows the events, not the rings' size times the CPUs (rebuilding
// it from every ring at each audit that met a new grant was a fifth of the
// cost of an event at 1024 CPUs). Audits only (every CPU parked).
type grantIndex struct {
	read    []uint64 // per ring: the position indexed up to (Ring.Written)
	latest  map[grantKey]trace.Event
	pruneAt int // prune overwritten entries when latest grows past this
}

// update indexes the rings' new events.
func (g *grantIndex) update(l *trace.Log) {
	if g.latest == nil {
		g.read, g.latest, g.pruneAt = make([]uint64, len(l.Rings)), map[grantKey]trace.Event{}, 1024
	}
	for i, r := range l.Rings {
		g.read[i] = r.Since(g.read[i], func(e *trace.Event) {
			var k grantKey
			switch e.Kind {
			case trace.EvHandoff, trace.EvLock:
				k = grantKey{e.Task, e.A}
			case trace.EvUnlock:
				if e.B == 0 {
					return
				}
				k = grantKey{e.B, e.A}
			default:
				return
			}
			if old, ok := g.latest[k]; !ok || e.Seq > old.Seq {
				g.latest[k] = *e
			}
		})
	}
	if len(g.latest) > g.pruneAt {
		for k, e := range g.latest {
			if !l.Rings[e.CPU].Holds(&e) {
				delete(g.latest, k)
			}
		}
		g.pruneAt = max(1024, 2*len(g.latest))
	}
}

// Grant finds the latest event that gave m to p, if the flight recorder
// still holds it.
func (v *liveView) Grant(p *task.Task, m *mutex.Mutex) string {
	if !v.grantsFresh {
		v.grantIdx.update(v.Log)
		v.grantsFresh = true
	}
	e, ok := v.grantIdx.latest[grantKey{int32(p.ID), int32(m.ID())}]
	if !ok || !v.Log.Rings[e.CPU].Holds(&e) {
		return ""
	}
	how := map[trace.Kind]string{trace.EvHandoff: "hand-off to it", trace.EvLock: "its acquisition", trace.EvUnlock: "unlock naming it next owner"}[e.Kind]
	return fmt.Sprintf("event #%d (%s, %s) on cpu%d at t=%d", e.Seq, e.Kind, how, e.CPU, e.Time)
}

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

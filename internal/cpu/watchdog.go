// This file is the wall-clock watchdog of a concurrent run (no kernel file: the
// softlockup detector's role for the simulator itself).

package cpu

import (
	"fmt"
	"runtime"
	"time"

	"github.com/proxysim/proxysim/internal/check"
)

// watch is the watchdog: it enforces the wall-clock limit and reports a
// hang when no epoch completes for HangTimeout.
func (m *Machine) watch(finished chan struct{}) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var limit <-chan time.Time
	if m.cfg.WallLimit > 0 {
		t := time.NewTimer(m.cfg.WallLimit)
		defer t.Stop()
		limit = t.C
	}
	last, lastChange := m.epochs.Load(), time.Now()
	var stopAt time.Time
	for {
		select {
		case <-finished:
			return
		case <-m.stopReq:
			m.bar.stop()
			m.runner.stop()
		case <-limit:
			m.Stop("wall-clock limit reached")
			limit = nil
		case now := <-tick.C:
			if e := m.epochs.Load(); e != last {
				last, lastChange = e, now
			}
			if m.stopping.Load() {
				if stopAt.IsZero() {
					stopAt = now
				}
				if now.Sub(stopAt) > 5*time.Second {
					// CPUs stuck in a lock or a spin: give up on them.
					m.Stuck = true
					if m.HangDump == "" {
						m.HangDump = allStacks()
					}
					return
				}
				continue
			}
			// Deterministic runs must not depend on the host's speed: there
			// the conductor's turn-count watchdog reports livelocks.
			if m.cfg.HangTimeout > 0 && !m.runner.deterministic() && now.Sub(lastChange) > m.cfg.HangTimeout {
				m.HangDump = allStacks()
				m.warn(nil, check.InvHang, -1, "", fmt.Sprintf("no epoch completed for %v of real time (epoch %d): CPUs stuck in a lock, a spin or a livelock", m.cfg.HangTimeout, last))
			}
		}
	}
}

func allStacks() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		if len(buf) >= 64<<20 {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

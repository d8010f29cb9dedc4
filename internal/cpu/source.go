// This file is read-only views of the machine for metrics and reports.

package cpu

import (
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
)

// What a metrics scrape may read while the machine runs: only atomics
// (per-CPU counter blocks, published clocks, nr_running) and the
// violation reporter, which has its own lock. Nothing here stops a CPU.

// CPUStats returns the per-CPU counter blocks.
func (m *Machine) CPUStats() []*stats.CPU { return m.Stats }

// LockStats returns the per-CPU lock contexts (contention counters).
func (m *Machine) LockStats() []*spinlock.CPU {
	out := make([]*spinlock.CPU, len(m.cpus))
	for i, cp := range m.cpus {
		out[i] = cp.c.CPU
	}
	return out
}

// ViolationCounts returns violations seen so far, by invariant.
func (m *Machine) ViolationCounts() map[check.Invariant]uint64 { return m.Rep.Counts() }

// EventCount returns the flight recorder's global sequence number: every
// event recorded so far.
func (m *Machine) EventCount() uint64 { return m.Log.Seq() }

// NrRunning returns each CPU's nr_running (READ_ONCE).
func (m *Machine) NrRunning() []int {
	out := make([]int, len(m.rqs))
	for i, r := range m.rqs {
		out[i] = r.NrRunning()
	}
	return out
}

// This file is the epoch barrier of lockstep mode (no kernel file).

package cpu

import (
	"sync"
	"sync/atomic"
)

// barrier is the epoch barrier (lockstep mode). Every CPU runs until its
// clock reaches the horizon, or until it is idle with nothing due before
// the horizon, then arrives. The last to arrive runs the epoch hooks (the
// audit) with every other CPU parked, moves the horizon on by one epoch and
// releases everyone.
//
// An IPI to a parked CPU un-arrives it so that it can take the interrupt
// within the current epoch: the sender is itself running, so the epoch
// cannot end before the target has handled it. An IPI sent at or past
// the horizon (a CPU whose schedule or lock work overshot it) waits for
// the next epoch: its sender is done with this one.
//
//	sender                          target
//	ipi |= kind                     arrived = true
//	if arrived: lock, un-arrive     if ipi != 0: un-arrive itself
//
// Both sides store, then load (sequentially consistent atomics), so at
// least one of them sees the other: no IPI is left waiting for an epoch.
type barrier struct {
	m       *Machine
	mu      sync.Mutex // guards everything below except horizon and flags
	n       int
	arrived int
	parked  []bool
	flags   []atomic.Bool // parked, readable without mu
	ch      chan struct{} // closed when the epoch advances or the machine stops
	horizon atomic.Int64  // end of the current epoch (virtual ns)
	final   bool          // ch is closed for good (stopping)
}

func (b *barrier) init(m *Machine) {
	b.m = m
	b.n = len(m.cpus)
	b.parked = make([]bool, b.n)
	b.flags = make([]atomic.Bool, b.n)
	b.ch = make(chan struct{})
	b.horizon.Store(m.cfg.Epoch)
}

// stop releases everyone for good. Never called with mu held.
func (b *barrier) stop() {
	b.mu.Lock()
	b.m.stopping.Store(true)
	b.m.runner.stop()
	if !b.final {
		b.final = true
		close(b.ch)
	}
	b.mu.Unlock()
}

func (b *barrier) unparkLocked(id int) {
	if b.parked[id] {
		b.parked[id] = false
		b.flags[id].Store(false)
		b.arrived--
		b.m.runner.unblock(id)
	}
}

// wake un-parks CPU id after an IPI was posted to it.
func (b *barrier) wake(id int) {
	if !b.flags[id].Load() {
		return
	}
	b.mu.Lock()
	b.unparkLocked(id)
	b.mu.Unlock()
}

// arrive parks cp until the epoch advances or an IPI arrives. It returns
// false when the machine is stopping.
func (b *barrier) arrive(cp *CPU) bool {
	b.mu.Lock()
	if b.m.stopping.Load() {
		b.mu.Unlock()
		return false
	}
	b.parked[cp.id] = true
	b.flags[cp.id].Store(true)
	b.arrived++
	if cp.pending() && cp.ipiAt.Load() < b.horizon.Load() {
		b.unparkLocked(cp.id)
		b.mu.Unlock()
		return true
	}
	if b.arrived == b.n {
		b.advanceLocked()
		b.mu.Unlock()
		return !b.m.stopping.Load()
	}
	ch := b.ch
	b.mu.Unlock()
	b.m.runner.park(cp, ch, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.parked[cp.id] && b.ch == ch && !b.m.stopping.Load()
	})
	return !b.m.stopping.Load()
}

// advanceLocked ends the epoch: every CPU is parked.
func (b *barrier) advanceLocked() {
	m := b.m
	if w := m.cfg.Watch; w != nil {
		w.Barrier(true)
		defer w.Barrier(false)
	}
	h := b.horizon.Load()
	e := m.epochs.Add(1)
	m.runner.progress()
	m.rcuBarrierPuts()
	if m.cfg.AuditEvery > 0 && e%uint64(m.cfg.AuditEvery) == 0 {
		m.audit(h)
	}
	if m.hotplug {
		m.hotplugEpoch(h)
	}
	if m.cfg.Respawn {
		m.respawnEpoch()
	}
	if m.cfg.OnEpoch != nil {
		m.cfg.OnEpoch(m, h)
	}
	if h >= m.cfg.SimTime && !m.stopping.Load() {
		s := ""
		m.stopWhy.CompareAndSwap(nil, &s)
		m.stopping.Store(true)
	}
	b.horizon.Store(h + m.cfg.Epoch)
	for i := range b.parked {
		b.parked[i] = false
		b.flags[i].Store(false)
		m.runner.unblock(i)
	}
	b.arrived = 0
	close(b.ch)
	b.ch = make(chan struct{})
	if m.stopping.Load() {
		b.final = true
		close(b.ch)
	}
}

// rcuBarrierPuts runs the RCU callbacks queued in the epoch that ends: a
// grace period has elapsed, since no CPU is inside a step (every read-side
// section of the model, an IRQs-off stretch of __schedule included, lies
// within one step). The kernel runs them later still, which only widens
// the window in which a stale pointer is safe; the model takes the
// narrowest the kernel's rule allows.
func (m *Machine) rcuBarrierPuts() {
	for _, cp := range m.cpus {
		for i, p := range cp.rcuPuts {
			p.PutTaskStruct()
			cp.rcuPuts[i] = nil
		}
		cp.rcuPuts = cp.rcuPuts[:0]
	}
}

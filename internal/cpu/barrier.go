// This file is the window barrier that keeps the CPUs' clocks causal (no
// kernel file).

package cpu

import (
	"math"
	"sync"
	"sync/atomic"
)

// never is a wake-up time that never comes.
const never = math.MaxInt64

// barrier keeps the CPUs' virtual clocks within the skew bound
// (Config.MaxSkew) of each other: conservative parallel discrete-event
// simulation with synchronous windows.
//
// Virtual time is cut into windows. A window starts at the floor F, the
// earliest virtual time at which any CPU has something to do, and ends at
// the horizon H = min(F + MaxSkew, end of the epoch). Within a window the
// CPU goroutines run truly in parallel on real locks; a CPU stops when its
// clock reaches H, or when the next thing it has to do lies at or past H:
// its next timer when idle, the end of the compute, its next tick or timer
// when its task is in the middle of a compute instruction (the CPU stays
// parked at the clock of its last step, and computes up to the time of
// whatever wakes it). It then arrives, saying from when it has something
// to do (wakeAt). The last to arrive computes the next window and releases
// only the CPUs with something to do before its horizon; the others stay
// parked, at no cost.
//
// Every message between CPUs (an IPI: a wake-list entry, a reschedule, a
// stopper or push request) is sent at a time >= F, because every CPU that
// acts in the window starts at or after F. Its target's clock is below H
// <= F + MaxSkew when it handles the message, unless a single step took it
// past H, so the message is handled at most MaxSkew (plus that step's
// length) after it was sent. A target whose clock is behind the send time
// (idle, or parked in a compute) first moves up to it: an idle CPU jumps,
// a computing one computes. Lock hand-offs and migrations reach their
// target through the same IPIs (try_to_wake_up, resched_curr).
//
// Every Epoch of virtual time the window ends at the epoch's end, and once
// every CPU has reached it (a CPU parked in a compute computes up to it)
// the last to arrive runs the epoch hooks (the audit) with every other CPU
// parked, then releases everyone: idle CPUs' clocks catch up with the
// epoch's end.
//
// An IPI to a parked CPU un-parks it within the window if it was sent
// before the horizon: the sender is running in this window, so the window
// cannot end before the target has handled it. An IPI sent at or past the
// horizon (a CPU whose schedule or lock work overshot it) waits for the
// window whose horizon passes the target's time to handle it.
//
//	sender                          target
//	ipi |= kind                     arrived = true
//	if arrived: lock, un-arrive     if ipi due before horizon: un-arrive itself
//
// Both sides store, then load (sequentially consistent atomics), so at
// least one of them sees the other: no IPI is left waiting for a window.
type barrier struct {
	m       *Machine
	mu      sync.Mutex // guards everything below except horizon and flags
	n       int
	arrived int
	parked  []bool
	flags   []atomic.Bool // parked, readable without mu
	// wakeAt[i] is the virtual time from which parked CPU i has something
	// to do (never: nothing but an IPI); clock[i] its clock when it
	// parked; busy[i] whether it parked with a task running (a CPU parked
	// in a compute, or past the horizon).
	wakeAt []int64
	clock  []int64
	busy   []bool
	// end is the end of the current epoch (virtual ns).
	end     int64
	skew    int64         // Config.MaxSkew, at most an epoch
	ch      chan struct{} // closed when the machine stops
	horizon atomic.Int64  // end of the current window (virtual ns)
	final   bool          // ch is closed for good (stopping)
	// windows counts windows (epoch ends included); read by the
	// summary once the machine has stopped.
	windows uint64
}

func (b *barrier) init(m *Machine) {
	b.m = m
	b.n = len(m.cpus)
	b.parked = make([]bool, b.n)
	b.flags = make([]atomic.Bool, b.n)
	b.wakeAt = make([]int64, b.n)
	b.clock = make([]int64, b.n)
	b.busy = make([]bool, b.n)
	b.ch = make(chan struct{})
	b.end = m.cfg.Epoch
	b.skew = min(m.cfg.MaxSkew, m.cfg.Epoch)
	b.horizon.Store(min(b.skew, b.end))
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

// unparkLocked lets parked CPU id go; the caller kicks its goroutine
// (wake and release do).
func (b *barrier) unparkLocked(id int) bool {
	if !b.parked[id] {
		return false
	}
	b.parked[id] = false
	b.flags[id].Store(false)
	b.arrived--
	b.m.runner.unblock(id)
	return true
}

// release un-parks CPU id and wakes its goroutine; at is the virtual time
// it is released for (an idle CPU's clock moves up to it).
func (b *barrier) release(id int, at int64) {
	if b.unparkLocked(id) {
		cp := b.m.cpus[id]
		cp.releasedAt = at
		b.m.runner.kick(cp)
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

// arrive parks cp until a window gives it something to do, or an IPI
// arrives; wakeAt is when it next has something to do on its own, busy
// whether a task is running on it. It returns false when the machine is
// stopping.
func (b *barrier) arrive(cp *CPU, wakeAt int64, busy bool) bool {
	b.mu.Lock()
	if b.m.stopping.Load() {
		b.mu.Unlock()
		return false
	}
	id := cp.id
	b.parked[id] = true
	b.flags[id].Store(true)
	b.arrived++
	b.wakeAt[id], b.clock[id], b.busy[id] = wakeAt, cp.c.Now, busy
	if cp.ipiDueAt() < b.horizon.Load() {
		b.unparkLocked(id)
		b.mu.Unlock()
		return true
	}
	if b.arrived == b.n {
		b.advanceLocked()
	}
	if !b.parked[id] {
		b.mu.Unlock()
		return !b.m.stopping.Load()
	}
	ch := b.ch
	b.mu.Unlock()
	b.m.runner.park(cp, ch, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.parked[id] && !b.m.stopping.Load()
	})
	return !b.m.stopping.Load()
}

// dueLocked is when parked CPU i has something to do: its own wakeAt, or
// an IPI posted to it while it was parked (sent at or past the horizon).
func (b *barrier) dueLocked(i int) int64 {
	return min(b.wakeAt[i], b.m.cpus[i].ipiDueAt())
}

// advanceLocked opens the next window: every CPU is parked.
func (b *barrier) advanceLocked() {
	b.windows++
	floor := int64(never)
	behind := false // a busy CPU short of the epoch's end
	for i := 0; i < b.n; i++ {
		floor = min(floor, b.dueLocked(i))
		behind = behind || b.busy[i] && b.clock[i] < b.end
	}
	if floor < b.end || behind {
		h := b.end
		if floor < b.end {
			h = min(b.end, floor+b.skew)
		}
		b.horizon.Store(h)
		for i := 0; i < b.n; i++ {
			if due := b.dueLocked(i); due < h || floor >= b.end && b.busy[i] && b.clock[i] < b.end {
				b.release(i, min(due, h))
			}
		}
		return
	}
	b.endEpochLocked()
}

// endEpochLocked ends the epoch: every CPU is parked at or past its end
// (an idle one has nothing to do before it).
func (b *barrier) endEpochLocked() {
	m := b.m
	if w := m.cfg.Watch; w != nil {
		w.Barrier(true)
		defer w.Barrier(false)
	}
	h := b.end
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
	b.end = h + m.cfg.Epoch
	b.horizon.Store(min(b.end, h+b.skew))
	for i := range b.parked {
		b.release(i, h)
	}
	if m.stopping.Load() && !b.final {
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

package cpu

import "testing"

// An IPI un-parks a CPU waiting at the epoch barrier only if its sender
// is still in the epoch (its clock before the horizon): one sent past the
// horizon is taken in the next epoch. Two CPUs past the horizon IPIing
// each other used to keep the epoch open for ever, every other CPU
// stopped at the barrier (a core-scheduling push ping-pong and a newidle
// chase were reported as machine hangs, invariant 40).
func TestIPIPastHorizonWaitsForNextEpoch(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CPUs = 3
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := &m.bar
	h := b.horizon.Load()
	park := func(id int) {
		b.mu.Lock()
		b.parked[id], b.arrived = true, b.arrived+1
		b.flags[id].Store(true)
		b.mu.Unlock()
	}
	parked := func(id int) bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.parked[id]
	}
	c0 := m.cpus[0].c

	park(1)
	c0.Now = h
	m.sendIPI(c0, 1, ipiResched)
	if !parked(1) {
		t.Fatalf("an IPI sent at the horizon (%d) un-parked its target within the epoch", h)
	}
	if m.cpus[1].ipiAt.Load() != h {
		t.Fatalf("ipiAt = %d, want the sender's clock %d", m.cpus[1].ipiAt.Load(), h)
	}
	// The target arriving anew with that IPI pending stays parked too.
	b.mu.Lock()
	b.parked[1], b.arrived = false, b.arrived-1
	b.mu.Unlock()
	park(1)
	if m.cpus[1].pending() && m.cpus[1].ipiAt.Load() < h {
		t.Fatal("the pending IPI counts as sent within the epoch")
	}

	park(2)
	c0.Now = h - 1
	m.sendIPI(c0, 2, ipiResched)
	if parked(2) {
		t.Fatal("an IPI sent within the epoch left its target parked")
	}
	// Taking the IPIs forgets their time.
	m.cpus[2].handleIPIs()
	if at := m.cpus[2].ipiAt.Load(); at != noIPI {
		t.Fatalf("ipiAt = %d after handleIPIs, want none", at)
	}
}

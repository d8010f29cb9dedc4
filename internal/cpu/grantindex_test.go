package cpu

import (
	"testing"

	"github.com/proxysim/proxysim/internal/trace"
)

// The grant index keeps the latest grant per (task, mutex) across the
// rings, reads each event once however many audits there are, and names
// no event the rings have overwritten.
func TestGrantIndex(t *testing.T) {
	l := trace.NewLog(2, 16)
	r0, r1 := l.Rings[0], l.Rings[1]
	var g grantIndex
	r1.Emit(1, trace.EvLock, 7, 3, 0, 0)    // task 7 takes mutex 3 on cpu1
	r0.Emit(2, trace.EvHandoff, 7, 3, 0, 0) // later, on cpu0: handed mutex 3 again (cpu0's ring is read first)
	r0.Emit(3, trace.EvUnlock, 5, 4, 9, 0)  // task 5 unlocks mutex 4 naming task 9
	r0.Emit(4, trace.EvUnlock, 5, 4, 0, 0)  // no next owner: no grant
	r1.Emit(5, trace.EvSwitch, 7, 0, 0, 0)  // not a grant
	g.update(l)
	if e := g.latest[grantKey{7, 3}]; e.Kind != trace.EvHandoff || e.CPU != 0 {
		t.Errorf("latest grant of mutex 3 to task 7: %+v, want cpu0's hand-off", e)
	}
	if e, ok := g.latest[grantKey{9, 4}]; !ok || e.Kind != trace.EvUnlock || e.Time != 3 {
		t.Errorf("unlock naming task 9: %+v %v", e, ok)
	}
	if len(g.latest) != 2 {
		t.Errorf("%d keys, want 2: %v", len(g.latest), g.latest)
	}
	// A second update reads nothing again.
	g.update(l)
	if e := g.latest[grantKey{7, 3}]; e.CPU != 0 {
		t.Errorf("after a second update: %+v", e)
	}
	if g.read[0] != r0.Written() || g.read[1] != r1.Written() {
		t.Errorf("read %v, want %d and %d", g.read, r0.Written(), r1.Written())
	}
	// Wrap cpu0's ring: its grants are overwritten, cpu1's lock stays.
	for i := 0; i < 16; i++ {
		r0.Emit(int64(10+i), trace.EvSwitch, 1, 0, 0, 0)
	}
	g.update(l)
	e := g.latest[grantKey{9, 4}]
	if r0.Holds(&e) {
		t.Errorf("cpu0's ring still holds event #%d after wrapping", e.Seq)
	}
	var lock trace.Event
	r1.Since(0, func(e *trace.Event) { lock = *e })
	if !r1.Holds(&lock) {
		t.Errorf("cpu1's ring lost its lock event")
	}
}

// Since reads from where the last call stopped, or from the oldest event
// the ring holds if it wrapped past that.
func TestRingSince(t *testing.T) {
	l := trace.NewLog(1, 16)
	r := l.Rings[0]
	var times []int64
	collect := func(e *trace.Event) { times = append(times, e.Time) }
	for i := 0; i < 5; i++ {
		r.Emit(int64(i), trace.EvSwitch, 1, 0, 0, 0)
	}
	pos := r.Since(0, collect)
	if pos != 5 || len(times) != 5 {
		t.Fatalf("pos %d, %d events", pos, len(times))
	}
	times = nil
	for i := 5; i < 40; i++ {
		r.Emit(int64(i), trace.EvSwitch, 1, 0, 0, 0)
	}
	pos = r.Since(pos, collect)
	if pos != 40 || len(times) != 16 || times[0] != 24 || times[15] != 39 {
		t.Fatalf("after wrapping: pos %d, times %v", pos, times)
	}
}

package sim

import (
	"testing"
	"time"
)

// Fatal signals with respawn, in deterministic mode on the stress
// workload: every killed task's slot gets a forked task (forks ==
// exits, once the last exit is reaped), the run is clean (invariant 20
// counts the retired tasks' runtime, invariant 60 every task's
// references), and it replays: the same seed gives the same trace hash.
// Without respawn the same run ends with fewer live tasks.
func TestRespawnDeterministic(t *testing.T) {
	opts := func(respawn bool) Options {
		o := Defaults()
		o.CPUs, o.Workload, o.SimTime, o.Seed = 8, "stress", 300*time.Millisecond, 3
		o.Deterministic, o.Strategy = true, "time"
		o.SignalRate, o.SignalFatal, o.Respawn = 100, 0.1, respawn
		o.AuditEvery = 1
		return o
	}
	a, b := run(t, opts(true)), run(t, opts(true))
	for _, s := range []*Summary{a, b} {
		if s.Failed() {
			t.Fatalf("violation: %v", s.Violations[0])
		}
	}
	if a.TraceHash != b.TraceHash {
		t.Fatalf("trace hash %s then %s: respawn does not replay", a.TraceHash, b.TraceHash)
	}
	exits, forks := a.Counters["exits"], a.Counters["forks"]
	if exits == 0 || forks == 0 || forks > exits || exits-forks > 1 {
		t.Fatalf("exits %d, forks %d: want every killed task but perhaps the last replaced", exits, forks)
	}
	off := run(t, opts(false))
	if off.Failed() {
		t.Fatalf("without respawn: %v", off.Violations[0])
	}
	if off.Counters["forks"] != 0 || off.Counters["exits"] == 0 {
		t.Fatalf("without respawn: exits %d, forks %d", off.Counters["exits"], off.Counters["forks"])
	}
}

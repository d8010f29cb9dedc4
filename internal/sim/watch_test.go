package sim

import (
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/bugs"
)

// TestWatchKeepsTheSchedule: a watched replay takes the unwatched run's
// schedule, event for event (the same trace hash, the same violation at
// the same event), which is what lets explain replay a failure at all.
func TestWatchKeepsTheSchedule(t *testing.T) {
	o := Defaults()
	o.Workload, o.CPUs, o.Seed = "stress", 8, 3
	o.Deterministic, o.SimTime = true, 20*time.Millisecond
	b, err := bugs.Parse([]string{"early-activation"})
	if err != nil {
		t.Fatal(err)
	}
	o.Bugs = b
	for _, strat := range []string{"random", "time", "pct:3"} {
		o.Strategy = strat
		sc, err := LoadScenario(o.Workload, o.CPUs, o.Tasks)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Build(o, sc)
		if err != nil {
			t.Fatal(err)
		}
		plain := r.Execute()
		sc, _ = LoadScenario(o.Workload, o.CPUs, o.Tasks)
		_, watched, w, err := RunWatched(o, sc, 1<<16)
		if err != nil {
			t.Fatal(err)
		}
		if plain.TraceHash != watched.TraceHash || plain.Events != watched.Events {
			t.Fatalf("%s: watched run hash %s (%d events), unwatched %s (%d events)", strat, watched.TraceHash, watched.Events, plain.TraceHash, plain.Events)
		}
		if plain.Failed() != watched.Failed() || plain.Failed() && plain.Violations[0].Seq != watched.Violations[0].Seq {
			t.Fatalf("%s: violations differ: %v / %v", strat, plain.Violations, watched.Violations)
		}
		if len(w.Steps()) == 0 {
			t.Fatalf("%s: the watch recorded nothing", strat)
		}
	}
}

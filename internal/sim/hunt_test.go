package sim

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/bugs"
)

// A hunt's second detector (the race build's report file, in practice)
// stops the run and counts as its detection; without it the same run is
// clean.
func TestHuntWatchedCountsTheWatcher(t *testing.T) {
	o := Defaults()
	o.CPUs, o.Workload, o.Seed = 4, "stress", 1
	o.SimTime = time.Hour // only the watcher or the budget ends it
	var polls atomic.Int32
	watch := func() string {
		if polls.Add(1) < 5 {
			return ""
		}
		return "DATA RACE: read in a, previous write in b"
	}
	r, err := HuntWatched(o, 30*time.Second, watch)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Caught || r.Invariant != InvDataRace || r.Message == "" || r.Elapsed >= 30*time.Second {
		t.Fatalf("hunt result %+v: want caught by %s before the budget", r, InvDataRace)
	}
	r, err = HuntWatched(o, 300*time.Millisecond, func() string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if r.Caught {
		t.Fatalf("a quiet watcher caught something: %+v", r)
	}
}

// HuntSetup shrinks the machine only for the entries whose comments give
// the measured reason, and never grows it.
func TestHuntSetupMachineSize(t *testing.T) {
	for _, tc := range []struct {
		bug        string
		cpus, want int
	}{
		{"core-dl-tie", 256, 64},
		{"core-dl-tie", 32, 32},
		{"core-fi-no-tick", 256, 4},
		{"proxy-migrate-offline", 256, 16},
		{"dangling-donor", 256, 256},
		{"core-flip-stale-pick", 256, 256},
	} {
		set, err := bugs.Parse([]string{tc.bug})
		if err != nil {
			t.Fatal(err)
		}
		o := Defaults()
		o.CPUs, o.Bugs = tc.cpus, set
		HuntSetup(&o)
		if o.CPUs != tc.want {
			t.Errorf("%s at %d CPUs: the hunt runs %d, want %d", tc.bug, tc.cpus, o.CPUs, tc.want)
		}
	}
}

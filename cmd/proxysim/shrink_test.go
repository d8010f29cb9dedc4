package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/sim"
)

// The command shrink prints replaces what the scenario file says
// (workload, CPUs, tasks, topology), the seed, strategy and sim time the
// shrunk case fails with, and sets the injectors the shrink turned off;
// the rest of the recorded command stays.
func TestRerunWith(t *testing.T) {
	words := strings.Fields("proxysim stress --cpus 256 --bug owner-mid-return --seed 5 --deterministic --strategy random --duration 0 --sim-time 2ms --signal-rate 50 --topology 2s-8llc-8c-2t")
	was := sim.Defaults()
	was.SignalRate, was.SpuriousWakeRate, was.HotplugInterval = 50, 100, 20*time.Millisecond
	now := was
	now.SignalRate, now.HotplugInterval = 0, 0
	now.Seed, now.Strategy, now.SimTime = 9, "pct:3", 12*time.Millisecond
	got := rerunWith(words, "min file.json", &was, &now)
	want := "proxysim stress --bug owner-mid-return --deterministic --duration 0 --workload 'min file.json' --seed 9 --strategy pct:3 --sim-time 12ms --signal-rate 0 --hotplug-interval 0s"
	if got != want {
		t.Errorf("rerunWith:\n got %s\nwant %s", got, want)
	}
}

// The check of the printed command fails when the command does not fail
// the same way: what a user runs must be what was found.
func TestShrinkCheckCatchesOtherOutcome(t *testing.T) {
	var out bytes.Buffer
	code, err := checkRerun("proxysim run --deterministic --cpus 2 --sim-time 5ms --seed 1", "one-queue", &out)
	if code != exitInternal || err == nil || !strings.Contains(err.Error(), "does not fail with one-queue (no violation)") {
		t.Errorf("a clean run: exit %d, %v", code, err)
	}
	code, err = checkRerun("proxysim run --deterministic --cpus 4 --workload stress --strategy random --sim-time 200ms --seed 4 --bug runnable-without-return", "one-queue", &out)
	if code != exitInternal || err == nil || !strings.Contains(err.Error(), "does not fail with one-queue (invariant") {
		t.Errorf("a run that breaks another invariant: exit %d, %v", code, err)
	}
}

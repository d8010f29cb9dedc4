package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCatalogueIsCaught is the proof that the detectors work: every
// catalogued bug, switched back on, is caught by `proxysim stress` within
// its budget, and the same runs without a bug find nothing. It runs a
// binary built without -race (the race detector would slow the hunt ten
// times); the race-detector side of the proof is in internal/cpu.
func TestCatalogueIsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("hunts every catalogued bug (minutes)")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go toolchain on PATH")
	}
	bin := filepath.Join(t.TempDir(), "proxysim")
	if out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "bugs", "--hunt", "--json", "--seeds", "2", "--budget", "60s", "--control", "10s", "--cpus", "64")
	cmd.Stderr = os.Stderr
	out, _ := cmd.Output() // exit 1 when a run missed: judged below per bug
	var res struct {
		Bugs []struct {
			Bug    string `json:"bug"`
			Runs   int    `json:"runs"`
			Caught int    `json:"caught"`
			Median int64  `json:"median_ns"`
			Max    int64  `json:"max_ns"`
		} `json:"bugs"`
		Control []struct {
			Caught  bool   `json:"caught"`
			Message string `json:"message"`
		} `json:"control"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("hunt output: %v\n%s", err, out)
	}
	if len(res.Bugs) < 12 {
		t.Fatalf("hunted %d bugs, want the whole catalogue", len(res.Bugs))
	}
	for _, b := range res.Bugs {
		if b.Caught == 0 {
			t.Errorf("bug %s was not caught in %d runs of 60s", b.Bug, b.Runs)
		} else {
			t.Logf("%-24s caught %d/%d, median %.2fs", b.Bug, b.Caught, b.Runs, float64(b.Median)/1e9)
		}
	}
	for _, c := range res.Control {
		if c.Caught {
			t.Errorf("control run without a bug found a violation: %s", c.Message)
		}
	}
}

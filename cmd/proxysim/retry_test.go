package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A violation the barrier's audit finds carries no time of its own
// (core-starve, invariant 45): the deterministic retry's report must
// still bound its command past the point the run had reached, or the
// replay (and a shrink) stops before the failure.
func TestDeterministicReportOfAuditViolationReplays(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "fi.report")
	code, _, errs := runCLI(t, "stress", "--cpus", "4", "--workload", "coresched-hog", "--core-sched=on", "--core-sched-toggle-interval", "0s",
		"--bug", "core-fi-no-tick", "--seed", "5", "--duration", "60s", "--stat-interval", "0", "--report", rep)
	if code != exitViolation {
		t.Fatalf("stress: exit %d, want 1\n%s", code, errs)
	}
	det := filepath.Join(dir, "fi.det.report")
	b, err := os.ReadFile(det)
	if err != nil {
		t.Fatalf("no deterministic report: %v\n%s", err, errs)
	}
	if !strings.Contains(string(b), "t=0ns] invariant 45 (core-starve)") {
		t.Fatalf("the test needs an audit's violation with no time of its own:\n%.1200s", b)
	}
	code, out, _ := runCLI(t, "replay", det)
	if code != exitOK {
		t.Errorf("replay of the deterministic report: exit %d\n%s", code, out)
	}
}

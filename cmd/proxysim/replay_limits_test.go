package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/sim"
)

// Checker defect: replay of a concurrent stress report ran with
// no wall-clock limit, and a stress run has no sim time to end at, so it
// never returned. It now keeps the recorded --duration (capped).
func TestReplayOfConcurrentStressHasAWallClockLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a short stress")
	}
	dir := t.TempDir()
	rep := filepath.Join(dir, "concurrent.report")
	text := "proxysim report\nseed: 1\nreproduce: proxysim stress --cpus 4 --seed 1 --duration 2s --stat-interval 0\n\n" +
		"violations (1):\n  [event #12345, t=1.000ms] invariant 30 (progress) on cpu 0, task x: made up\n"
	if err := os.WriteFile(rep, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	type res struct {
		code     int
		out, err string
	}
	done := make(chan res, 1)
	start := time.Now()
	go func() {
		code, out, errs := runCLI(t, "replay", rep)
		done <- res{code, out, errs}
	}()
	select {
	case r := <-done:
		if r.code != exitViolation || !strings.Contains(r.out, "NOT reproduced") {
			t.Fatalf("replay: exit %d\n%s%s", r.code, r.out, r.err)
		}
		if !strings.Contains(r.err, "at most 2s of wall time") {
			t.Errorf("replay does not say how long it replays:\n%s", r.err)
		}
		t.Logf("replay of a 2 s concurrent stress report took %v", time.Since(start))
	case <-time.After(90 * time.Second):
		t.Fatal("replay of a concurrent stress report ran past 90 s: no wall-clock limit")
	}
}

// A report that holds only the preamble (the race detector halted the
// process before it could write the rest) says so when read.
func TestPreambleOnlyReportSaysSo(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "halted.report")
	if err := sim.WritePreamble(rep, 9, "proxysim stress --seed 9"); err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"replay", "shrink"} {
		code, out, errs := runCLI(t, verb, rep)
		if code != exitUsage {
			t.Errorf("%s of a preamble-only report: exit %d, want %d", verb, code, exitUsage)
		}
		if msg := out + errs; !strings.Contains(msg, "only the preamble") || !strings.Contains(msg, "race detector") || !strings.Contains(msg, "proxysim stress --seed 9") {
			t.Errorf("%s of a preamble-only report does not say what happened:\n%s", verb, msg)
		}
	}
	b, _ := os.ReadFile(rep)
	if !strings.Contains(string(b), "the process died before it could finish the report") {
		t.Errorf("the preamble itself does not say so:\n%s", b)
	}
}

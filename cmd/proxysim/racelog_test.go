package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sampleRace = `==================
WARNING: DATA RACE
Read at 0x00c0005821e0 by goroutine 249:
  github.com/proxysim/proxysim/internal/proxy.ownerDelayed()
      /work/main/internal/proxy/proxy.go:260 +0x13e
  github.com/proxysim/proxysim/internal/proxy.FindProxyTask()
      /work/main/internal/proxy/proxy.go:160 +0x7f6

Previous write at 0x00c0005821e0 by goroutine 244:
  github.com/proxysim/proxysim/internal/task.(*Task).SetSchedDelayed()
      /work/main/internal/task/task.go:686 +0x5f6
==================
`

// A hunt run by the race build counts a report written to its race log
// since the run began, and only such a report.
func TestRaceLogCountsReportsOfTheRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "race.123")
	l := &raceLog{path: path}
	if got := l.since(); got != "" {
		t.Fatalf("no log file yet: %q", got)
	}
	if err := os.WriteFile(path, []byte(sampleRace), 0o644); err != nil {
		t.Fatal(err)
	}
	l.mark() // an earlier run's report
	if got := l.since(); got != "" {
		t.Fatalf("a report from before the run counted: %q", got)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(sampleRace)
	f.Close()
	want := "DATA RACE: read in internal/proxy.ownerDelayed, previous write in internal/task.(*Task).SetSchedDelayed"
	if got := l.since(); got != want {
		t.Fatalf("since = %q, want %q", got, want)
	}
	var out bytes.Buffer
	l.dump(&out)
	if !strings.Contains(out.String(), "WARNING: DATA RACE") || strings.Count(out.String(), "WARNING") != 1 {
		t.Fatalf("dump printed %q, want the run's one report", out.String())
	}
	if got := l.since(); got != "" {
		t.Fatalf("after dump: %q", got)
	}
}

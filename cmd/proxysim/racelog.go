package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// raceLog follows the race detector's report file of this process, so
// that a hunt run by the race build ('bugs --hunt --race') counts a data
// race as a detection: runRaceBuild starts that build with GORACE
// log_path=PREFIX (the runtime writes its reports to PREFIX.<pid>, not to
// stderr) and PROXYSIM_RACE_LOG=PREFIX. A report is not visible to the
// program that has it in any other way.
type raceLog struct {
	path string
	off  int64 // what was written before the current run
}

// raceLogEnv names the report file's prefix for the race build.
const raceLogEnv = "PROXYSIM_RACE_LOG"

// newRaceLog returns the log of this process, or nil if it is not a race
// build started that way.
func newRaceLog() *raceLog {
	prefix := os.Getenv(raceLogEnv)
	if !raceEnabled || prefix == "" {
		return nil
	}
	return &raceLog{path: fmt.Sprintf("%s.%d", prefix, os.Getpid())}
}

func (l *raceLog) size() int64 {
	fi, err := os.Stat(l.path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// mark starts a run: reports written before it are not its.
func (l *raceLog) mark() { l.off = l.size() }

// read returns what was written since mark (at most max bytes).
func (l *raceLog) read(max int64) string {
	n := l.size() - l.off
	if n <= 0 {
		return ""
	}
	f, err := os.Open(l.path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, min(n, max))
	k, _ := f.ReadAt(buf, l.off)
	return string(buf[:k])
}

// since summarises the first report written since mark in one line (the
// two accesses and their innermost functions), or returns "".
func (l *raceLog) since() string {
	text := l.read(16 << 10)
	if !strings.Contains(text, "WARNING: DATA RACE") {
		return ""
	}
	return summarizeRace(text)
}

// summarizeRace turns a race detector report into one line: each access
// ("Write at 0x... by goroutine 7:") with its first frame.
func summarizeRace(text string) string {
	lines := strings.Split(text, "\n")
	var parts []string
	for i, ln := range lines {
		ln = strings.TrimSpace(ln)
		if !strings.Contains(ln, " at 0x") || !strings.Contains(ln, "by ") || i+1 >= len(lines) {
			continue
		}
		access, _, _ := strings.Cut(ln, " at 0x")
		fn := strings.TrimSpace(lines[i+1])
		fn = strings.TrimPrefix(fn, modulePath+"/")
		fn, _, _ = strings.Cut(fn, "(0x")
		fn = strings.TrimSuffix(fn, "()")
		parts = append(parts, strings.ToLower(access)+" in "+fn)
		if len(parts) == 2 {
			break
		}
	}
	if len(parts) == 0 {
		return "DATA RACE"
	}
	return "DATA RACE: " + strings.Join(parts, ", ")
}

// dump copies the reports written since mark to w (where the race
// detector would have printed them) and moves mark past them.
func (l *raceLog) dump(w io.Writer) {
	if text := l.read(1 << 30); text != "" {
		io.WriteString(w, text)
	}
	l.mark()
}

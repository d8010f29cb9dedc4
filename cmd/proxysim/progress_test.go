package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the progress goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The progress line: drawn in place during a long set-up, cleared at the
// end; nothing at all when off.
func TestProgressLine(t *testing.T) {
	var w syncBuffer
	// No ticker goroutine: one line drawn by hand, its clock started 1 s
	// ago, so the test waits for nothing.
	p := &progress{w: &w, every: time.Second, start: time.Now().Add(-time.Second), simTime: time.Second, stopc: make(chan struct{})}
	p.onSetup(4096, 10000)
	p.show()
	p.stop()
	out := w.String()
	if !strings.HasPrefix(out, "\rproxysim: setting up: 4096 of 10000 tasks created, wall 1s\x1b[K") || !strings.HasSuffix(out, "\r\x1b[K") {
		t.Errorf("progress output %q", out)
	}
	var none syncBuffer
	q := startProgress(&none, false, time.Second)
	q.onSetup(1, 2)
	q.clear()
	q.stop()
	if none.String() != "" {
		t.Errorf("progress off wrote %q", none.String())
	}
}

// run shows progress only on a terminal: a run whose stderr is a file or
// a pipe (here a buffer) gets no progress line, however long it takes.
func TestRunQuietWhenNotATerminal(t *testing.T) {
	// 1.5s of wall time: past the progress line's first tick
	code, _, errs := runCLI(t, "run", "--cpus", "2", "--sim-time", "1h", "--duration", "1500ms", "--seed", "3", "--workload", "pi")
	if code != exitOK || strings.Contains(errs, "\r") || strings.Contains(errs, "setting up") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	if isTerminal(&bytes.Buffer{}) {
		t.Error("a buffer counted as a terminal")
	}
}

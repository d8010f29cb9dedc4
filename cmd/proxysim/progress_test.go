package main

import (
	"bytes"
	"errors"
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
	rp := &runProgress{start: time.Now().Add(-time.Second), simTime: time.Second}
	p := newProgress(&w, rp.line)
	p.plain = false
	rp.onSetup(4096, 10000)
	p.show()
	p.stop()
	out := w.String()
	if !strings.HasPrefix(out, "\rproxysim: setting up: 4096 of 10000 tasks created, wall 1s\x1b[K") || !strings.HasSuffix(out, "\r\x1b[K") {
		t.Errorf("progress output %q", out)
	}
	var none syncBuffer
	q := startProgress(&none, false, rp.line)
	q.clear()
	q.stop()
	if none.String() != "" {
		t.Errorf("progress off wrote %q", none.String())
	}
}

// On a plain terminal (TERM=dumb, NO_COLOR) the line is redrawn with a
// carriage return and spaces, never an escape sequence.
func TestProgressPlainTerminal(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		env   func(string) string
		plain bool
	}{
		{env("TERM", "xterm-256color"), false},
		{env("TERM", "dumb"), true},
		{env(), true},
		{env("TERM", "xterm", "NO_COLOR", "1"), true},
		{env("TERM", "xterm", "NO_COLOR", ""), false},
	} {
		if got := plainTerminal(c.env); got != c.plain {
			t.Errorf("TERM=%q NO_COLOR=%q: plain %v, want %v", c.env("TERM"), c.env("NO_COLOR"), got, c.plain)
		}
	}
	var w syncBuffer
	lines := []string{"a longer line", "short"}
	p := newProgress(&w, func() string { l := lines[0]; lines = lines[1:]; return l })
	p.plain = true
	p.show()
	p.show()
	p.stop()
	if got, want := w.String(), "\ra longer line\rshort        \r             \r"; got != want {
		t.Errorf("plain progress output %q, want %q", got, want)
	}
}

// failWriter fails every write.
type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) { f.n++; return 0, errors.New("write error") }

// The display cannot fail its command: stop may come twice (a deferred
// stop after the explicit one: a double close and a panic once, exit 2
// after a clean run with 2>/dev/null), and a write error switches the
// display off instead of reaching anybody.
func TestProgressCannotFail(t *testing.T) {
	var w syncBuffer
	p := startProgress(&w, true, func() string { return "x" })
	p.stop()
	p.stop()
	f := &failWriter{}
	q := newProgress(f, func() string { return "x" })
	q.show()
	q.show()
	q.clear()
	q.stop()
	if f.n != 1 {
		t.Errorf("%d writes to a writer that failed the first, want 1", f.n)
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

package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"

	"github.com/proxysim/proxysim/internal/sim"
	"github.com/proxysim/proxysim/internal/stats"
)

// isTerminal reports whether w is a terminal: an *os.File (maybe behind
// a syncWriter) whose descriptor is a tty. /dev/null is a character
// device and no terminal.
func isTerminal(w io.Writer) bool {
	if s, ok := w.(*syncWriter); ok {
		w = s.w
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// plainTerminal says the terminal gets no escape sequences: TERM=dumb or
// unset, or NO_COLOR set (proxysim prints no colour; it takes NO_COLOR to
// mean no cursor control either). The progress line is then redrawn with
// a carriage return and spaces alone.
func plainTerminal(getenv func(string) string) bool {
	t := getenv("TERM")
	return t == "" || t == "dumb" || getenv("NO_COLOR") != ""
}

// progressOn says whether a command shows its progress line on stderr:
// not with --quiet, and only on a terminal.
func progressOn(quiet bool, stderr io.Writer) bool { return !quiet && isTerminal(stderr) }

// progress is a one-line progress display on a terminal, rewritten in
// place about once a second and cleared at the end. It never fails its
// command: it ignores its own write errors, and the first one switches
// it off.
type progress struct {
	w     io.Writer
	every time.Duration
	plain bool          // no escape sequences (plainTerminal)
	line  func() string // the line to draw
	stopc chan struct{}
	wg    sync.WaitGroup
	once  sync.Once // stop runs once, however often it is called
	mu    sync.Mutex
	// shown (the line is on the terminal), width (the columns it took
	// since it was last cleared) and dead
	// (a write failed: draw nothing more) are guarded by mu, as are the
	// writes to w.
	shown bool
	width int
	dead  bool
}

// startProgress starts the display of line, or returns nil (a display
// whose methods do nothing) when on is false.
func startProgress(w io.Writer, on bool, line func() string) *progress {
	if !on {
		return nil
	}
	p := newProgress(w, line)
	p.wg.Add(1)
	go p.loop()
	return p
}

func newProgress(w io.Writer, line func() string) *progress {
	return &progress{w: w, every: time.Second, plain: plainTerminal(os.Getenv), line: line, stopc: make(chan struct{})}
}

func (p *progress) loop() {
	defer p.wg.Done()
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-p.stopc:
			return
		case <-t.C:
			p.show()
		}
	}
}

// show draws the line in place of the last one.
func (p *progress) show() {
	line := p.line()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return
	}
	s := "\r" + line + "\x1b[K"
	if p.plain {
		s = "\r" + line + strings.Repeat(" ", max(0, p.width-len(line)))
	}
	p.write(s)
	p.shown, p.width = true, max(p.width, len(line))
}

// write writes s; a failure switches the display off. Called with mu held.
func (p *progress) write(s string) {
	if _, err := io.WriteString(p.w, s); err != nil {
		p.dead = true
	}
}

// clear takes the progress line off the terminal before other output;
// the next tick draws it again.
func (p *progress) clear() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.shown || p.dead {
		return
	}
	if p.plain {
		p.write("\r" + strings.Repeat(" ", p.width) + "\r")
	} else {
		p.write("\r\x1b[K")
	}
	p.shown, p.width = false, 0
}

// stop ends the display and clears its line. It may be called more than
// once.
func (p *progress) stop() {
	if p == nil {
		return
	}
	p.once.Do(func() {
		close(p.stopc)
		p.wg.Wait()
		p.clear()
	})
}

// runProgress is run's progress line: the set-up (tasks created) and
// then the run (virtual time, context switches).
type runProgress struct {
	start   time.Time
	simTime time.Duration
	setupN  atomic.Int64
	setupOf atomic.Int64
	run     atomic.Pointer[sim.Run]
}

// onSetup is sim.Options.OnSetup.
func (rp *runProgress) onSetup(done, total int) {
	rp.setupN.Store(int64(done))
	rp.setupOf.Store(int64(total))
}

// running switches the line to the run.
func (rp *runProgress) running(r *sim.Run) { rp.run.Store(r) }

func (rp *runProgress) line() string {
	el := time.Since(rp.start).Round(time.Second)
	r := rp.run.Load()
	if r == nil {
		if n := rp.setupN.Load(); n > 0 {
			return fmt.Sprintf("proxysim: setting up: %d of %d tasks created, wall %v", n, rp.setupOf.Load(), el)
		}
		return fmt.Sprintf("proxysim: setting up: planning %d tasks, wall %v", rp.setupOf.Load(), el)
	}
	var now int64
	st := r.Machine.CPUStats()
	for _, s := range st {
		if t := s.SimTime.Load(); t > now {
			now = t
		}
	}
	if rp.simTime < forever {
		now = min(now, int64(rp.simTime)) // clocks run to the end of their epoch
	}
	line := fmt.Sprintf("proxysim: virtual %v", time.Duration(now).Round(time.Millisecond))
	if rp.simTime < forever {
		line += fmt.Sprintf(" of %v (%d%%)", rp.simTime, int64(100*float64(now)/float64(rp.simTime)))
	}
	return line + fmt.Sprintf(", %d context switches, %d violations, wall %v", stats.Sum(st, stats.ContextSwitches), len(r.Machine.Rep.Violations()), el)
}

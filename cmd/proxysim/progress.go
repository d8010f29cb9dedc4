package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proxysim/proxysim/internal/sim"
	"github.com/proxysim/proxysim/internal/stats"
)

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	if s, ok := w.(*syncWriter); ok {
		w = s.w
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progress is run's one-line progress display on a terminal: the set-up
// (tasks created) and then the run (virtual time, context switches),
// rewritten in place about once a second and cleared at the end.
type progress struct {
	w       io.Writer
	every   time.Duration
	start   time.Time
	setupN  atomic.Int64
	setupOf atomic.Int64
	run     atomic.Pointer[sim.Run]
	simTime time.Duration
	stopc   chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex // guards shown and writes to w
	shown   bool
}

// startProgress starts the display, or returns nil (quiet) when on is
// false.
func startProgress(w io.Writer, on bool, simTime time.Duration) *progress {
	if !on {
		return nil
	}
	p := &progress{w: w, every: time.Second, start: time.Now(), simTime: simTime, stopc: make(chan struct{})}
	p.wg.Add(1)
	go p.loop()
	return p
}

// onSetup is sim.Options.OnSetup.
func (p *progress) onSetup(done, total int) {
	if p != nil {
		p.setupN.Store(int64(done))
		p.setupOf.Store(int64(total))
	}
}

// running switches the display to the run.
func (p *progress) running(r *sim.Run) {
	if p != nil {
		p.run.Store(r)
	}
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

func (p *progress) show() {
	el := time.Since(p.start).Round(time.Second)
	var line string
	if r := p.run.Load(); r != nil {
		var now int64
		st := r.Machine.CPUStats()
		for _, s := range st {
			if t := s.SimTime.Load(); t > now {
				now = t
			}
		}
		if p.simTime < forever {
			now = min(now, int64(p.simTime)) // clocks run to the end of their epoch
		}
		line = fmt.Sprintf("proxysim: virtual %v", time.Duration(now).Round(time.Millisecond))
		if p.simTime < forever {
			line += fmt.Sprintf(" of %v (%d%%)", p.simTime, int64(100*float64(now)/float64(p.simTime)))
		}
		line += fmt.Sprintf(", %d context switches, %d violations, wall %v", stats.Sum(st, stats.ContextSwitches), len(r.Machine.Rep.Violations()), el)
	} else if n := p.setupN.Load(); n == 0 {
		line = fmt.Sprintf("proxysim: setting up: planning %d tasks, wall %v", p.setupOf.Load(), el)
	} else {
		line = fmt.Sprintf("proxysim: setting up: %d of %d tasks created, wall %v", n, p.setupOf.Load(), el)
	}
	p.mu.Lock()
	fmt.Fprintf(p.w, "\r%s\x1b[K", line)
	p.shown = true
	p.mu.Unlock()
}

// clear takes the progress line off the terminal before other output;
// the next tick draws it again.
func (p *progress) clear() {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
	p.mu.Unlock()
}

// stop ends the display and clears its line.
func (p *progress) stop() {
	if p == nil {
		return
	}
	close(p.stopc)
	p.wg.Wait()
	p.clear()
}

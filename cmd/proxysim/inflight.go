package main

import (
	"context"
	"sync"

	"github.com/proxysim/proxysim/internal/sim"
)

// inFlight is the set of runs executing now (explore's and ab's workers),
// so that a signal can stop them; a run not started by then never starts.
type inFlight struct {
	mu   sync.Mutex // guards runs
	runs map[*sim.Run]bool
}

func newInFlight() *inFlight { return &inFlight{runs: map[*sim.Run]bool{}} }

// execute runs r unless ctx is done already; ok is false if it did not
// run. The caller cancels ctx before stopAll, so a run is either never
// started or stopped.
func (f *inFlight) execute(ctx context.Context, r *sim.Run) (s *sim.Summary, ok bool) {
	f.mu.Lock()
	if ctx.Err() != nil {
		f.mu.Unlock()
		return nil, false
	}
	f.runs[r] = true
	f.mu.Unlock()
	s = r.Execute()
	f.mu.Lock()
	delete(f.runs, r)
	f.mu.Unlock()
	return s, true
}

// stopAll stops every run in flight.
func (f *inFlight) stopAll(why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for r := range f.runs {
		r.Stop(why)
	}
}

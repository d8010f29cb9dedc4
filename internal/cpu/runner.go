// This file is the runner: how the CPU goroutines interleave. The shell
// (shell.go, barrier.go, interp.go) talks only to this interface; the
// protocol code never knows which one runs it.

package cpu

import "github.com/proxysim/proxysim/internal/conductor"

// runner decides how CPU goroutines take turns: all at once on real locks
// (parallelRunner, the concurrent and lockstep modes) or one at a time,
// switching at every yield point (serialRunner, deterministic mode).
type runner interface {
	// enter and exit bracket a CPU goroutine's life.
	enter(cpu int)
	exit(cpu int)
	// yield marks a yield point of the shell: the end of a slice of
	// work, an IPI sent.
	yield(cpu int)
	// kick wakes cp's goroutine after an IPI was posted to it.
	kick(cp *CPU)
	// park waits at the barrier until still() is false: the epoch ended
	// (ch closed), or an IPI un-parked the CPU.
	park(cp *CPU, ch <-chan struct{}, still func() bool)
	// unblock lets a parked CPU go (the barrier released it).
	unblock(cpu int)
	// progress records that an epoch completed (the deterministic
	// watchdog counts turns between epochs).
	progress()
	// stop releases every CPU for good.
	stop()
	// deterministic reports serial mode.
	deterministic() bool
}

// parallelRunner lets the Go scheduler interleave the CPU goroutines.
type parallelRunner struct{}

func (parallelRunner) enter(int) {}
func (parallelRunner) exit(int)  {}
func (parallelRunner) yield(int) {}
func (parallelRunner) kick(cp *CPU) {
	select {
	case cp.kick <- struct{}{}:
	default:
	}
}
func (parallelRunner) park(cp *CPU, ch <-chan struct{}, still func() bool) {
	for {
		select {
		case <-ch:
			return
		case <-cp.kick:
			if !still() {
				return
			}
		}
	}
}
func (parallelRunner) unblock(int)         {}
func (parallelRunner) progress()           {}
func (parallelRunner) stop()               {}
func (parallelRunner) deterministic() bool { return false }

// serialRunner runs one CPU goroutine at a time under the conductor.
type serialRunner struct{ cd *conductor.Conductor }

func (s serialRunner) enter(cpu int) { s.cd.Enter(cpu) }
func (s serialRunner) exit(cpu int)  { s.cd.Exit(cpu) }
func (s serialRunner) yield(cpu int) { s.cd.Yield(cpu, false) }

// kick: the conductor decides when the target runs; unblocking it is the
// barrier's business (unblock).
func (s serialRunner) kick(*CPU) {}
func (s serialRunner) park(cp *CPU, _ <-chan struct{}, still func() bool) {
	for {
		s.cd.Block(cp.id)
		if !still() {
			return
		}
	}
}
func (s serialRunner) unblock(cpu int) { s.cd.Unblock(cpu) }
func (s serialRunner) progress()       { s.cd.Progress() }
func (s serialRunner) stop()           { s.cd.Stop() }

func (s serialRunner) deterministic() bool { return true }

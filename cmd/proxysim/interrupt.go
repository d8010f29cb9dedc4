package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// notifyInterrupts delivers SIGINT and SIGTERM; tests replace it with a
// channel of their own.
var notifyInterrupts = func() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	return ch, func() { signal.Stop(ch) }
}

// exitNow ends the process on a second signal (tests replace it).
var exitNow = os.Exit

// interruption turns the first SIGINT or SIGTERM into a clean stop of
// whatever is running (the command then prints its summary or keeps its
// best result and exits 130 or 143); a second signal exits at once.
type interruption struct {
	mu      sync.Mutex
	sig     os.Signal
	stop    func()
	stopped bool
	done    chan struct{}
	exited  chan struct{} // closed when the watcher goroutine returns
	release func()
}

// watchInterrupts starts watching; what says what a signal stops (for the
// one line it prints). Call close when the command is done.
func watchInterrupts(stderr io.Writer, what string) *interruption {
	ch, release := notifyInterrupts()
	in := &interruption{done: make(chan struct{}), exited: make(chan struct{}), release: release}
	go func() {
		defer close(in.exited)
		var s os.Signal
		select {
		case s = <-ch:
		case <-in.done:
			return
		}
		in.mu.Lock()
		in.sig = s
		stop := in.stop
		in.stopped = stop != nil
		in.mu.Unlock()
		fmt.Fprintf(stderr, "proxysim: %v: stopping %s (send it again to exit at once)\n", s, what)
		if stop != nil {
			stop()
		}
		select {
		case s = <-ch:
			fmt.Fprintf(stderr, "proxysim: second signal (%v): exiting at once\n", s)
			exitNow(signalExitCode(s))
		case <-in.done:
		}
	}()
	return in
}

// setStop sets what a signal stops; if one came already, stop runs now.
func (in *interruption) setStop(stop func()) {
	in.mu.Lock()
	in.stop = stop
	run := in.sig != nil && !in.stopped
	if run {
		in.stopped = true
	}
	in.mu.Unlock()
	if run {
		stop()
	}
}

// signal returns the signal received, or nil.
func (in *interruption) signal() os.Signal {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.sig
}

// interrupted reports whether a signal came.
func (in *interruption) interrupted() bool { return in.signal() != nil }

// exitCode is the exit code of the interrupted command: 128 + the
// signal's number.
func (in *interruption) exitCode() int { return signalExitCode(in.signal()) }

// close stops watching and waits for the watcher: a signal that came
// just before the command ended may still be printing its line, and the
// command's caller reads stderr next (TestInterrupt's buffer under -race).
func (in *interruption) close() {
	close(in.done)
	in.release()
	<-in.exited
}

func signalExitCode(s os.Signal) int {
	if s == syscall.SIGTERM {
		return exitTerminated
	}
	return exitInterrupted
}

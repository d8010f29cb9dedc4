package main

import (
	"os"
	"runtime"

	"github.com/proxysim/proxysim/internal/sim"
)

// serialProcs gives a deterministic run one P for as long as it runs and
// returns what puts the old count back. A deterministic run keeps one CPU
// goroutine runnable at a time, and handing the turn to a goroutine
// parked on the other P costs a thread wake-up at nearly every turn: at
// 256 CPUs one P gives 1.15-1.23 times the events per wall second
// (docs/architecture.md, "The floors under goals 1, 2 and 4"). A concurrent run, and a
// deterministic one under a GOMAXPROCS the user set, keep the count.
// Callers use it only where one run executes at a time in the process
// (run, stress, its retry, replay, a hunt); shrink and explore run
// deterministic candidates side by side, one per P.
func serialProcs(o sim.Options) (restore func()) {
	if !o.Deterministic || os.Getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	prev := runtime.GOMAXPROCS(1)
	return func() { runtime.GOMAXPROCS(prev) }
}

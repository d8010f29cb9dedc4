package main

import (
	"runtime"
	"testing"

	"github.com/proxysim/proxysim/internal/sim"
)

func TestSerialProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	t.Setenv("GOMAXPROCS", "")
	det := sim.Options{Deterministic: true}

	restore := serialProcs(det)
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("deterministic run: GOMAXPROCS %d, want 1", got)
	}
	restore()
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("after the deterministic run: GOMAXPROCS %d, want 3 back", got)
	}

	restore = serialProcs(sim.Options{})
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("concurrent run: GOMAXPROCS %d, want 3 kept", got)
	}
	restore()

	t.Setenv("GOMAXPROCS", "3")
	restore = serialProcs(det)
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("deterministic run under the user's GOMAXPROCS: %d, want 3 kept", got)
	}
	restore()
}

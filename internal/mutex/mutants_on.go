//go:build mutants

package mutex

import (
	"os"
	"strings"
)

// lateBlockedOn is a deliberate mistake for the detector tests: a waiter
// whose retry failed (asking for a hand-off as the first waiter) re-arms
// blocked_on and its sleep state only after dropping wait_lock, so an
// unlock in between hands the lock to it while it still runs, its wake-up
// is a no-op, and it then goes to sleep owning the lock (a lost hand-off).
// It exists only in binaries built with -tags mutants.
var lateBlockedOn bool

// wakeQNoRef: wake_q_add takes no reference on the task it queues (and
// wake_up_q drops none): a task that exits between a die or wound
// queueing it and the waker's wake_up_q is freed under the waker.
var wakeQNoRef bool

// SetMutant switches a deliberate mistake of this package on or off
// (tests; -tags mutants only). It reports whether name is known.
func SetMutant(name string, on bool) bool {
	switch name {
	case "late-blocked-on":
		lateBlockedOn = on
		return true
	case "wakeq-no-ref":
		wakeQNoRef = on
		return true
	}
	return false
}

func init() {
	// PROXYSIM_MUTANTS=name,name switches mistakes on in a mutants build
	// of the proxysim binary (race-build detection-time measurements).
	for _, n := range strings.Split(os.Getenv("PROXYSIM_MUTANTS"), ",") {
		SetMutant(strings.TrimSpace(n), true)
	}
}

func mutantLateBlockedOn() bool { return lateBlockedOn }

func mutantWakeQNoRef() bool { return wakeQNoRef }

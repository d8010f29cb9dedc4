//go:build mutants

package rq

import (
	"os"
	"strings"
)

// chargeCurr is a deliberate mistake for the detector tests: update_curr
// charges class time (vruntime, slice) to the execution context instead
// of the donor. It exists only in binaries built with -tags mutants.
var chargeCurr bool

// delayedOutOfAvg is a deliberate mistake for the EEVDF lag invariant: a
// delayed entity is taken out of avg_vruntime while it stays queued (the
// kernel keeps it in, so that V and the lag of the others do not jump).
var delayedOutOfAvg bool

// SetMutant switches a deliberate mistake of this package on or off
// (tests; -tags mutants only). It reports whether name is known.
func SetMutant(name string, on bool) bool {
	switch name {
	case "charge-curr":
		chargeCurr = on
		return true
	case "delayed-out-of-avg":
		delayedOutOfAvg = on
		return true
	case "dl-no-throttle":
		dlNoThrottle = on
		return true
	case "rt-prio-inverted":
		rtPrioInverted = on
		return true
	}
	return false
}

func init() {
	// PROXYSIM_MUTANTS=name,name switches mistakes on in a mutants build
	// of the proxysim binary.
	for _, n := range strings.Split(os.Getenv("PROXYSIM_MUTANTS"), ",") {
		SetMutant(strings.TrimSpace(n), true)
	}
}

func mutantChargeCurr() bool { return chargeCurr }

func mutantDelayedOutOfAvg() bool { return delayedOutOfAvg }

// dlNoThrottle is a deliberate mistake for the DL budget invariant:
// update_curr_dl charges the budget but never throttles.
var dlNoThrottle bool

func mutantDLNoThrottle() bool { return dlNoThrottle }

// rtPrioInverted is a deliberate mistake for the donor-rank invariant:
// wakeup_preempt between two RT tasks compares their priorities the
// wrong way round, so a more important waking task does not preempt a
// less important donor (and a less important one does).
var rtPrioInverted bool

func mutantRTPrioInverted() bool { return rtPrioInverted }

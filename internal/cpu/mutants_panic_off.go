//go:build !mutants

package cpu

import "github.com/proxysim/proxysim/internal/audit"

// Without the mutants build tag there is no deliberate panic, and the
// liveness checks are configured only by the machine's configuration.

func mutantPanic(*CPU) {}

func mutantLiveConfig(lc audit.LiveConfig) audit.LiveConfig { return lc }

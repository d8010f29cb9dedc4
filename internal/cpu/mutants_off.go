//go:build !mutants

package cpu

import (
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/task"
)

// Without the mutants build tag the deliberate mistakes of the detector
// tests do not exist: these hooks are constant and inline away.

func mutantUnlockedEnqueue(*percpu.Ctx, *rq.RQ, *task.Task) bool { return false }

func mutantSelectIgnoresMask(*Machine, *task.Task) (int, bool) { return 0, false }

func mutantFPTRetry() bool { return false }

func mutantPushNoResched() bool { return false }

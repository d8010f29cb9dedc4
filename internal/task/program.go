package task

import "fmt"

// OpKind is one instruction of a task program.
type OpKind uint8

// The instructions. Durations are virtual nanoseconds; where Max > Min the
// duration is drawn uniformly from [Min, Max] with the task's own seeded
// random source.
const (
	OpCompute  OpKind = iota // run on the CPU for a duration
	OpLock                   // mutex_lock(Mutex)
	OpUnlock                 // mutex_unlock(Mutex)
	OpSleep                  // sleep for a duration (schedule_hrtimeout)
	OpWait                   // sleep until woken by another task (TASK_INTERRUPTIBLE, no timeout)
	OpWake                   // wake_up_process(Target)
	OpYield                  // sched_yield()
	OpAffinity               // sched_setaffinity(Target or self, Mask)
	OpSetPrio                // sched_setscheduler(Target or self, Policy, Prio)
	OpLoop                   // jump to Jump; Count times (0: forever), then fall through
	OpChoose                 // with probability Prob jump to Jump, else fall through
	OpExit                   // do_exit()
	OpCookie                 // prctl(PR_SCHED_CORE): set the core-scheduling cookie (Prio) of Target or self
	NumOps
)

var opNames = [NumOps]string{"compute", "lock", "unlock", "sleep", "wait", "wake", "yield", "affinity", "setprio", "loop", "choose", "exit", "cookie"}

func (k OpKind) String() string {
	if k < NumOps {
		return opNames[k]
	}
	return fmt.Sprintf("op(%d)", uint8(k))
}

// ParseOpKind maps a name back to its OpKind.
func ParseOpKind(s string) (OpKind, bool) {
	for i, n := range opNames {
		if n == s {
			return OpKind(i), true
		}
	}
	return 0, false
}

// Op is one instruction.
type Op struct {
	Kind   OpKind
	Min    int64  // duration, ns
	Max    int64  // upper bound of a random duration; 0 means Min
	Mutex  int    // OpLock, OpUnlock: mutex index
	Target int    // OpWake, OpAffinity, OpSetPrio: task id (0: self)
	Mask   Mask   // OpAffinity
	Policy Policy // OpSetPrio
	Prio   int    // OpSetPrio: nice for Normal, rtprio for FIFO/RR
	Jump   int    // OpLoop, OpChoose: target pc
	Count  int    // OpLoop: iterations (0: forever)
	Prob   float64
}

// Program is a task's code.
type Program struct {
	Ops []Op
}

// Validate checks that jumps and mutex / task references are in range.
func (pr *Program) Validate(nMutex, nTask int) error {
	if len(pr.Ops) == 0 {
		return fmt.Errorf("empty program")
	}
	for i, op := range pr.Ops {
		switch op.Kind {
		case OpLock, OpUnlock:
			if op.Mutex < 0 || op.Mutex >= nMutex {
				return fmt.Errorf("op %d (%s): mutex %d out of range 0-%d", i, op.Kind, op.Mutex, nMutex-1)
			}
		case OpWake, OpAffinity, OpSetPrio, OpCookie:
			if op.Target < 0 || op.Target > nTask {
				return fmt.Errorf("op %d (%s): task %d out of range 1-%d", i, op.Kind, op.Target, nTask)
			}
			if op.Kind == OpWake && op.Target == 0 {
				return fmt.Errorf("op %d (wake): needs a target task", i)
			}
		case OpLoop, OpChoose:
			if op.Jump < 0 || op.Jump >= len(pr.Ops) {
				return fmt.Errorf("op %d (%s): jump target %d out of range 0-%d", i, op.Kind, op.Jump, len(pr.Ops)-1)
			}
		case OpCompute, OpSleep:
			if op.Min < 0 || (op.Max != 0 && op.Max < op.Min) {
				return fmt.Errorf("op %d (%s): bad duration %d..%d", i, op.Kind, op.Min, op.Max)
			}
		}
	}
	return nil
}

package task

import "fmt"

// OpKind is one instruction of a task program.
type OpKind uint8

// The instructions. Durations are virtual nanoseconds; where Max > Min the
// duration is drawn uniformly from [Min, Max] with the task's own seeded
// random source.
const (
	OpCompute        OpKind = iota // run on the CPU for a duration
	OpLock                         // mutex_lock(Mutex), or _interruptible/_killable (LockMode)
	OpUnlock                       // mutex_unlock(Mutex)
	OpSleep                        // sleep for a duration (schedule_hrtimeout)
	OpWait                         // sleep until woken by another task (TASK_INTERRUPTIBLE, no timeout)
	OpWake                         // wake_up_process(Target)
	OpYield                        // sched_yield()
	OpAffinity                     // sched_setaffinity(Target or self, Mask)
	OpSetPrio                      // sched_setscheduler(Target or self, Policy, Prio)
	OpLoop                         // jump to Jump; Count times (0: forever), then fall through
	OpChoose                       // with probability Prob jump to Jump, else fall through
	OpExit                         // do_exit()
	OpCookie                       // prctl(PR_SCHED_CORE): set the core-scheduling cookie (Prio) of Target or self
	OpSignal                       // kill(Target, a signal with a handler): interrupts INTERRUPTIBLE waits
	OpKill                         // kill(Target, SIGKILL): interrupts KILLABLE waits too; the target exits
	OpMigrateDisable               // migrate_disable(): pin the task to its CPU (nests)
	OpMigrateEnable                // migrate_enable(): end the innermost migrate_disable region
	OpCPUOffline                   // echo 0 > /sys/devices/system/cpu/cpuN/online (CPU): request, do not wait
	OpCPUOnline                    // echo 1 > /sys/devices/system/cpu/cpuN/online (CPU): request, do not wait
	// The ww_mutex instructions (include/linux/ww_mutex.h). A task has at
	// most one acquire context open.
	OpWWInit     // ww_acquire_init(ctx, class Class): open a context with the class's next stamp
	OpWWLock     // ww_mutex_lock(Mutex, ctx) (or _interruptible: LockMode); -EDEADLK or -EINTR backs off and jumps to Jump
	OpWWLockSlow // ww_mutex_lock_slow(ctx's contended lock, ctx) after a back-off; nothing if none is pending
	OpWWUnlock   // ww_mutex_unlock(Mutex)
	OpWWFini     // ww_acquire_fini(ctx): close the context (it must hold nothing)
	// OpSys is one step of a kernel path on a kernel object, or of a
	// user-space synchronisation primitive, that the benchmark workloads
	// model (Op.Sys on object Op.Obj: pipe_write's part under pipe->mutex,
	// a wait_event on a wait queue, lock_sock, a futex wait ...; see
	// SysOp). Built-in benchmarks only: scenario files cannot name one.
	OpSys
	NumOps
)

var opNames = [NumOps]string{"compute", "lock", "unlock", "sleep", "wait", "wake", "yield", "affinity", "setprio", "loop", "choose", "exit", "cookie", "signal", "kill", "migrate_disable", "migrate_enable", "offline", "online",
	"ww_acquire_init", "ww_lock", "ww_lock_slow", "ww_unlock", "ww_acquire_fini", "sys"}

func (k OpKind) String() string {
	if k < NumOps {
		return opNames[k]
	}
	return fmt.Sprintf("op(%d)", uint8(k))
}

// LockMode is the sleep state of a mutex wait (OpLock): mutex_lock(),
// mutex_lock_interruptible() or mutex_lock_killable().
type LockMode uint8

const (
	LockUninterruptible LockMode = iota // mutex_lock: TASK_UNINTERRUPTIBLE
	LockInterruptible                   // mutex_lock_interruptible: TASK_INTERRUPTIBLE, -EINTR on any signal
	LockKillable                        // mutex_lock_killable: TASK_KILLABLE, -EINTR on a fatal signal
)

// SleepState is the state the mutex slow path sleeps in.
func (m LockMode) SleepState() State {
	switch m {
	case LockInterruptible:
		return Interruptible
	case LockKillable:
		return Killable
	}
	return Uninterruptible
}

var lockModeNames = [...]string{"lock", "lock_interruptible", "lock_killable"}

// Name is the instruction's name in programs and scenario files: the
// kind, or lock_interruptible / lock_killable for those lock modes.
func (op *Op) Name() string {
	if op.Kind == OpLock && int(op.LockMode) < len(lockModeNames) {
		return lockModeNames[op.LockMode]
	}
	if op.Kind == OpWWLock && op.LockMode == LockInterruptible {
		return "ww_lock_interruptible"
	}
	if op.Kind == OpSys {
		return op.Sys.String()
	}
	return op.Kind.String()
}

// ParseOpName maps an instruction name (a kind, or lock_interruptible,
// lock_killable) to its kind and lock mode.
func ParseOpName(s string) (OpKind, LockMode, bool) {
	for i, n := range lockModeNames {
		if i > 0 && n == s {
			return OpLock, LockMode(i), true
		}
	}
	if s == "ww_lock_interruptible" {
		return OpWWLock, LockInterruptible, true
	}
	k, ok := ParseOpKind(s)
	return k, LockUninterruptible, ok
}

// ParseOpKind maps a name back to its OpKind.
func ParseOpKind(s string) (OpKind, bool) {
	for i, n := range opNames {
		if n == s && OpKind(i) != OpSys { // sys operations are built-in benchmark code
			return OpKind(i), true
		}
	}
	return 0, false
}

// Op is one instruction.
type Op struct {
	Kind  OpKind
	Min   int64 // duration, ns
	Max   int64 // upper bound of a random duration; 0 means Min
	Mutex int   // OpLock, OpUnlock: mutex index
	// LockMode (OpLock) is the wait's sleep state. A wait that ends with
	// -EINTR (a signal) skips to EINTRPC: the instruction after the
	// matching unlock (Program.Link sets it).
	LockMode LockMode
	EINTRPC  int
	Target   int      // OpWake, OpSignal, OpKill, OpAffinity, OpSetPrio: task id (0: self)
	Mask     Mask     // OpAffinity
	Policy   Policy   // OpSetPrio
	Prio     int      // OpSetPrio: nice for Normal, rtprio for FIFO/RR
	DL       DLParams // OpSetPrio with Policy Deadline: sched_attr's runtime, deadline, period
	CPU      int      // OpCPUOffline, OpCPUOnline: the CPU
	Jump     int      // OpLoop, OpChoose: target pc; OpWWLock: where a back-off goes on
	Class    int      // OpWWInit: ww_class index
	Count    int      // OpLoop: iterations (0: forever)
	Prob     float64
	// Sys and Obj (OpSys) are the operation and the kernel (or
	// user-space) object it works on: an index into the machine's
	// objects (cpu.Machine.AddObject).
	Sys SysOp
	Obj int
}

// Program is a task's code.
type Program struct {
	Ops []Op
}

// Link resolves what the program needs at run time: for each
// interruptible or killable lock, the pc after the next unlock of the same
// mutex (at the same nesting depth of that mutex), where the program goes
// on when the wait fails with -EINTR: it skips the critical section it
// did not get. Without a matching unlock it goes on at the next
// instruction.
func (pr *Program) Link() {
	for i := range pr.Ops {
		op := &pr.Ops[i]
		if op.Kind != OpLock || op.LockMode == LockUninterruptible {
			continue
		}
		op.EINTRPC = i + 1
		depth := 0
		for j := i + 1; j < len(pr.Ops); j++ {
			o := &pr.Ops[j]
			if o.Mutex != op.Mutex {
				continue
			}
			if o.Kind == OpLock {
				depth++
			} else if o.Kind == OpUnlock {
				if depth == 0 {
					op.EINTRPC = j + 1
					break
				}
				depth--
			}
		}
	}
}

// UsesHotplug reports whether the program takes CPUs offline or online.
func (pr *Program) UsesHotplug() bool {
	for _, op := range pr.Ops {
		if op.Kind == OpCPUOffline || op.Kind == OpCPUOnline {
			return true
		}
	}
	return false
}

// Validate checks that jumps and mutex / task references are in range.
func (pr *Program) Validate(nMutex, nTask int) error {
	if len(pr.Ops) == 0 {
		return fmt.Errorf("empty program")
	}
	for i, op := range pr.Ops {
		switch op.Kind {
		case OpLock, OpUnlock, OpWWLock, OpWWUnlock:
			if op.Mutex < 0 || op.Mutex >= nMutex {
				return fmt.Errorf("op %d (%s): mutex %d out of range 0-%d", i, op.Kind, op.Mutex, nMutex-1)
			}
		case OpWake, OpSignal, OpKill, OpAffinity, OpSetPrio, OpCookie:
			if op.Target < 0 || op.Target > nTask {
				return fmt.Errorf("op %d (%s): task %d out of range 1-%d", i, op.Kind, op.Target, nTask)
			}
			if (op.Kind == OpWake || op.Kind == OpSignal || op.Kind == OpKill) && op.Target == 0 {
				return fmt.Errorf("op %d (%s): needs a target task", i, op.Kind)
			}
		case OpWWInit:
			if op.Class < 0 {
				return fmt.Errorf("op %d (%s): bad ww class %d", i, op.Kind, op.Class)
			}
		case OpSys:
			if op.Sys == 0 || op.Sys >= NumSysOps {
				return fmt.Errorf("op %d (%s): unknown sys operation %d", i, op.Kind, op.Sys)
			}
			if op.Obj < 0 {
				return fmt.Errorf("op %d (%s): object %d out of range", i, op.Sys, op.Obj)
			}
			if op.Sys.Jumps() && (op.Jump < 0 || op.Jump >= len(pr.Ops)) {
				return fmt.Errorf("op %d (%s): jump target %d out of range 0-%d", i, op.Sys, op.Jump, len(pr.Ops)-1)
			}
		}
		switch op.Kind {
		case OpLoop, OpChoose, OpWWLock:
			if op.Jump < 0 || op.Jump >= len(pr.Ops) {
				return fmt.Errorf("op %d (%s): jump target %d out of range 0-%d", i, op.Kind, op.Jump, len(pr.Ops)-1)
			}
		case OpCPUOffline, OpCPUOnline:
			if op.CPU < 0 || op.CPU >= MaxCPUs {
				return fmt.Errorf("op %d (%s): cpu %d out of range", i, op.Kind, op.CPU)
			}
		case OpCompute, OpSleep:
			if op.Min < 0 || (op.Max != 0 && op.Max < op.Min) {
				return fmt.Errorf("op %d (%s): bad duration %d..%d", i, op.Kind, op.Min, op.Max)
			}
		}
	}
	return nil
}

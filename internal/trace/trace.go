package trace

import (
	"fmt"
	"github.com/proxysim/proxysim/internal/relaxed"
	"sort"
	"sync/atomic"
)

// Kind is an event type.
type Kind uint8

// Event kinds. Arg meanings are listed per kind.
const (
	EvSwitch         Kind = iota // Task=next, A=prev, B=donor
	EvWake                       // Task=wakee, A=target cpu, B=1 if via wake list
	EvWakeRunnable               // Task=wakee (ttwu_runnable: still queued)
	EvMigrate                    // Task, A=from, B=to, C=reason (MigrateReason)
	EvLock                       // Task, A=mutex
	EvContend                    // Task, A=mutex, B=owner
	EvUnlock                     // Task, A=mutex, B=next owner (0: none)
	EvHandoff                    // Task=new owner, A=mutex, B=1 if donor hand-off
	EvBlock                      // Task, A=state
	EvDonorKeep                  // Task kept queued as a donor
	EvProxyPick                  // Task=owner run, A=donor, B=chain length
	EvReschedIdle                // A=donor
	EvParkOnOwner                // Task=parked waiter, A=owner
	EvActivate                   // Task=activated waiter, A=owner, B=target cpu
	EvIsBlocked                  // Task, A=new is_blocked (0/1)
	EvIPI                        // Task unused, A=target cpu, B=kind
	EvTick                       // Task=curr, A=donor
	EvPreempt                    // Task=curr, A=by
	EvSleep                      // Task, A=duration in us
	EvExit                       // Task
	EvViolation                  // A=invariant number
	EvAffinity                   // Task, A=first cpu of new mask
	EvSetPrio                    // Task, A=prio
	EvLoadBalance                // Task moved, A=from, B=to
	EvBlockedOnClear             // Task, A=mutex (blocked_on cleared by a hand-off, wake-up or find_proxy_task)
	EvCorePick                   // Task=this CPU's pick, A=core cookie, B=siblings forced idle (core-wide pick)
	EvCookie                     // Task, A=new core cookie (prctl PR_SCHED_CORE)
	EvLockEINTR                  // Task, A=mutex: an interruptible/killable wait ended with -EINTR
	EvSignal                     // Task=target, A=1 if fatal (SIGKILL), B=1 if the wake-up woke it
	EvSignalHandled              // Task, A=1 if fatal
	EvSpuriousWake               // Task=woken waiter, A=mutex, B=1 if it woke it
	EvSpin                       // Task, A=mutex, B=1 if the first waiter's spin: optimistic spinning starts
	EvSpinEnd                    // Task, A=mutex, B=SpinEnd* (how it ended), C=turns
	EvSRQPop                     // Task popped off a shared_runq shard, A=shard, B=its task_cpu at the pop
	EvSRQRecheck                 // Task, A=SRQRecheck* (why the pull failed under task_rq_lock), B=its cpu
	EvSRQDrain                   // A=LLC, B=tasks unlinked, C=1 toggle / 2 rebuild
	EvHotplug                    // A=cpu, B=Hotplug* step
	EvMigrateDisable             // Task, A=new migration_disabled depth
	EvCoreFlip                   // Task=1 if switched on, 0 if off: core scheduling flipped on every core (__sched_core_flip)
	EvWWWound                    // Task=wounded owner, A=mutex, B=wounder
	EvWWDie                      // Task=waiter woken to die, A=mutex, B=locker
	EvWWBackoff                  // Task, A=mutex: a ww wait returned -EDEADLK (B=1: from the wait loop, 0: before queueing)
	EvDLThrottle                 // Task (the DL entity charged), A=runtime left in us, B=1 if constrained-deadline throttle at activation
	EvDLReplenish                // Task, A=new runtime in us, B=deadline - rq clock in us
	EvDLAdmission                // Task, A=0 admitted, 1 refused (-EBUSY: bandwidth), 2 sched_setattr refused (-EPERM: mask short of the root domain), 3 sched_setaffinity of a DL task refused (-EBUSY)
	EvDelayed                    // Task, A=cpu, B=1 if its sleep dequeue was delayed (sched_delayed set), 0 if a wake-up requeued it
	EvFork                       // Task (the new one), A=cpu it was placed on, B=generation of its slot: wake_up_new_task of a respawned task
	EvSys                        // Task, A=task.SysOp, B=object, C=SysWait* (a benchmark path's kernel object: a wait, or the step that found it must wait)
	NumKinds
)

var kindNames = [NumKinds]string{"switch", "wake", "wake_runnable", "migrate", "lock", "contend", "unlock", "handoff",
	"block", "donor_keep", "proxy_pick", "resched_idle", "park_on_owner", "activate_waiter", "is_blocked", "ipi", "tick",
	"preempt", "sleep", "exit", "violation", "affinity", "setprio", "load_balance", "blocked_on_clear",
	"core_pick", "cookie", "lock_eintr", "signal", "signal_handled", "spurious_wake", "spin", "spin_end",
	"srq_pop", "srq_recheck", "srq_drain", "hotplug", "migrate_disable", "core_flip",
	"ww_wound", "ww_die", "ww_backoff",
	"dl_throttle", "dl_replenish", "dl_admission", "delayed", "fork", "sys"}

// What an EvSys records (its C).
const (
	SysWaits   = 1 // the path must wait (ring full, queue empty, socket owned)
	SysSleep   = 2 // schedule() in the path's wait loop
	SysBacklog = 3 // a segment went to the socket's backlog: its user owned it
)

// Why a shared_runq pull failed its recheck under task_rq_lock
// (EvSRQRecheck's A).
const (
	SRQRecheckDequeued   = 0
	SRQRecheckOnCPU      = 1
	SRQRecheckNotAllowed = 2
	SRQRecheckBlocked    = 3
	SRQRecheckDonor      = 4
)

// CPU hotplug steps (EvHotplug's B).
const (
	HotplugDeactivate = 0 // sched_cpu_deactivate: cpu_active cleared, balance_push on
	HotplugDying      = 1 // take_cpu_down / sched_cpu_dying: cpu_online cleared
	HotplugActivate   = 2 // bring-up and sched_cpu_activate: online and active again
)

// How an optimistic spin ended (EvSpinEnd's B).
const (
	SpinEndAcquired = 0 // took the lock
	SpinEndOwner    = 1 // the owner is not on a CPU
	SpinEndResched  = 2 // need_resched: scheduled first
)

func (k Kind) String() string {
	if k < NumKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// MigrateReason says why a task moved (EvMigrate's C).
type MigrateReason int32

const (
	ReasonLoadBalance MigrateReason = iota
	ReasonProxy
	ReasonChain
	ReasonReturn
	ReasonActivation
	ReasonAffinity
	ReasonWake
	ReasonSharedRunq // a shared_runq pull (SHARED_RUNQ)
	ReasonHotplug
	NumReasons
)

var reasonNames = [NumReasons]string{"load_balance", "proxy", "chain", "return", "activation", "affinity", "wake", "shared_runq", "hotplug"}

func (r MigrateReason) String() string {
	if r >= 0 && r < NumReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", int32(r))
}

// Event is one flight-recorder entry.
type Event struct {
	Seq  uint64
	Time int64 // virtual ns on the recording CPU
	CPU  int32
	Kind Kind
	Task int32
	A, B int32
	C    int32
}

// Log is the machine-wide part of the recorder: the sequence counter.
type Log struct {
	// seq is bumped by every CPU at every event, through package relaxed:
	// under the race detector a sync/atomic Add here would order each
	// CPU's past before every other CPU's next event, hiding every race
	// whose two sides have an event between them. The kernel's trace
	// buffers are per CPU and order nothing.
	seq   atomic.Uint64
	Rings []*Ring
	// hash is a hash over every event in order (mix). Only kept in
	// serial (deterministic) mode, where one goroutine records at a time.
	hashOn bool
	hash   uint64
	// watch, if set, is given every event as well (an explanation
	// replay: serial mode only).
	watch *Watch
}

// SetWatch gives every event recorded from now on to w as well.
func (l *Log) SetWatch(w *Watch) { l.watch = w }

// EnableHash starts hashing the full event sequence (serial mode only).
func (l *Log) EnableHash() { l.hashOn, l.hash = true, 14695981039346656037 }

// Hash returns the event-sequence hash, or 0 when not kept.
func (l *Log) Hash() uint64 { return l.hash }

// mix folds one event into the hash: its fields packed into five words,
// each xored in, multiplied by an odd constant and folded down (a
// multiply-xorshift step). It replaced an FNV-1a over the event's 64
// bytes, one multiply per byte, which was an eighth of a 256-CPU serial
// run; the hash is an identity for a schedule, read only at the end.
func (l *Log) mix(e *Event) {
	const k = 0x9e3779b97f4a7c15
	h := l.hash
	for _, w := range [...]uint64{
		e.Seq,
		uint64(e.Time),
		uint64(uint32(e.CPU))<<8 | uint64(e.Kind),
		uint64(uint32(e.Task))<<32 | uint64(uint32(e.A)),
		uint64(uint32(e.B))<<32 | uint64(uint32(e.C)),
	} {
		h = (h ^ w) * k
		h ^= h >> 32
	}
	l.hash = h
}

// NewLog makes a log with one ring of size events per CPU.
func NewLog(ncpu, size int) *Log {
	if size < 16 {
		size = 16
	}
	// round up to a power of two
	n := 16
	for n < size {
		n <<= 1
	}
	l := &Log{Rings: make([]*Ring, ncpu)}
	for i := range l.Rings {
		l.Rings[i] = &Ring{log: l, cpu: int32(i), ev: make([]Event, n), mask: uint64(n - 1)}
	}
	return l
}

// Seq returns the number of events recorded so far.
func (l *Log) Seq() uint64 { return l.seq.Load() }

// Ring is one CPU's ring. Owned by that CPU's goroutine.
type Ring struct {
	log  *Log
	cpu  int32
	ev   []Event
	mask uint64
	n    uint64 // events written
}

// Emit records an event.
func (r *Ring) Emit(now int64, k Kind, task, a, b, c int32) {
	e := &r.ev[r.n&r.mask]
	e.Seq = relaxed.AddUint64(&r.log.seq, 1)
	e.Time = now
	e.CPU = r.cpu
	e.Kind = k
	e.Task = task
	e.A, e.B, e.C = a, b, c
	r.n++
	if r.log.hashOn {
		r.log.mix(e)
	}
	if w := r.log.watch; w != nil {
		w.event(e)
	}
}

// Len returns the number of events the ring holds.
func (r *Ring) Len() int {
	if r.n < uint64(len(r.ev)) {
		return int(r.n)
	}
	return len(r.ev)
}

// Written returns the number of events the ring has recorded, held or
// overwritten: a position for Since.
func (r *Ring) Written() uint64 { return r.n }

// Since calls f on each event the ring still holds from position from
// (a Written value) on, oldest first, and returns the position after the
// last. Only call with the ring's CPU stopped.
func (r *Ring) Since(from uint64, f func(*Event)) uint64 {
	if oldest := r.n - uint64(r.Len()); from < oldest {
		from = oldest
	}
	for i := from; i < r.n; i++ {
		f(&r.ev[i&r.mask])
	}
	return r.n
}

// Holds reports whether e, an event of this ring, is still in it (not
// overwritten).
func (r *Ring) Holds(e *Event) bool {
	if r.n == 0 {
		return false
	}
	return r.ev[(r.n-uint64(r.Len()))&r.mask].Seq <= e.Seq
}

// Events returns the ring's events, oldest first.
func (r *Ring) Events() []Event {
	n := r.Len()
	out := make([]Event, 0, n)
	for i := r.n - uint64(n); i < r.n; i++ {
		out = append(out, r.ev[i&r.mask])
	}
	return out
}

// Merged returns the last `last` events of all CPUs in global order
// (all if last <= 0). Only call with the machine stopped.
func (l *Log) Merged(last int) []Event {
	var all []Event
	for _, r := range l.Rings {
		all = append(all, r.Events()...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Seq < all[j].Seq })
	// Rings wrap at different points: drop the prefix before the newest
	// "oldest event" so the merged view has no holes.
	var cut uint64
	for _, r := range l.Rings {
		if r.n > uint64(len(r.ev)) {
			if first := r.ev[(r.n-uint64(len(r.ev)))&r.mask].Seq; first > cut {
				cut = first
			}
		}
	}
	i := sort.Search(len(all), func(i int) bool { return all[i].Seq >= cut })
	all = all[i:]
	if last > 0 && len(all) > last {
		all = all[len(all)-last:]
	}
	return all
}

// Format renders an event in one line, naming tasks with name(id).
func (e Event) Format(name func(int32) string) string {
	t := name(e.Task)
	switch e.Kind {
	case EvSwitch:
		return fmt.Sprintf("#%d t=%d cpu%d switch %s -> %s (donor %s)", e.Seq, e.Time, e.CPU, name(e.A), t, name(e.B))
	case EvMigrate:
		return fmt.Sprintf("#%d t=%d cpu%d migrate %s cpu%d -> cpu%d (%s)", e.Seq, e.Time, e.CPU, t, e.A, e.B, MigrateReason(e.C))
	case EvProxyPick:
		return fmt.Sprintf("#%d t=%d cpu%d proxy_pick run %s for donor %s (chain %d)", e.Seq, e.Time, e.CPU, t, name(e.A), e.B)
	case EvContend:
		return fmt.Sprintf("#%d t=%d cpu%d contend %s on m%d owned by %s", e.Seq, e.Time, e.CPU, t, e.A, name(e.B))
	case EvIsBlocked:
		return fmt.Sprintf("#%d t=%d cpu%d is_blocked %s = %d", e.Seq, e.Time, e.CPU, t, e.A)
	case EvBlockedOnClear:
		return fmt.Sprintf("#%d t=%d cpu%d blocked_on_clear %s (was m%d)", e.Seq, e.Time, e.CPU, t, e.A)
	case EvParkOnOwner, EvActivate:
		return fmt.Sprintf("#%d t=%d cpu%d %s %s owner %s", e.Seq, e.Time, e.CPU, e.Kind, t, name(e.A))
	}
	return fmt.Sprintf("#%d t=%d cpu%d %s %s a=%d b=%d", e.Seq, e.Time, e.CPU, e.Kind, t, e.A, e.B)
}

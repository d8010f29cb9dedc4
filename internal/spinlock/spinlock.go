package spinlock

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/proxysim/proxysim/internal/stats"
)

// Class is a lock class in the lockdep sense: all runqueue locks are one
// class, all pi_locks another, and so on.
type Class uint8

// The lock classes of the proxy-execution protocol, in their documented
// acquisition order (outer first). ClassTimer and ClassOther are leaves:
// nothing may be taken while holding them.
const (
	ClassPiLock Class = iota
	ClassRQ
	ClassWaitLock
	ClassBlockedLock
	ClassTimer
	ClassOther
	// ClassSigLock is sighand->siglock. It is outside pi_lock: a signal's
	// sender holds it across the wake-up (signal_wake_up_state).
	ClassSigLock
	// ClassShard is a shared_runq shard's lock (SHARED_RUNQ): the
	// innermost lock, taken under the rq lock (push, remove, pop) and,
	// through activate/deactivate_task, under a task's blocked_lock;
	// nothing is taken under it.
	ClassShard
	// ClassWaitQueue is a wait queue head's lock (wq_head->lock):
	// __wake_up_common_lock holds it across try_to_wake_up, so it is
	// outside pi_lock.
	ClassWaitQueue
	// ClassSockLock is a socket's sk_lock.slock (lock_sock, release_sock,
	// bh_lock_sock) and ClassUnixState a unix socket's u->lock
	// (unix_state_lock): both are held across a wait queue's lock
	// (release_sock's wake-up of sk_lock.wq, sk_data_ready under
	// bh_lock_sock, unix_stream_data_wait's prepare_to_wait), so they are
	// outside it.
	ClassSockLock
	ClassUnixState
	NumClasses
)

var classNames = [NumClasses]string{"pi_lock", "rq->lock", "wait_lock", "blocked_lock", "timer_base", "other", "siglock", "shared_runq->lock",
	"wq_head->lock", "sk_lock.slock", "unix_sock->lock"}

func (k Class) String() string {
	if k < NumClasses {
		return classNames[k]
	}
	return fmt.Sprintf("class(%d)", uint8(k))
}

// Lock is a raw spinlock. The zero value is not usable: use Init.
type Lock struct {
	mu    sync.Mutex
	class Class
	// sub orders locks of one class: the (core, CPU) key for rq locks
	// (double_rq_lock takes the lower first, as rq_order_less() orders
	// them), the task id for per-task locks.
	sub int32
	// holder is the id+1 of the CPU holding the lock, 0 when free. Written
	// only by the holder; read without lock by assertions and reports.
	holder atomic.Int32
}

// Init sets the lock's class and its ordering key within the class.
func (l *Lock) Init(class Class, sub int) {
	l.class = class
	l.sub = int32(sub)
}

// Class returns the lock's class.
func (l *Lock) Class() Class { return l.class }

// Sub returns the lock's ordering key within its class.
func (l *Lock) Sub() int { return int(l.sub) }

// Holder returns the id of the CPU holding the lock, or -1.
func (l *Lock) Holder() int { return int(l.holder.Load()) - 1 }

// Point names a yield point for Hooks.
type Point uint8

// Yield points inside the lock layer.
const (
	PointAcquire Point = iota // about to take a lock
	PointSpin                 // a try failed: the lock is held elsewhere
	PointRelease              // a lock was just dropped (a lock-juggling window opens)
	PointRelax                // cpu_relax() in a wait loop (ttwu waiting for on_cpu, task_rq_lock waiting for a move)
	PointStep                 // a step of a loop that makes progress (each link of the find_proxy_task walk)
	NumPoints
)

var pointNames = [NumPoints]string{"acquire", "spin", "release", "relax", "step"}

func (p Point) String() string {
	if p < NumPoints {
		return pointNames[p]
	}
	return fmt.Sprintf("point(%d)", uint8(p))
}

// Hooks is called at every yield point. Stress jitter widens race windows
// here; the deterministic conductor switches goroutines here.
type Hooks interface {
	// Yield is called at PointAcquire, PointRelease and PointRelax.
	Yield(c *CPU, pt Point)
	// Spin is called after a failed try of l. It returns true if it has
	// handled the wait (for example by yielding to the conductor) and the
	// lock layer should simply try again; false lets the lock layer wait
	// its own way (spin a little, then block in the mutex).
	Spin(c *CPU, l *Lock) bool
}

const maxHeld = 16

// CPU is the per-CPU lock context: which locks this CPU holds, in which
// order, and its contention counters. Owned by its CPU goroutine; the
// counters are atomics only so that metric scrapes can read them.
type CPU struct {
	ID    int
	Hooks Hooks      // nil: no yield points
	Dep   *Validator // nil: no lock-order validation

	held  [maxHeld]*Lock
	nHeld int
	// known[h] has bit t set once this CPU saw Dep record the edge h -> t.
	known [NumClasses]uint16
	// usageKnown[k] is the subset of Dep's usage bits of class k this CPU
	// has seen set (they are only ever added).
	usageKnown [NumClasses]Usage
	// irqOff, hardirq and softirq are the CPU's IRQ state (irq.go).
	irqOff, hardirq, softirq int32
	// Describe, if set, names the task running on this CPU and its clock,
	// for lockdep's reports. Called by the owning goroutine.
	Describe func() (comm string, now int64)
	// OnLock, if set, is told of every lock this CPU takes (taken) and
	// drops: the explanation replay's watch (trace.Watch). Called by the
	// owning goroutine.
	OnLock func(l *Lock, taken bool)

	Acquisitions atomic.Uint64 // all acquisitions
	Contended    atomic.Uint64 // acquisitions whose first try failed
	Spins        atomic.Uint64 // failed tries in total
	// SpinHist counts acquisitions by failed tries: bucket i holds
	// acquisitions that needed fewer than 2^i failed tries (last: the rest).
	SpinHist [SpinBuckets]atomic.Uint64
}

// SpinBuckets is the number of buckets of CPU.SpinHist.
const SpinBuckets = 8

// NewCPU returns the lock context of CPU id.
func NewCPU(id int) *CPU { return &CPU{ID: id} }

// Held returns the number of locks this CPU holds.
func (c *CPU) Held() int { return c.nHeld }

// HeldLocks describes the locks this CPU holds, outermost first.
func (c *CPU) HeldLocks() string {
	s := ""
	for i := 0; i < c.nHeld; i++ {
		if i > 0 {
			s += " -> "
		}
		s += fmt.Sprintf("%s#%d", c.held[i].class, c.held[i].sub)
	}
	return s
}

// Relax is cpu_relax(): called in every wait loop so that jitter and the
// conductor can interleave other CPUs there.
func (c *CPU) Relax() {
	if c.Hooks != nil {
		c.Hooks.Yield(c, PointRelax)
	}
	runtime.Gosched()
}

// YieldPoint marks a step of a loop that makes progress (not a wait):
// jitter may widen the window here, the conductor may switch CPUs.
func (c *CPU) YieldPoint() {
	if c.Hooks != nil {
		c.Hooks.Yield(c, PointStep)
	}
	runtime.Gosched()
}

// spinYields is how many times a contended acquisition yields (and
// tries again) before it blocks in the mutex until the holder's unlock
// hands it over. A yield puts the CPU goroutine at the back of the Go
// runtime's global run queue, behind every other CPU goroutine, and a
// holder that is not running is not brought back any sooner by yielding:
// with 256 CPU goroutines on two Ps each yield costs about a microsecond
// (BenchmarkYieldFloor). Blocking after 2 tries instead of 8 took 12% off
// the CPU time of the default run with the same event mix
// (docs/architecture.md, "Cost of a simulated switch").
const spinYields = 2

// Lock takes l on behalf of CPU c.
func (l *Lock) Lock(c *CPU) { l.lock(c, false) }

// LockNested takes l while a lock of the same class is held, where the
// protocol allows it (mutex unlock nests the donor's blocked_lock inside the
// owner's): lockdep's spin_lock_nested().
func (l *Lock) LockNested(c *CPU) { l.lock(c, true) }

// LockNestedRoles is LockNested for a task's blocked_lock, saying which
// part the holder of the outer lock and the owner of l play for the
// mutex at hand (RoleOwner: it owns the mutex; RoleWaiter: it waits for,
// or is about to wait for, the mutex). lockdep's SINGLE_DEPTH_NESTING
// gives every nesting one subclass, so it cannot tell an owner nesting
// its waiter's lock from a waiter nesting its owner's; keyed by role it
// can, and it reports the first nesting whose reverse was seen before:
// an AB-BA between two tasks' blocked_locks (Validator.roleEdge).
func (l *Lock) LockNestedRoles(c *CPU, outer, inner Role) {
	if c.Dep != nil {
		c.Dep.roleEdge(c, l, outer, inner)
	}
	l.lock(c, true)
}

func (l *Lock) lock(c *CPU, nested bool) {
	if irqsaveClass[l.class] {
		// raw_spin_lock_irqsave: IRQs off before lockdep sees the
		// acquisition.
		c.irqOff++
	}
	if c.Dep != nil {
		c.Dep.check(c, l, nested)
	}
	if c.Hooks != nil {
		c.Hooks.Yield(c, PointAcquire)
	}
	if !l.mu.TryLock() {
		stats.Bump(&c.Contended, 1)
		spins := uint64(0)
		for {
			spins++
			if c.Hooks != nil && c.Hooks.Spin(c, l) {
				if l.mu.TryLock() {
					break
				}
				continue
			}
			if spins > spinYields {
				l.mu.Lock()
				break
			}
			runtime.Gosched()
			if l.mu.TryLock() {
				break
			}
		}
		stats.Bump(&c.Spins, spins)
		stats.Bump(&c.SpinHist[spinBucket(spins)], 1)
	} else {
		stats.Bump(&c.SpinHist[0], 1)
	}
	stats.Bump(&c.Acquisitions, 1)
	l.setHolder(int32(c.ID) + 1)
	if c.nHeld == maxHeld {
		panic("spinlock: too many locks held on cpu " + fmt.Sprint(c.ID) + ": " + c.HeldLocks())
	}
	c.held[c.nHeld] = l
	c.nHeld++
	if c.OnLock != nil {
		c.OnLock(l, true)
	}
}

func spinBucket(spins uint64) int {
	b := 0
	for spins > 0 && b < SpinBuckets-1 {
		spins >>= 1
		b++
	}
	return b
}

// heldAt returns where l is on c's stack of held locks, or -1. c's own
// record, so "do I hold it" needs no load of the shared holder word (an
// acquire under the race detector, tens of nanoseconds each).
func (c *CPU) heldAt(l *Lock) int {
	i := c.nHeld - 1
	for i >= 0 && c.held[i] != l {
		i--
	}
	return i
}

// HeldBy reports whether CPU c holds l (c's own record: no shared load).
func (l *Lock) HeldBy(c *CPU) bool { return c.heldAt(l) >= 0 }

// Unlock releases l, which CPU c must hold.
func (l *Lock) Unlock(c *CPU) {
	i := c.heldAt(l)
	if i < 0 {
		panic(fmt.Sprintf("spinlock: cpu %d releases %s#%d held by cpu %d", c.ID, l.class, l.sub, l.Holder()))
	}
	copy(c.held[i:], c.held[i+1:c.nHeld])
	c.nHeld--
	c.held[c.nHeld] = nil
	l.setHolder(0)
	l.mu.Unlock()
	if c.OnLock != nil {
		c.OnLock(l, false)
	}
	if irqsaveClass[l.class] {
		// raw_spin_unlock_irqrestore: IrqEnable, its common case
		// inline.
		if c.irqOff > 1 {
			c.irqOff--
		} else {
			c.IrqEnable()
		}
	}
	if c.Hooks != nil {
		c.Hooks.Yield(c, PointRelease)
	}
}

// AssertHeld panics unless CPU c holds l (lockdep_assert_held).
func (l *Lock) AssertHeld(c *CPU) {
	if c.heldAt(l) < 0 {
		panic(fmt.Sprintf("spinlock: %s#%d must be held by cpu %d (holder %d)", l.class, l.sub, c.ID, l.Holder()))
	}
}

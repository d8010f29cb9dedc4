package spinlock

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// rank is the documented acquisition order (outer first) of
// the proxy-execution series (siglock -> pi_lock -> rq->lock -> wait_lock ->
// blocked_lock -> shared_runq->lock), with the socket locks and the wait
// queue lock of the benchmark paths outside it (sk_lock.slock or
// unix_sock->lock -> wq_head->lock -> pi_lock). Leaves (the timer,
// completion and shard locks) rank above everything: nothing is taken
// under them.
var rank = [NumClasses]int{ClassPiLock: 0, ClassRQ: 1, ClassWaitLock: 2, ClassBlockedLock: 3, ClassTimer: 9, ClassOther: 9, ClassSigLock: -1, ClassShard: 9,
	ClassWaitQueue: -2, ClassSockLock: -3, ClassUnixState: -3}

// Inversion is one lock-order violation.
type Inversion struct {
	CPU     int
	Held    Class
	HeldSub int
	Taken   Class
	Sub     int
	Chain   string // locks held at the time, outermost first
	Reason  string
}

func (v Inversion) String() string {
	return fmt.Sprintf("cpu %d takes %s#%d while holding %s#%d (%s); held: %s",
		v.CPU, v.Taken, v.Sub, v.Held, v.HeldSub, v.Reason, v.Chain)
}

// Validator is the lockdep of proxysim: it records, per lock class, which
// classes were held when it was taken, and reports an inversion of the
// protocol's order the first time one is seen.
type Validator struct {
	// seen[h][t] is set once class t has been taken with class h held.
	seen [NumClasses][NumClasses]atomic.Bool

	mu       sync.Mutex // lockdep's graph_lock: guards reported, usage, sites, usageReported, and the first store of each seen edge
	reported map[[3]int]bool
	// OnInversion is called (outside any validator lock) for each newly
	// seen kind of inversion. Set before the machine starts.
	OnInversion func(Inversion)

	// usage[k] is class k's usage bits (lock_class.usage_mask), set once
	// each; sites[k][bit] where each was first set (usage_traces).
	usage         [NumClasses]Usage
	sites         [NumClasses][numUsageBits]*site
	usageReported map[[4]int]bool
	// OnUsageBug is called (outside any validator lock) for each new IRQ
	// usage report. Set before the machine starts.
	OnUsageBug func(UsageBug)

	// roles[o][i] is set once a blocked_lock of role i was taken nested
	// inside one of role o (LockNestedRoles).
	roles [numRoles][numRoles]atomic.Bool
}

// Role is the part a task plays, for the mutex at hand, when its
// blocked_lock is nested in another task's (LockNestedRoles).
type Role uint8

const (
	// RoleOwner: the task owns the mutex (its unlock nests the lock of
	// the task it hands the mutex to).
	RoleOwner Role = iota
	// RoleWaiter: the task waits for the mutex, or is taking its slow
	// path (a ww_mutex waiter that wounds the owner or kills a waiter).
	RoleWaiter
	numRoles
)

func (r Role) String() string {
	if r == RoleOwner {
		return "owner"
	}
	return "waiter"
}

// roleEdge records that c nests l (a blocked_lock of role inner) inside
// a blocked_lock of role outer, and reports the nesting if the reverse
// order was ever seen: two tasks, each in its own role, can then hold
// their own blocked_lock and spin on the other's. Nesting within one
// role (a waiter killing a younger waiter, ordered by stamp) is not an
// inversion.
func (v *Validator) roleEdge(c *CPU, l *Lock, outer, inner Role) {
	if outer == inner {
		return
	}
	if !v.roles[outer][inner].Load() {
		v.roles[outer][inner].Store(true)
	}
	if !v.roles[inner][outer].Load() {
		return
	}
	var h *Lock
	for i := c.nHeld - 1; i >= 0; i-- {
		if c.held[i].class == l.class {
			h = c.held[i]
			break
		}
	}
	if h == nil {
		return
	}
	v.report(c, h, l, fmt.Sprintf("blocked_lock nesting inverts the %v -> %v order seen before: an AB-BA between two tasks' blocked_locks (SINGLE_DEPTH_NESTING hides it from lockdep)", inner, outer))
}

// NewValidator returns an empty validator.
func NewValidator(on func(Inversion)) *Validator {
	return &Validator{reported: map[[3]int]bool{}, usageReported: map[[4]int]bool{}, OnInversion: on}
}

// Usage returns the usage bits recorded for class k.
func (v *Validator) Usage(k Class) Usage {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.usage[k]
}

// addEdge records the first h -> l dependency under the graph lock and
// checks it against the IRQ usage of the classes around it.
func (v *Validator) addEdge(c *CPU, h, l *Lock) {
	v.mu.Lock()
	if v.seen[h.class][l.class].Load() {
		v.mu.Unlock()
		return
	}
	v.seen[h.class][l.class].Store(true)
	bug, ok := v.checkIrqUsage(c, h, l)
	v.mu.Unlock()
	if ok && v.OnUsageBug != nil {
		v.OnUsageBug(bug)
	}
}

// Seen reports whether class t has been taken while class h was held.
func (v *Validator) Seen(h, t Class) bool { return v.seen[h][t].Load() }

// Edges lists every observed (held, taken) class pair.
func (v *Validator) Edges() [][2]Class {
	var out [][2]Class
	for h := Class(0); h < NumClasses; h++ {
		for t := Class(0); t < NumClasses; t++ {
			if v.seen[h][t].Load() {
				out = append(out, [2]Class{h, t})
			}
		}
	}
	return out
}

func (v *Validator) check(c *CPU, l *Lock, nested bool) {
	for i := 0; i < c.nHeld; i++ {
		h := c.held[i]
		if h == l {
			v.report(c, h, l, "recursive acquisition (self-deadlock)")
			continue
		}
		// c.known caches the edges this CPU has already seen recorded,
		// so the common case reads no shared word (under the race
		// detector each atomic load is a synchronisation event).
		if c.known[h.class]&(1<<l.class) == 0 {
			if !v.seen[h.class][l.class].Load() {
				v.addEdge(c, h, l)
			}
			c.known[h.class] |= 1 << l.class
		}
		switch {
		case rank[h.class] >= 9:
			v.report(c, h, l, "lock taken under a leaf lock")
		case rank[l.class] < rank[h.class]:
			v.report(c, h, l, "order is pi_lock -> rq->lock -> wait_lock -> blocked_lock")
		case h.class == l.class:
			switch l.class {
			case ClassRQ:
				if l.sub <= h.sub {
					v.report(c, h, l, "two rq locks must be taken in (core, CPU) order (double_rq_lock)")
				}
			case ClassBlockedLock:
				if !nested {
					v.report(c, h, l, "nested blocked_lock outside the unlock hand-off path")
				}
			default:
				v.report(c, h, l, "two locks of this class are never nested")
			}
		}
	}
	// mark_usage. The common case, IRQs off in process context, gives no
	// bit at all: two loads of the CPU's own fields. Otherwise the CPU's
	// cache of the class's bits answers, unless a bit is new to it.
	if c.irqOff == 0 || c.hardirq|c.softirq != 0 {
		if u := c.usageNow(); u&^c.usageKnown[l.class] != 0 {
			v.mark(c, l, u)
		}
	}
}

func (v *Validator) report(c *CPU, h, l *Lock, reason string) {
	key := [3]int{int(h.class), int(l.class), len(reason)}
	v.mu.Lock()
	dup := v.reported[key]
	v.reported[key] = true
	v.mu.Unlock()
	if dup || v.OnInversion == nil {
		return
	}
	v.OnInversion(Inversion{CPU: c.ID, Held: h.class, HeldSub: int(h.sub), Taken: l.class, Sub: int(l.sub),
		Chain: c.HeldLocks(), Reason: reason})
}

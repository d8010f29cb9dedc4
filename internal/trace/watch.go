package trace

import (
	"runtime"
	"strings"
)

// The watch: what an explanation needs beyond the flight recorder. The
// rings record what happened (a switch, a wake-up, a migration); the watch
// records how, step by step: every lock taken and dropped, every read and
// write of the protocol's state (p->on_rq, p->blocked_on, rq->donor,
// mutex->owner...), each with the CPU that did it and the kernel function
// it did it in. It is far too costly for a race hunt, and it does not have
// to run there: a deterministic run replays event for event, so
// `proxysim explain` replays the failing run with a watch attached and
// gets the whole story of the schedule that failed.
//
// A watch is attached to the objects it follows (each task, runqueue and
// mutex has a pointer to it, nil when nothing watches), so the model pays
// one nil test per accessor when no watch runs. It only ever runs in
// deterministic (serial) mode, where one CPU goroutine runs at a time: the
// CPU a step belongs to is the one holding the conductor's turn, which the
// runner tells the watch (SetCPU) at every hand-over. Recording does not
// yield, draw random numbers or emit events, so a watched run takes the
// very schedule of the unwatched one.

// Obj is the kind of object a watched step concerns.
type Obj uint8

// Object kinds.
const (
	ObjNone Obj = iota
	ObjTask
	ObjRQ
	ObjMutex
)

// Field is a piece of kernel state the watch follows, named as the kernel
// names it.
type Field uint8

// Watched fields. Values: task ids for task pointers (0: NULL; idle tasks
// are negative), mutex ids + 1 for lock pointers (0: NULL), CPU numbers,
// 0/1 for flags, the task state for __state.
const (
	FieldNone             Field = iota
	FieldState                  // p->__state
	FieldOnRQ                   // p->on_rq
	FieldOnCPU                  // p->on_cpu
	FieldCPU                    // task_cpu(p)
	FieldWakeCPU                // p->wake_cpu
	FieldBlockedOn              // p->blocked_on (mutex id + 1)
	FieldIsBlocked              // p->is_blocked
	FieldBlockedDonor           // p->blocked_donor
	FieldSleepingOwner          // p->sleeping_owner (the owner p is parked on)
	FieldBlockedHead            // owner->blocked_head: +id added, -id removed; a read gives the length
	FieldDelayed                // p->se.sched_delayed
	FieldCurr                   // rq->curr
	FieldDonor                  // rq->donor
	FieldNeedResched            // TIF_NEED_RESCHED
	FieldQueued                 // the runqueue's queue: +id enqueued, -id dequeued
	FieldOwner                  // mutex->owner (task id; flags in the high bits of Val)
	FieldWaiters                // mutex->wait_list: +id added, -id removed; a read gives the first waiter
	FieldWakeEntry              // p->wake_entry: the CPU whose wake list it was put on (ttwu_queue_wakelist), taken off by that CPU (sched_ttwu_pending)
	FieldBalanceCallbacks       // rq->balance_callback: how many are queued
	FieldMask                   // p->cpus_mask: its first 64 CPUs as bits
	NumFields
)

var fieldNames = [NumFields]string{"", "__state", "on_rq", "on_cpu", "cpu", "wake_cpu", "blocked_on",
	"is_blocked", "blocked_donor", "sleeping_owner", "blocked_head", "se.sched_delayed", "curr", "donor",
	"need_resched", "queue", "owner", "wait_list", "wake_entry", "balance_callback", "cpus_mask"}

func (f Field) String() string {
	if f < NumFields {
		return fieldNames[f]
	}
	return "field?"
}

// StepKind says what a step is.
type StepKind uint8

// Step kinds.
const (
	StepRead   StepKind = iota // a field read
	StepWrite                  // a field written
	StepLock                   // a spinlock taken (Class, ID: its key)
	StepUnlock                 // a spinlock dropped
	StepEvent                  // a flight-recorder event (Event)
	StepCheck                  // a broken invariant reported (Val: invariant number)
)

// Step is one watched step (24 bytes: a replay keeps millions).
type Step struct {
	// Val is the value read or written; for a StepEvent, the event's
	// number (Watch.Event); for a StepCheck, the invariant.
	Val   int64
	ID    int32  // task id, CPU number, mutex id, or the lock's key
	Path  uint32 // the kernel call path (Watch.Path)
	CPU   int16  // the CPU that did it (-1: the barrier, no CPU's turn)
	Kind  StepKind
	Obj   Obj
	Field Field
	Class uint8 // lock class (StepLock, StepUnlock)
}

// Watch records steps for an explanation replay. Owned by the goroutine
// holding the conductor's turn; read after the run stopped.
type Watch struct {
	cur int16
	// barrier: the last CPU to reach the epoch barrier runs the audit
	// and the RCU callbacks on its goroutine; their reads are not the
	// model's. Reads are dropped while it is set; a violation the audit
	// reports is recorded with CPU -1.
	barrier bool
	steps   []Step
	mask    uint64
	n       uint64
	// evs holds the flight-recorder events the steps name, a ring of
	// its own (events are a small part of the steps).
	evs    []Event
	evMask uint64
	nev    uint64
	// paths interns kernel call paths: paths[i] is path i, pathOf maps a
	// program-counter stack to its index.
	paths  []string
	pathOf map[[maxDepth]uintptr]uint32
	pcs    [maxDepth]uintptr
	// Name maps a Go function name (package path and receiver stripped,
	// e.g. "cpu.tryToWakeUp": GoFuncName) to its kernel name; functions it does not map
	// are not kernel functions (helpers, the shell) and are left out of
	// paths. Set before the run.
	Name func(goName string) (kernel string, ok bool)
}

const maxDepth = 24

// NewWatch returns a watch keeping the last size steps (rounded up to a
// power of two).
func NewWatch(size int) *Watch {
	n := 1 << 10
	for n < size {
		n <<= 1
	}
	ne := n / 4
	return &Watch{steps: make([]Step, n), mask: uint64(n - 1), evs: make([]Event, ne), evMask: uint64(ne - 1),
		cur: -1, paths: []string{""}, pathOf: map[[maxDepth]uintptr]uint32{}}
}

// SetCPU says which CPU holds the turn from now on.
func (w *Watch) SetCPU(cpu int) { w.cur = int16(cpu) }

// Barrier says whether the epoch barrier's work (the audit) runs now.
func (w *Watch) Barrier(on bool) { w.barrier = on }

func (w *Watch) add(cpu int16, k StepKind, o Obj, f Field, id int32, val int64) *Step {
	s := &w.steps[w.n&w.mask]
	*s = Step{CPU: cpu, Kind: k, Obj: o, Field: f, ID: id, Val: val, Path: w.path()}
	w.n++
	return s
}

// Read records a read of field f of object (o, id) that gave val. Not
// inlined: the model's accessors test for a watch and call it only when
// one runs, and stay cheap enough to inline themselves.
//
//go:noinline
func (w *Watch) Read(o Obj, id int32, f Field, val int64) {
	if w.barrier {
		return
	}
	w.add(w.cur, StepRead, o, f, id, val)
}

// Write records that field f of object (o, id) became val (not
// inlined, as Read).
//
//go:noinline
func (w *Watch) Write(o Obj, id int32, f Field, val int64) {
	cpu := w.cur
	if w.barrier {
		cpu = -1
	}
	w.add(cpu, StepWrite, o, f, id, val)
}

// Lock records that cpu took (or dropped) the lock of class class with
// key key.
func (w *Watch) Lock(cpu int, class uint8, key int32, taken bool) {
	if w.barrier {
		return
	}
	k := StepLock
	if !taken {
		k = StepUnlock
	}
	s := w.add(int16(cpu), k, ObjNone, FieldNone, key, 0)
	s.Class = class
}

// Check records that a broken invariant (number inv) was reported outside
// any CPU's step (the audit at the barrier). One reported on a CPU comes
// with its violation event.
func (w *Watch) Check(inv int) {
	cpu := w.cur
	if w.barrier {
		cpu = -1
	}
	w.add(cpu, StepCheck, ObjNone, FieldNone, 0, int64(inv))
}

// event records a flight-recorder event (Ring.Emit).
func (w *Watch) event(e *Event) {
	s := w.add(int16(e.CPU), StepEvent, ObjNone, FieldNone, e.Task, int64(w.nev))
	w.evs[w.nev&w.evMask] = *e
	w.nev++
	if e.Kind == EvViolation {
		s.Kind = StepCheck
		s.Val = int64(e.A)
		if w.barrier {
			s.CPU = -1
		}
	}
}

// path returns the interned kernel call path of the caller: the kernel
// functions on the Go stack, outermost first, joined by ">".
func (w *Watch) path() uint32 {
	pcs := &w.pcs
	*pcs = [maxDepth]uintptr{}
	n := runtime.Callers(4, pcs[:])
	if id, ok := w.pathOf[*pcs]; ok {
		return id
	}
	var names []string
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if w.Name != nil {
			if k, ok := w.Name(GoFuncName(f.Function)); ok && (len(names) == 0 || names[len(names)-1] != k) {
				names = append(names, k)
			}
		}
		if !more {
			break
		}
	}
	for i, j := 0, len(names)-1; i < j; i, j = i+1, j-1 {
		names[i], names[j] = names[j], names[i]
	}
	id := uint32(len(w.paths))
	w.paths = append(w.paths, strings.Join(names, ">"))
	w.pathOf[*pcs] = id
	return id
}

// GoFuncName strips a runtime function name
// ("github.com/x/internal/cpu.(*Machine).tryToWakeUp.func2") down to the
// package and the function or method name ("cpu.tryToWakeUp"); a closure
// counts as the function it is in.
func GoFuncName(full string) string {
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		full = full[i+1:]
	}
	parts := strings.Split(full, ".")
	// parts: package, [receiver,] name, [funcN...]
	out := ""
	for _, p := range parts[1:] {
		if strings.HasPrefix(p, "func") && len(p) > 4 && p[4] >= '0' && p[4] <= '9' {
			break
		}
		if strings.HasPrefix(p, "(") || p == "" {
			continue
		}
		out = p
	}
	return parts[0] + "." + out
}

// Event returns the flight-recorder event a StepEvent step names, if the
// watch still holds it.
func (w *Watch) Event(s *Step) (*Event, bool) {
	if s.Kind != StepEvent {
		return nil, false
	}
	k := uint64(s.Val)
	if k >= w.nev || w.nev-k > uint64(len(w.evs)) {
		return nil, false
	}
	return &w.evs[k&w.evMask], true
}

// Path returns the kernel call path with index i ("" for none).
func (w *Watch) Path(i uint32) string {
	if int(i) < len(w.paths) {
		return w.paths[i]
	}
	return ""
}

// Steps returns the steps the watch still holds, oldest first.
func (w *Watch) Steps() []Step {
	n := w.n
	size := uint64(len(w.steps))
	from := uint64(0)
	if n > size {
		from = n - size
	}
	out := make([]Step, 0, n-from)
	for i := from; i < n; i++ {
		out = append(out, w.steps[i&w.mask])
	}
	return out
}

// Dropped returns how many of the oldest steps the ring no longer holds.
func (w *Watch) Dropped() uint64 {
	if size := uint64(len(w.steps)); w.n > size {
		return w.n - size
	}
	return 0
}

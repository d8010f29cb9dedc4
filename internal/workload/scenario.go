package workload

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/task"
)

// AffinitySpread in an affinity instruction's Count pins each task of the
// group to one CPU: its index in the group, modulo the machine's CPUs.
// Plan resolves it to a fixed mask.
const AffinitySpread = -2

// Self in Op.TargetIndex means "the task of the target group with my own
// index (modulo the group's size)".
const Self = -1

// Mutex modes of lock and unlock instructions.
const (
	MutexFixed   = iota // Op.Mutex is the mutex index
	MutexSlot           // Op.Mutex is a slot: the task's slot-th lock, drawn at plan time
	MutexByIndex        // the task's index within its group, modulo the mutex count
	// MutexWWSlot (ww_lock, ww_unlock): Op.Mutex is a ww slot, the task's
	// slot-th ww_mutex of its group's ww set, drawn at plan time in a
	// random order (ww_mutexes need no global lock order).
	MutexWWSlot = MutexByIndex + 2
)

// WWSet is a ww_class and its ww_mutexes (mutex indices after the plain
// Mutexes, in set order).
type WWSet struct {
	Name    string
	WaitDie bool // DEFINE_WD_CLASS; else DEFINE_WW_CLASS (Wound-Wait)
	Count   int
}

// Op is a program instruction with symbolic task targets.
type Op struct {
	task.Op
	TargetGroup  int // -1: no target (or self for affinity / setprio)
	TargetIndex  int // index within the group, or Self
	TargetOffset int // added to the task's own index when TargetIndex is Self
	MutexMode    int
	// ObjPlus (OpSys): the object is Op.Obj plus the task's index within
	// its group (each task of a group has its own: a receiver's pipe, a
	// worker's thread_data).
	ObjPlus bool
}

// Object is a kernel object of a benchmark workload (task.ObjKind): a
// pipe, a unix stream pair, a TCP connection, a schbench thread, a user
// lock array. Scenario files cannot declare one.
type Object struct {
	Kind task.ObjKind
	Name string
	// Mutex is its struct mutex (an index into Scenario.Mutexes), -1 for
	// none; Size and Msg as cpu.ObjSpec.
	Mutex int
	Size  int
	Msg   int
}

// Group is a set of identical tasks.
type Group struct {
	Name   string
	Count  int
	Policy task.Policy
	Prio   int // nice for normal, rtprio for fifo/rr
	// DL is the sched_attr of a SCHED_DEADLINE group (Policy Deadline).
	DL task.DLParams
	// CPUs is a cpulist ("0-3,8"), "all", or empty for all.
	CPUs string
	// Slots is how many distinct mutexes each task draws for its slot
	// locks; a task's slots are in ascending mutex order, so programs
	// that take slots in increasing order respect a global lock order.
	Slots int
	// Cookie is the tasks' core-scheduling cookie (0: untagged).
	Cookie uint64
	// WWSet is the ww set (Scenario.WW index) whose class the group's
	// ww_acquire_init opens and from which WWSlots ww_mutexes are drawn.
	WWSet   int
	WWSlots int
	Program []Op
}

// Scenario is a complete workload.
type Scenario struct {
	Name string
	CPUs int // 0: from the command line
	// Topology is the machine's shape in topology.Parse's notation
	// ("2s-8llc-8c-2t"); "": from the command line or the default.
	Topology string
	// CoreSched is "core_sched": "", "on", "5.14" or "v3" (--core-sched
	// overrides it).
	CoreSched string
	Mutexes   []string
	// WW lists the ww classes and their ww_mutexes.
	WW []WWSet
	// Objects are the kernel objects of a benchmark workload, in the
	// order the machine creates them (OpSys's Obj indexes them).
	Objects []Object
	Groups  []Group
	// Merit, for a benchmark workload (Benchmark), says what its figure
	// of merit measures; nil for every other workload.
	Merit *Merit
	// Chain, if set, names a chain of locks whose unwinding the run
	// measures (the scenario file's "chain").
	Chain *Chain
	// Source is where a scenario file was read (nil for built-ins), for
	// errors that Plan finds; not part of the scenario's meaning.
	Source *Source
}

// Chain names a chain of locks whose unwinding a run measures: the waits
// of the Waiter group's tasks for mutex Head, and, for every such wait
// during which mutex End (held by the chain's last owner) was released,
// the unwinding: from the last such release to the acquisition of Head.
type Chain struct {
	Waiter int // group index
	Head   int // mutex index
	End    int // mutex index
}

// UsesHotplug reports whether a program of the scenario takes CPUs
// offline or online (the machine then runs with CPU hotplug on).
func (s *Scenario) UsesHotplug() bool {
	for _, g := range s.Groups {
		for _, op := range g.Program {
			if op.Kind == task.OpCPUOffline || op.Kind == task.OpCPUOnline {
				return true
			}
		}
	}
	return false
}

// NumMutexes counts the plain and the ww mutexes.
func (s *Scenario) NumMutexes() int {
	n := len(s.Mutexes)
	for _, w := range s.WW {
		n += w.Count
	}
	return n
}

// wwBase is the index of ww set k's first mutex.
func (s *Scenario) wwBase(k int) int {
	n := len(s.Mutexes)
	for _, w := range s.WW[:k] {
		n += w.Count
	}
	return n
}

// NumTasks counts the tasks of all groups.
func (s *Scenario) NumTasks() int {
	n := 0
	for _, g := range s.Groups {
		n += g.Count
	}
	return n
}

// TaskPlan is one task ready to create.
type TaskPlan struct {
	Name   string
	Group  int
	Policy task.Policy
	Prio   int
	DL     task.DLParams
	Mask   task.Mask
	Prog   *task.Program
	Cookie uint64
}

// Plan resolves masks, slots and targets for a machine of ncpu CPUs. Task
// ids are assigned in group order starting at 1; slot draws come from
// seed.
func (s *Scenario) Plan(ncpu int, seed uint64) ([]TaskPlan, error) {
	if len(s.Groups) == 0 {
		return nil, fmt.Errorf("scenario %q has no task groups", s.Name)
	}
	base := make([]int, len(s.Groups))
	next := 1
	for i, g := range s.Groups {
		if g.Count < 1 {
			return nil, fmt.Errorf("groups[%d] (%s): count must be at least 1", i, g.Name)
		}
		base[i] = next
		next += g.Count
	}
	ntask := next - 1
	var out []TaskPlan
	for gi, g := range s.Groups {
		mask := task.MaskAll(ncpu)
		if g.CPUs != "" {
			m, err := task.ParseMask(g.CPUs, ncpu)
			if err != nil {
				return nil, s.errAt(fmt.Sprintf("groups[%d].cpus", gi), "group %s: %v (the machine has %d CPUs)", g.Name, err, ncpu)
			}
			mask = m
		}
		if g.Slots > len(s.Mutexes) {
			return nil, fmt.Errorf("groups[%d] (%s).slots: %d slots but only %d mutexes", gi, g.Name, g.Slots, len(s.Mutexes))
		}
		for i := 0; i < g.Count; i++ {
			rng := rand.New(rand.NewPCG(seed^0x51075, uint64(gi)<<32|uint64(i)))
			slots := drawSlots(rng, len(s.Mutexes), g.Slots)
			var wwSlots []int
			if g.WWSlots > 0 {
				if g.WWSet < 0 || g.WWSet >= len(s.WW) || g.WWSlots > s.WW[g.WWSet].Count {
					return nil, fmt.Errorf("groups[%d] (%s): ww set %d with %d slots does not exist", gi, g.Name, g.WWSet, g.WWSlots)
				}
				base := s.wwBase(g.WWSet)
				for _, k := range rng.Perm(s.WW[g.WWSet].Count)[:g.WWSlots] {
					wwSlots = append(wwSlots, base+k)
				}
			}
			prog := &task.Program{Ops: make([]task.Op, len(g.Program))}
			for k, op := range g.Program {
				o := op.Op
				if o.Kind == task.OpLock || o.Kind == task.OpUnlock {
					switch op.MutexMode {
					case MutexSlot:
						if o.Mutex < 0 || o.Mutex >= len(slots) {
							return nil, fmt.Errorf("groups[%d] (%s).program[%d]: slot $%d but the group has %d slots", gi, g.Name, k, o.Mutex, g.Slots)
						}
						o.Mutex = slots[o.Mutex]
					case MutexByIndex:
						if len(s.Mutexes) == 0 {
							return nil, fmt.Errorf("groups[%d] (%s).program[%d]: $self lock but the scenario has no mutexes", gi, g.Name, k)
						}
						o.Mutex = i % len(s.Mutexes)
					case MutexIndexPlus:
						k := i
						if o.Count > 0 {
							k = i % o.Count
						}
						o.Mutex += k
						o.Count = 0
					}
				}
				if (o.Kind == task.OpWWLock || o.Kind == task.OpWWUnlock) && op.MutexMode == MutexWWSlot {
					if o.Mutex < 0 || o.Mutex >= len(wwSlots) {
						return nil, fmt.Errorf("groups[%d] (%s).program[%d]: ww slot %d but the group has %d ww slots", gi, g.Name, k, o.Mutex, g.WWSlots)
					}
					o.Mutex = wwSlots[o.Mutex]
				}
				if o.Kind == task.OpWWInit {
					o.Class = g.WWSet
				}
				if o.Kind == task.OpSys && op.ObjPlus {
					o.Obj += i
				}
				if o.Kind == task.OpSys && o.Sys.ObjKind() != task.ObjNone {
					if o.Obj < 0 || o.Obj >= len(s.Objects) {
						return nil, fmt.Errorf("groups[%d] (%s).program[%d]: %s of object %d, but the scenario has %d objects", gi, g.Name, k, o.Sys, o.Obj, len(s.Objects))
					}
					if s.Objects[o.Obj].Kind != o.Sys.ObjKind() {
						return nil, fmt.Errorf("groups[%d] (%s).program[%d]: %s works on a %v, object %d (%s) is a %v", gi, g.Name, k, o.Sys, o.Sys.ObjKind(), o.Obj, s.Objects[o.Obj].Name, s.Objects[o.Obj].Kind)
					}
				}
				if op.TargetGroup >= 0 {
					if op.TargetGroup >= len(s.Groups) {
						return nil, fmt.Errorf("groups[%d].program[%d]: target group %d out of range", gi, k, op.TargetGroup)
					}
					tg := s.Groups[op.TargetGroup]
					idx := op.TargetIndex
					if idx == Self {
						idx = ((i+op.TargetOffset)%tg.Count + tg.Count) % tg.Count
					}
					if idx < 0 || idx >= tg.Count {
						return nil, fmt.Errorf("groups[%d].program[%d]: task %d of group %s out of range 0-%d", gi, k, idx, tg.Name, tg.Count-1)
					}
					o.Target = base[op.TargetGroup] + idx
				}
				if o.Kind == task.OpAffinity && o.Count == AffinitySpread {
					o.Mask, o.Count = task.MaskOf(i%ncpu), 0
				}
				if o.Kind == task.OpAffinity && o.Count == 0 {
					o.Mask = o.Mask.And(task.MaskAll(ncpu))
					if o.Mask.Empty() {
						return nil, s.errAt(fmt.Sprintf("groups[%d].program[%d]", gi, k), "affinity mask has no CPU below %d (the machine has %d CPUs)", ncpu, ncpu)
					}
				}
				prog.Ops[k] = o
			}
			for k, o := range prog.Ops {
				if (o.Kind == task.OpCPUOffline || o.Kind == task.OpCPUOnline) && o.CPU >= ncpu {
					return nil, s.errAt(fmt.Sprintf("groups[%d].program[%d]", gi, k), "%s: cpu %d out of range (the machine has %d CPUs)", o.Kind, o.CPU, ncpu)
				}
			}
			if err := prog.Validate(s.NumMutexes(), ntask); err != nil {
				return nil, fmt.Errorf("groups[%d] (%s).program: %v", gi, g.Name, err)
			}
			name := g.Name
			if g.Count > 1 {
				name = fmt.Sprintf("%s-%d", g.Name, i)
			}
			out = append(out, TaskPlan{Name: name, Group: gi, Policy: g.Policy, Prio: g.Prio, DL: g.DL, Mask: mask, Prog: prog, Cookie: g.Cookie})
		}
	}
	if err := s.checkLocking(out); err != nil {
		return nil, err
	}
	if err := s.checkDLBandwidth(ncpu); err != nil {
		return nil, err
	}
	return out, nil
}

// checkDLBandwidth is admission control for the scenario's SCHED_DEADLINE
// groups (sched_dl_overflow at each task's sched_setattr): their summed
// bandwidth must fit the root domain's, 95% of each of the ncpu CPUs.
func (s *Scenario) checkDLBandwidth(ncpu int) error {
	var total int64
	for gi, g := range s.Groups {
		if g.Policy != task.Deadline {
			continue
		}
		period := g.DL.Period
		if period == 0 {
			period = g.DL.Deadline
		}
		bw := task.ToRatio(period, g.DL.Runtime)
		for i := 0; i < g.Count; i++ {
			if rq.DLOverflow(rq.DefaultDLBW, ncpu, total, 0, bw) {
				return s.errAt(fmt.Sprintf("groups[%d]", gi), "group %s: SCHED_DEADLINE admission control refuses task %d (-EBUSY): the deadline tasks up to it reserve %.1f CPUs, more than 95%% of the machine's %d", g.Name, i, float64(total+bw)/float64(int64(1)<<task.BWShift), ncpu)
			}
			total += bw
		}
	}
	return nil
}

// Check validates priorities and program shapes independent of CPUs.
func (s *Scenario) Check() error {
	for i, g := range s.Groups {
		switch g.Policy {
		case task.Normal:
			if g.Prio < -20 || g.Prio > 19 {
				return fmt.Errorf("groups[%d] (%s).priority: nice %d out of range -20..19", i, g.Name, g.Prio)
			}
		case task.FIFO, task.RR:
			if g.Prio < 1 || g.Prio > 99 {
				return fmt.Errorf("groups[%d] (%s).priority: rt priority %d out of range 1..99", i, g.Name, g.Prio)
			}
		case task.Deadline:
			if why := task.CheckDLParams(g.DL); why != "" {
				return fmt.Errorf("groups[%d] (%s): sched_setattr: %s", i, g.Name, why)
			}
		default:
			return fmt.Errorf("groups[%d] (%s).policy: unknown policy", i, g.Name)
		}
		for k, op := range g.Program {
			if op.Kind == task.OpSetPrio {
				switch op.Policy {
				case task.Deadline:
					if why := task.CheckDLParams(op.DL); why != "" {
						return fmt.Errorf("groups[%d].program[%d].setprio: %s", i, k, why)
					}
				case task.Normal:
					if op.Prio < -20 || op.Prio > 19 {
						return fmt.Errorf("groups[%d].program[%d].setprio: nice %d out of range", i, k, op.Prio)
					}
				default:
					if op.Prio < 1 || op.Prio > 99 {
						return fmt.Errorf("groups[%d].program[%d].setprio: rt priority %d out of range", i, k, op.Prio)
					}
				}
			}
		}
	}
	return nil
}

// drawSlots picks k distinct mutexes out of n, in ascending order.
func drawSlots(rng *rand.Rand, n, k int) []int {
	if k <= 0 || n == 0 {
		return nil
	}
	perm := rng.Perm(n)[:k]
	sort.Ints(perm)
	return perm
}

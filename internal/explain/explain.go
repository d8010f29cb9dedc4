package explain

import (
	"fmt"
	"sort"
	"strings"

	"github.com/proxysim/proxysim/internal/trace"
)

// Explanation is a failure laid out for reading.
type Explanation struct {
	Failure Failure
	// CPUs are the columns, in order (-1: the epoch barrier, where the
	// audit and CPU hotplug's stop-the-world steps run).
	CPUs []int
	// Rows are the steps that matter, in the order they happened.
	Rows []Row
	// Legend names the tasks the rows name by their short names.
	Legend []string
	// Before is the state the race started from: the writes the
	// invariant rests on that came before the window, one line each.
	Before []string
	// Examined and Kept count the watched steps looked at and kept.
	Examined, Kept int
	// Truncated: the watch had dropped older steps (the slice may have
	// wanted some of them).
	Truncated bool
	// Coarse: built from flight-recorder events alone (FromEvents), with
	// no replay: no locks, no reads.
	Coarse bool
	// From and To bound the steps the diagram covers (indices into
	// Input.Steps: the window's first step, the violation's).
	From, To int
	// Where is the kernel function the broken state was made in (or, for
	// an inline check, found in): with the invariant, the failure's
	// signature.
	Where string
}

// Signature names the failure for counting repeats: the invariant and
// where it broke ("parked-owner@proxy_enqueue_on_owner").
func (ex *Explanation) Signature() string {
	if ex.Where == "" {
		return ex.Failure.Name
	}
	return ex.Failure.Name + "@" + ex.Where
}

// Row is one step of one CPU: a kernel function (its call path's last
// two functions), the locks the CPU held when it began, and what it read,
// wrote, took and dropped.
type Row struct {
	CPU   int
	Func  string
	Held  []string
	Lines []string
}

// Options tune Analyze.
type Options struct {
	// MaxDepth bounds the slice's distance from the invariant (default 3).
	MaxDepth int
	// MaxRows, if positive, keeps at most that many rows, dropping the
	// farthest steps first.
	MaxRows int
}

// Analyze slices the run down to what the violation depends on and lays
// it out in rows.
func Analyze(in *Input, opt Options) *Explanation {
	if opt.MaxDepth <= 0 {
		opt.MaxDepth = 2
	}
	a := newAnalysis(in)
	var ex *Explanation
	for depth := opt.MaxDepth; depth >= 0; depth-- {
		sl := &slicer{a: a, kept: map[int]keptStep{}, maxDepth: depth}
		sl.run(a.criterion())
		ex = a.layout(sl, opt.MaxRows)
		if opt.MaxRows <= 0 || len(ex.Rows) <= opt.MaxRows {
			break
		}
	}
	return ex
}

// where names the function the failure broke in: an inline check's own
// function, or else that of the latest write the invariant rests on.
func (a *analysis) where(sl *slicer) string {
	if a.end < len(a.steps) && a.steps[a.end].CPU >= 0 {
		return strings.ReplaceAll(funcName(a.path[a.end]), " > ", ">")
	}
	at := -1
	for i, k := range sl.kept {
		if k.why == whyCriterion && k.expand && i > at {
			at = i
		}
	}
	if at < 0 {
		return ""
	}
	return strings.ReplaceAll(funcName(a.path[at]), " > ", ">")
}

// cut drops the kept steps of the lowest-ranked functions (a run of one
// CPU's steps in one function, a row), the earliest first, until at
// most limit are left; never those of rank 3 (the invariant's own steps
// and the two sides of a race).
func (a *analysis) cut(sl *slicer, limit int) {
	type seg struct {
		prio, first int
		steps       []int
	}
	bySeg := map[int32]*seg{}
	for i, k := range sl.kept {
		s := bySeg[a.seg[i]]
		if s == nil {
			s = &seg{first: i}
			bySeg[a.seg[i]] = s
		}
		s.prio = max(s.prio, k.prio)
		s.first = min(s.first, i)
		s.steps = append(s.steps, i)
	}
	if len(bySeg) <= limit {
		return
	}
	segs := make([]*seg, 0, len(bySeg))
	for _, s := range bySeg {
		segs = append(segs, s)
	}
	sort.Slice(segs, func(i, j int) bool {
		if segs[i].prio != segs[j].prio {
			return segs[i].prio < segs[j].prio
		}
		return segs[i].first < segs[j].first
	})
	for _, s := range segs[:len(segs)-limit] {
		if s.prio >= 3 {
			break
		}
		for _, i := range s.steps {
			delete(sl.kept, i)
		}
	}
}

// layout turns the kept steps into rows.
func (a *analysis) layout(sl *slicer, maxRows int) *Explanation {
	if maxRows > 0 {
		a.cut(sl, maxRows)
	}
	ex := &Explanation{Failure: a.in.Failure, Examined: a.end, Kept: len(sl.kept), From: sl.window, To: a.end}
	ex.Where = a.where(sl)
	keep := map[int]bool{}
	segFirst := map[int32]int{} // kept segment -> its first and last kept step
	segLast := map[int32]int{}
	for i := range sl.kept {
		keep[i] = true
		si := a.seg[i]
		if f, ok := segFirst[si]; !ok || i < f {
			segFirst[si] = i
		}
		if l, ok := segLast[si]; !ok || i > l {
			segLast[si] = i
		}
	}
	// The locks a kept function takes and drops up to its last kept
	// step, and its events.
	for si := range segFirst {
		l := segLast[si]
		for j := int(a.segs[si].first); j <= l; j++ {
			if a.seg[j] != si {
				continue
			}
			switch a.steps[j].Kind {
			case trace.StepLock, trace.StepUnlock, trace.StepEvent:
				keep[j] = true
			}
		}
	}
	idx := make([]int, 0, len(keep))
	for i := range keep {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	names := newAliases(a.in.Names)
	names.ev = a.in.Event
	// What comes before the window, and the context writes before the
	// first explained step, is the state the race started from: a line
	// each, not rows.
	for len(idx) > 0 && idx[0] < sl.window {
		i := idx[0]
		idx = idx[1:]
		s := &a.steps[i]
		if s.Kind != trace.StepWrite {
			continue
		}
		ex.Before = append(ex.Before, fmt.Sprintf("%s (%s, %s)", names.step(s, a.in.Names), leaf(a.path[i]), colName(int(s.CPU))))
	}
	// With more CPUs than a mail's columns hold, the CPUs that only
	// supply context (none of their steps is explained or part of a
	// race) give their writes as state lines too.
	all, told := map[int16]bool{}, map[int16]bool{}
	for _, i := range idx {
		c := a.steps[i].CPU
		all[c] = true
		if k, ok := sl.kept[i]; ok && (k.expand || k.prio >= 2) {
			told[c] = true
		}
	}
	if len(all) > maxColumns {
		kept := idx[:0]
		for _, i := range idx {
			s := &a.steps[i]
			if told[s.CPU] {
				kept = append(kept, i)
			} else if s.Kind == trace.StepWrite {
				ex.Before = append(ex.Before, fmt.Sprintf("%s (%s, %s)", names.step(s, a.in.Names), leaf(a.path[i]), colName(int(s.CPU))))
			}
		}
		idx = kept
	}
	if len(ex.Before) > maxBefore {
		ex.Before = ex.Before[len(ex.Before)-maxBefore:]
	}
	cpus := map[int]bool{}
	var row *Row
	var lastSeg int32 = -1
	for _, i := range idx {
		s := &a.steps[i]
		if si := a.seg[i]; si != lastSeg || row == nil {
			row = &Row{CPU: int(s.CPU), Func: funcName(a.segs[si].path)}
			for _, l := range a.heldSets[a.held[i]] {
				row.Held = append(row.Held, names.lockName(l))
			}
			ex.Rows = append(ex.Rows, *row)
			row = &ex.Rows[len(ex.Rows)-1]
			lastSeg = si
			cpus[row.CPU] = true
		}
		if l := names.step(s, a.in.Names); l != "" {
			row.Lines = append(row.Lines, l)
		}
	}
	if e := a.end; e < len(a.steps) && a.steps[e].CPU >= 0 {
		// The inline check that fired, as the last row.
		s := &a.steps[e]
		if row == nil || row.CPU != int(s.CPU) || a.seg[e] != lastSeg {
			ex.Rows = append(ex.Rows, Row{CPU: int(s.CPU), Func: funcName(a.path[e])})
			row = &ex.Rows[len(ex.Rows)-1]
			for _, l := range a.heldSets[a.held[e]] {
				row.Held = append(row.Held, names.lockName(l))
			}
			cpus[row.CPU] = true
		}
		row.Lines = append(row.Lines, fmt.Sprintf("WARN: invariant %d (%s)", a.in.Failure.Invariant, a.in.Failure.Name))
	}
	for c := range cpus {
		ex.CPUs = append(ex.CPUs, c)
	}
	sort.Ints(ex.CPUs)
	ex.Legend = names.legend()
	return ex
}

type lockID struct {
	class uint8
	key   int32
}

func (l lockID) String() string { return fmt.Sprintf("%d#%d", l.class, l.key) }

// funcName names a row's function: the last two kernel functions of
// its call path.
func funcName(path string) string {
	if path == "" {
		return "(task code)"
	}
	parts := strings.Split(path, ">")
	if len(parts) > 2 {
		parts = parts[len(parts)-2:]
	}
	return strings.Join(parts, " > ")
}

// cpuList renders a mask's bits as a CPU list ("0-3,6").
func cpuList(m uint64) string {
	var parts []string
	for c := 0; c < 64; c++ {
		if m&(1<<c) == 0 {
			continue
		}
		e := c
		for e+1 < 64 && m&(1<<(e+1)) != 0 {
			e++
		}
		if e > c {
			parts = append(parts, fmt.Sprintf("%d-%d", c, e))
		} else {
			parts = append(parts, fmt.Sprint(c))
		}
		c = e
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// maxColumns is how many CPU columns a diagram aims for: three of 32
// characters fit a 100-column mail.
const maxColumns = 3

// maxBefore bounds the state lines shown before the diagram (the latest
// are kept).
const maxBefore = 8

// leaf returns the innermost function of a kernel call path.
func leaf(path string) string {
	if path == "" {
		return "task code"
	}
	return path[strings.LastIndexByte(path, '>')+1:]
}

// Lock classes (internal/spinlock's order).
const (
	classPiLock      = 0
	classRQ          = 1
	classWaitLock    = 2
	classBlockedLock = 3
	classTimer       = 4
	classSigLock     = 6
	classShard       = 7
)

// aliases gives tasks short names for the columns and keeps a legend.
type aliases struct {
	names Names
	// ev gives a StepEvent's event (Input.Event).
	ev    func(*trace.Step) (*trace.Event, bool)
	short map[int32]string
	taken map[string]int32
	order []int32
}

func newAliases(n Names) *aliases {
	return &aliases{names: n, short: map[int32]string{}, taken: map[string]int32{}}
}

// task returns the short name of task id: the initial of its group in
// capitals and its index in the group ("narrow-3/12" -> "N3").
func (a *aliases) task(id int32) string {
	if id == 0 {
		return "NULL"
	}
	if id < 0 {
		return fmt.Sprintf("idle%d", -id-1)
	}
	if s, ok := a.short[id]; ok {
		return s
	}
	full := a.names.Task(id)
	base := full
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		base = base[:i]
	}
	group, idx := base, ""
	if i := strings.LastIndexByte(base, '-'); i >= 0 {
		group, idx = base[:i], base[i+1:]
	}
	var s string
	for n := 1; n <= len(group); n++ {
		s = strings.ToUpper(strings.ReplaceAll(group[:n], "-", "")) + idx
		if o, ok := a.taken[s]; !ok || o == id {
			break
		}
	}
	if o, ok := a.taken[s]; ok && o != id {
		s = fmt.Sprintf("T%d", id)
	}
	a.short[id] = s
	a.taken[s] = id
	a.order = append(a.order, id)
	return s
}

func (a *aliases) legend() []string {
	out := make([]string, 0, len(a.order))
	for _, id := range a.order {
		s := fmt.Sprintf("%s = %s", a.short[id], a.names.Task(id))
		if a.names.Class != nil {
			if c := a.names.Class(id); c != "" {
				s += " (" + c + ")"
			}
		}
		out = append(out, s)
	}
	return out
}

// lockName names a lock from its class and key.
func (a *aliases) lockName(l lockID) string {
	class, k := l.class, l.key
	switch class {
	case classPiLock:
		return a.task(k) + "->pi_lock"
	case classRQ:
		if a.names.RQLockCPU != nil {
			return fmt.Sprintf("rq%d", a.names.RQLockCPU(k))
		}
		return fmt.Sprintf("rq#%d", k)
	case classWaitLock:
		return a.mutex(k) + "->wait_lock"
	case classBlockedLock:
		return a.task(k) + "->blocked_lock"
	case classSigLock:
		return a.task(k) + "->sighand->siglock"
	case classTimer:
		return fmt.Sprintf("cpu%d's hrtimer base", k)
	case classShard:
		return fmt.Sprintf("shared_runq shard %d", k)
	}
	if int(class) < len(classNames) {
		return fmt.Sprintf("%s#%d", classNames[class], k)
	}
	return fmt.Sprintf("lock%d#%d", class, k)
}

func (a *aliases) mutex(id int32) string {
	if a.names.Mutex != nil {
		return a.names.Mutex(id)
	}
	return fmt.Sprintf("m%d", id)
}

func (a *aliases) obj(s *trace.Step) string {
	switch s.Obj {
	case trace.ObjTask:
		return a.task(s.ID)
	case trace.ObjRQ:
		return fmt.Sprintf("rq%d", s.ID)
	case trace.ObjMutex:
		return a.mutex(s.ID)
	}
	return "?"
}

// value renders a field's value.
func (a *aliases) value(f trace.Field, v int64, n Names) string {
	switch f {
	case trace.FieldState:
		if n.State != nil {
			return n.State(v)
		}
	case trace.FieldBlockedOn:
		if v == 0 {
			return "NULL"
		}
		return a.mutex(int32(v - 1))
	case trace.FieldBlockedDonor, trace.FieldSleepingOwner, trace.FieldCurr, trace.FieldDonor:
		return a.task(int32(v))
	case trace.FieldMask:
		return cpuList(uint64(v))
	case trace.FieldOwner:
		s := a.task(int32(v & 0xffffffff))
		flags := v >> 32
		var fl []string
		if flags&1 != 0 {
			fl = append(fl, "WAITERS")
		}
		if flags&2 != 0 {
			fl = append(fl, "HANDOFF")
		}
		if flags&4 != 0 {
			fl = append(fl, "PICKUP")
		}
		if len(fl) > 0 {
			s += "|" + strings.Join(fl, "|")
		}
		return s
	}
	return fmt.Sprint(v)
}

// step renders one kept step ("" for none).
func (a *aliases) step(s *trace.Step, n Names) string {
	switch s.Kind {
	case trace.StepRead:
		switch s.Field {
		case trace.FieldWakeEntry:
			return fmt.Sprintf("%s off cpu%d's wake list", a.obj(s), s.Val)
		case trace.FieldBlockedHead:
			if s.Val == 0 {
				return a.obj(s) + "->blocked_head empty"
			}
			return fmt.Sprintf("%s->blocked_head: %d waiters", a.obj(s), s.Val)
		case trace.FieldBlockedOn:
			return fmt.Sprintf("%s->blocked_on == %s", a.obj(s), a.value(s.Field, s.Val, n))
		}
		return fmt.Sprintf("%s->%s == %s", a.obj(s), s.Field, a.value(s.Field, s.Val, n))
	case trace.StepWrite:
		switch s.Field {
		case trace.FieldWakeEntry:
			return fmt.Sprintf("%s onto cpu%d's wake list", a.obj(s), s.Val)
		case trace.FieldQueued:
			if s.Val < 0 {
				return fmt.Sprintf("dequeue %s from %s", a.task(int32(-s.Val)), a.obj(s))
			}
			return fmt.Sprintf("enqueue %s on %s", a.task(int32(s.Val)), a.obj(s))
		case trace.FieldBlockedHead, trace.FieldWaiters:
			if s.Val < 0 {
				return fmt.Sprintf("%s->%s -= %s", a.obj(s), s.Field, a.task(int32(-s.Val)))
			}
			return fmt.Sprintf("%s->%s += %s", a.obj(s), s.Field, a.task(int32(s.Val)))
		}
		return fmt.Sprintf("%s->%s = %s", a.obj(s), s.Field, a.value(s.Field, s.Val, n))
	case trace.StepLock:
		return "lock " + a.lockName(lockID{s.Class, s.ID})
	case trace.StepUnlock:
		return "unlock " + a.lockName(lockID{s.Class, s.ID})
	case trace.StepEvent:
		if a.ev == nil {
			return ""
		}
		e, ok := a.ev(s)
		if !ok || e.Kind == trace.EvViolation {
			return ""
		}
		return a.event(e)
	case trace.StepCheck:
		return fmt.Sprintf("invariant %d broken", s.Val)
	}
	return ""
}

// event renders the flight-recorder events worth a line in a diagram.
func (a *aliases) event(e *trace.Event) string {
	switch e.Kind {
	case trace.EvSwitch:
		return fmt.Sprintf("switch %s -> %s (donor %s)", a.task(e.A), a.task(e.Task), a.task(e.B))
	case trace.EvMigrate:
		return fmt.Sprintf("%s: cpu%d -> cpu%d (%s)", a.task(e.Task), e.A, e.B, trace.MigrateReason(e.C))
	case trace.EvIPI:
		return fmt.Sprintf("IPI -> cpu%d", e.A)
	case trace.EvWake:
		if e.B == 1 {
			return fmt.Sprintf("%s onto cpu%d's wake list", a.task(e.Task), e.A)
		}
	case trace.EvProxyPick:
		return fmt.Sprintf("run %s for donor %s", a.task(e.Task), a.task(e.A))
	case trace.EvViolation:
		return fmt.Sprintf("WARN: invariant %d", e.A)
	}
	return ""
}

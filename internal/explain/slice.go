package explain

import (
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/proxysim/proxysim/internal/trace"
)

// Input is what Analyze works on.
type Input struct {
	// Steps is the watched run, oldest first, ending at the violation.
	Steps []trace.Step
	// Path names the kernel call path of a step (trace.Watch.Path).
	Path func(uint32) string
	// Event gives the flight-recorder event of a StepEvent step
	// (trace.Watch.Event).
	Event func(*trace.Step) (*trace.Event, bool)
	// Names names the machine's objects.
	Names Names
	// Failure is the broken invariant.
	Failure Failure
}

// Names names the machine's objects for the diagram.
type Names struct {
	// Task names a task id ("narrow-0/9"; idle tasks have negative ids).
	Task func(id int32) string
	// Mutex names a mutex id ("m0").
	Mutex func(id int32) string
	// RQLockCPU gives the CPU whose rq lock has ordering key key.
	RQLockCPU func(key int32) int
	// State names a task state value.
	State func(v int64) string
	// Class, if set, describes a task's scheduling class and priority
	// for the legend ("FIFO 40", "fair", "DEADLINE").
	Class func(id int32) string
}

// Failure is the broken invariant an explanation ends with.
type Failure struct {
	Invariant int
	Name      string // "parked-owner"
	Message   string
	CPU       int   // the CPU that found it (-1: the audit)
	Task      int32 // the task it concerns (0: none)
	// Tasks and Mutexes are the objects the message names, the
	// violation's task first.
	Tasks   []int32
	Mutexes []int32
}

// key names one watched field of one object. For the set-valued fields
// (a runqueue's queue, a mutex's wait list, an owner's blocked_head) a
// write also carries the member it adds or removes.
type key struct {
	obj    trace.Obj
	id     int32
	field  trace.Field
	member int32
}

func (k key) whole() key { k.member = 0; return k }

func setField(f trace.Field) bool {
	return f == trace.FieldQueued || f == trace.FieldWaiters || f == trace.FieldBlockedHead
}

func keyOf(s *trace.Step) key {
	k := key{obj: s.Obj, id: s.ID, field: s.Field}
	if setField(s.Field) && s.Kind == trace.StepWrite {
		v := s.Val
		if v < 0 {
			v = -v
		}
		k.member = int32(v)
	}
	return k
}

// helpers are kernel functions too small to be a step of their own: their
// reads, writes and locks belong to the function that called them.
var helpers = map[string]bool{
	"raw_spin_rq_lock": true, "raw_spin_rq_unlock": true, "rq_lock_irq": true, "rq_unlock_irq": true,
	"rq_lockp": true, "__rq_lockp": true, "lockdep_assert_rq_held": true, "double_rq_lock": true,
	"double_rq_unlock": true, "double_lock_balance": true, "double_unlock_balance": true,
	"rq_order_less": true, "__task_rq_lock": true, "task_is_blocked": true, "__mutex_owner": true,
	"idle_cpu": true, "update_rq_clock": true, "__task_prio": true, "cpu_active": true, "cpu_online": true,
	"is_cpu_allowed": true, "entity_key": true, "entity_eligible": true, "vruntime_eligible": true,
	"avg_vruntime": true, "rb_next": true, "prio_less": true,
}

// trimPath drops the helpers at the end of a kernel call path.
func trimPath(p string) string {
	for p != "" {
		i := strings.LastIndexByte(p, '>')
		leaf := p[i+1:]
		if !helpers[leaf] {
			return p
		}
		if i < 0 {
			return ""
		}
		p = p[:i]
	}
	return p
}

// analysis holds the indexes of one run's steps.
type analysis struct {
	in    *Input
	steps []trace.Step
	path  []string // per step: its trimmed kernel path
	seg   []int32  // per step: its segment (a run of one CPU's steps in one function)
	segs  []segment
	// top is, per step, its top-level invocation: a run of one CPU's
	// steps under one outermost kernel function (a wake-up, a
	// __schedule, a mutex_unlock).
	top []int32
	// held is, per step, the index in heldSets of the locks its CPU held
	// just before it, outermost first.
	held     []int32
	heldSets [][]lockID
	// topStart and topEnd bound each top-level invocation: its first
	// step, and one past its last.
	topStart, topEnd []int32
	// writes and reads index the steps by key (set fields: by member too,
	// and every write under the whole key as well), in step order.
	writes map[key][]int32
	reads  map[key][]int32
	// end is the index of the step that reported the violation (or
	// len(steps)).
	end int
}

type segment struct {
	cpu        int16
	path       string
	first, end int32 // step indices [first, end)
}

func newAnalysis(in *Input) *analysis {
	a := &analysis{in: in, steps: in.Steps, writes: map[key][]int32{}, reads: map[key][]int32{}}
	n := len(a.steps)
	a.path = make([]string, n)
	a.seg = make([]int32, n)
	a.top = make([]int32, n)
	a.end = n
	trimmed := map[uint32]string{}
	last := map[int16]int32{} // CPU -> its open segment
	tops := int32(0)
	lastTop := map[int16]int32{}
	lastOuter := map[int16]string{}
	a.held = make([]int32, n)
	a.heldSets = [][]lockID{nil}
	heldNow := map[int16][]lockID{}
	heldID := map[int16]int32{}
	intern := map[string]int32{"": 0}
	for i := range a.steps {
		s := &a.steps[i]
		p, ok := trimmed[s.Path]
		if !ok {
			p = trimPath(in.Path(s.Path))
			trimmed[s.Path] = p
		}
		a.path[i] = p
		outer := p
		if j := strings.IndexByte(p, '>'); j >= 0 {
			outer = p[:j]
		}
		if t, ok := lastTop[s.CPU]; ok && lastOuter[s.CPU] == outer && outer != "" {
			a.top[i] = t
		} else {
			tops++
			a.top[i] = tops
			lastTop[s.CPU], lastOuter[s.CPU] = tops, outer
		}
		for len(a.topStart) <= int(a.top[i]) {
			a.topStart = append(a.topStart, int32(i))
			a.topEnd = append(a.topEnd, int32(i+1))
		}
		a.topEnd[a.top[i]] = int32(i + 1)
		if si, ok := last[s.CPU]; ok && a.segs[si].path == p {
			a.seg[i] = si
			a.segs[si].end = int32(i + 1)
		} else {
			si = int32(len(a.segs))
			a.segs = append(a.segs, segment{cpu: s.CPU, path: p, first: int32(i), end: int32(i + 1)})
			last[s.CPU] = si
			a.seg[i] = si
		}
		a.held[i] = heldID[s.CPU]
		switch s.Kind {
		case trace.StepLock, trace.StepUnlock:
			h := heldNow[s.CPU]
			l := lockID{s.Class, s.ID}
			if s.Kind == trace.StepLock {
				h = append(h[:len(h):len(h)], l)
			} else {
				for j := len(h) - 1; j >= 0; j-- {
					if h[j] == l {
						h = append(h[:j:j], h[j+1:]...)
						break
					}
				}
			}
			heldNow[s.CPU] = h
			var b strings.Builder
			for _, x := range h {
				b.WriteString(x.String())
				b.WriteByte(' ')
			}
			id, ok := intern[b.String()]
			if !ok {
				id = int32(len(a.heldSets))
				a.heldSets = append(a.heldSets, h)
				intern[b.String()] = id
			}
			heldID[s.CPU] = id
		case trace.StepWrite:
			k := keyOf(s)
			a.writes[k] = append(a.writes[k], int32(i))
			if k.member != 0 {
				a.writes[k.whole()] = append(a.writes[k.whole()], int32(i))
			}
		case trace.StepRead:
			k := keyOf(s)
			a.reads[k] = append(a.reads[k], int32(i))
		case trace.StepCheck:
			if a.end == n {
				a.end = i
			}
		}
	}
	return a
}

// lastBefore returns the last index in idx below i, or -1.
func lastBefore(idx []int32, i int) int {
	j := sort.Search(len(idx), func(j int) bool { return int(idx[j]) >= i })
	if j == 0 {
		return -1
	}
	return int(idx[j-1])
}

// firstAfter returns the first index in idx above i, or -1.
func firstAfter(idx []int32, i int) int {
	j := sort.Search(len(idx), func(j int) bool { return int(idx[j]) > i })
	if j == len(idx) {
		return -1
	}
	return int(idx[j])
}

// Why a step is in the slice.
type reason uint8

const (
	whyCriterion reason = iota // the last write of a field the invariant looked at
	whyFlow                    // the write a kept read read
	whyDecision                // a read the function of a kept write made before it
	whyStale                   // a write another CPU made while a kept read's call still acted on it: the race
	whyMissed                  // a read another call made just before a kept write
)

// slicer computes the steps a violation depends on. A kept step is
// either explained (expand: a write gets the reads its function made
// before it and the last read another call made of what it writes; a
// read gets the write it read and the write another CPU made while the
// read's call still acted on the value) or shown as context only.
type slicer struct {
	a *analysis
	// kept holds each kept step's distance from the criterion (counting
	// flow, stale and missed edges) and whether it is explained.
	kept map[int]keptStep
	work []int
	// maxDepth bounds how far from the criterion the slice reaches.
	maxDepth int
	// window is the first step of the race: the slice follows nothing
	// back past it (criterion writes before it are the state the race
	// started from).
	window int
}

type keptStep struct {
	depth  int
	expand bool
	why    reason
	// prio ranks the step for a diagram that must be cut: 3 for the
	// steps the invariant rests on and both sides of a race, 2 for the
	// context of a race, 1 for other context.
	prio int
}

// windowLead is how many steps before the first function that made the
// broken state the window opens: enough for the calls on other CPUs that
// raced with it, and for the call on its own CPU that set it up.
const windowLead = 2000

func (sl *slicer) keep(i, depth int, expand bool, why reason, prio int) {
	if i < 0 || i >= sl.a.end || depth > sl.maxDepth {
		return
	}
	if i < sl.window && why != whyCriterion {
		// Before the window: the state the race found, not the race.
		return
	}
	if k, ok := sl.kept[i]; ok && k.depth <= depth && (k.expand || !expand) {
		if prio > k.prio {
			k.prio = prio
			sl.kept[i] = k
		}
		return
	}
	if k, ok := sl.kept[i]; ok && k.prio > prio {
		prio = k.prio
	}
	sl.kept[i] = keptStep{depth, expand, why, prio}
	if expand {
		sl.work = append(sl.work, i)
	}
}

// objKey names an object.
type objKey struct {
	obj trace.Obj
	id  int32
}

// decisionObjects returns the objects whose state a write at step i may
// have been decided on: the one it writes, the one it makes a pointer
// point at, and those whose locks its CPU holds (the kernel reads the
// state a lock protects under that lock).
func (a *analysis) decisionObjects(i int) map[objKey]bool {
	s := &a.steps[i]
	objs := map[objKey]bool{{s.Obj, s.ID}: true}
	switch s.Field {
	case trace.FieldSleepingOwner, trace.FieldBlockedDonor, trace.FieldCurr, trace.FieldDonor:
		objs[objKey{trace.ObjTask, int32(s.Val)}] = true
	case trace.FieldBlockedOn:
		if s.Val > 0 {
			objs[objKey{trace.ObjMutex, int32(s.Val - 1)}] = true
		}
	case trace.FieldQueued, trace.FieldWaiters, trace.FieldBlockedHead:
		v := s.Val
		if v < 0 {
			v = -v
		}
		objs[objKey{trace.ObjTask, int32(v)}] = true
	case trace.FieldOwner:
		objs[objKey{trace.ObjTask, int32(s.Val & 0xffffffff)}] = true
	}
	for _, l := range a.heldSets[a.held[i]] {
		switch l.class {
		case classPiLock, classBlockedLock:
			objs[objKey{trace.ObjTask, l.key}] = true
		case classWaitLock:
			objs[objKey{trace.ObjMutex, l.key}] = true
		case classRQ:
			if a.in.Names.RQLockCPU != nil {
				objs[objKey{trace.ObjRQ, int32(a.in.Names.RQLockCPU(l.key))}] = true
			}
		}
	}
	return objs
}

// decisionScan bounds, in the CPU's own steps, how far back a write's
// decision reads are looked for.
const decisionScan = 200

// ancestorOrSelf reports whether kernel call path p is q or one of q's
// callers (a prefix of it at a function boundary).
func ancestorOrSelf(p, q string) bool {
	return p == q || strings.HasPrefix(q, p) && (p == "" || q[len(p)] == '>')
}

// noisy reads are made so often, by so many functions, that they decide
// nothing worth a line of their own.
func noisy(k key) bool {
	return k.obj == trace.ObjRQ && k.field == trace.FieldCurr
}

func (sl *slicer) run(criterion []critKey) {
	a := sl.a
	inline := a.end < len(a.steps) && a.steps[a.end].CPU >= 0
	// The window opens before the top-level call that found the broken
	// state (an inline check, a WARN in a kernel path), or else before
	// the top-level call of the latest write the invariant rests on.
	anchor := -1
	if inline {
		// ...or before the call that wrote what the check read, if that
		// came earlier (within reach).
		anchor = int(a.topStart[a.top[a.end]])
		for _, r := range a.decisionReads(a.end) {
			if w := lastBefore(a.writes[keyOf(&a.steps[r])], r); w >= 0 && a.end-w <= maxReach {
				anchor = min(anchor, int(a.topStart[a.top[w]]))
			}
		}
	} else {
		for _, c := range criterion {
			if w := lastBefore(a.writes[c.key], a.end); w >= 0 && !c.leaf {
				anchor = max(anchor, int(a.topStart[a.top[w]]))
			}
		}
	}
	if anchor < 0 {
		anchor = a.end
	}
	sl.window = max(anchor-windowLead, 0)
	if w := a.reverseNesting(); w >= 0 {
		// lock-order: the acquisition that set up the order the failing
		// one inverts.
		sl.window = min(sl.window, max(int(a.topStart[a.top[w]])-windowLead, 0))
		sl.keep(w, 0, false, whyCriterion, 3)
		sl.decisions(w, 0, 3)
	}
	if inline {
		// What the check read before it fired is what it found wrong;
		// the last writes of the fields the invariant names are the
		// state it started from.
		sl.decisions(a.end, 0, 3)
		for _, c := range criterion {
			sl.keep(lastBefore(a.writes[c.key], a.end), sl.maxDepth, false, whyCriterion, 1)
		}
	} else {
		for _, c := range criterion {
			prio := 3
			if c.leaf {
				prio = 1
			}
			sl.keep(lastBefore(a.writes[c.key], a.end), 0, !c.leaf, whyCriterion, prio)
		}
	}
	for len(sl.work) > 0 {
		i := sl.work[len(sl.work)-1]
		sl.work = sl.work[:len(sl.work)-1]
		d, prio := sl.kept[i].depth, sl.kept[i].prio
		s := &a.steps[i]
		switch s.Kind {
		case trace.StepWrite:
			sl.decisions(i, d, prio)
			// A read another CPU (or, for a list, another call on this
			// one) made just before this write: it looked, found the old
			// value, and acted on it.
			k := keyOf(s).whole()
			prev := lastBefore(a.writes[k], i)
			// For a list (an emptiness test: nothing to do), any
			// other call's read within the window's lead; for a field,
			// another CPU's read made while this write's call was under
			// way (the two raced).
			if r := lastBefore(a.reads[k], i); r > prev && r >= 0 && !noisy(k) && a.top[r] != a.top[i] &&
				(setField(k.field) && i-r <= windowLead || a.steps[r].CPU != s.CPU && r >= int(a.topStart[a.top[i]])) {
				sl.keep(r, d+1, false, whyMissed, 3)
			}
		case trace.StepRead:
			k := keyOf(s)
			// The write it read, if another call made it (what a
			// function wrote and read back itself is its own business):
			// context.
			// A write another CPU made while the read's call still went
			// on: what it read was stale by the time it acted. That
			// write is explained in turn.
			stale := firstAfter(a.writes[k], i)
			if stale >= 0 && (a.steps[stale].CPU == s.CPU || stale >= int(a.topEnd[a.top[i]])) {
				stale = -1
			}
			if w := lastBefore(a.writes[k], i); w >= 0 && (a.top[w] != a.top[i] || d == 0) {
				fp := 1 // context
				switch {
				case stale >= 0:
					fp = 3 // the value a race read, before the race
				case prio >= 3 && d > 0:
					fp = 2 // what a racing call rested on
				}
				sl.keep(w, d+1, false, whyFlow, fp)
			}
			if stale >= 0 {
				sl.keep(stale, d+1, true, whyStale, 3)
			}
		}
	}
}

// decisions keeps what the function of the write at step i decided it
// on: the last read of each field of the objects it writes or holds the
// locks of, made by it or by its callers before the call (not inside
// calls that returned), within a bounded scan.
func (sl *slicer) decisions(i, d, prio int) {
	for _, j := range sl.a.decisionReads(i) {
		sl.keep(j, d, true, whyDecision, prio)
	}
}

// maxReach bounds, in steps, how far before the violation a write the
// check read can move the window's start.
const maxReach = 200_000

// decisionReads returns the reads the function of step i (a write, or an
// inline check) decided on: the last read of each field of the objects
// it writes or holds the locks of, made by it or by its callers before
// the call (not inside calls that returned), within a bounded scan.
func (a *analysis) decisionReads(i int) []int {
	var out []int
	s := &a.steps[i]
	objs := a.decisionObjects(i)
	if s.Kind == trace.StepCheck || s.Kind == trace.StepEvent {
		for _, t := range a.in.Failure.Tasks {
			objs[objKey{trace.ObjTask, t}] = true
		}
		for _, m := range a.in.Failure.Mutexes {
			objs[objKey{trace.ObjMutex, m}] = true
		}
		objs[objKey{trace.ObjRQ, int32(s.CPU)}] = true
	}
	seen := map[key]bool{}
	mine := 0
	for j := i - 1; j >= 0 && mine < decisionScan; j-- {
		r := &a.steps[j]
		if r.CPU != s.CPU {
			continue
		}
		mine++
		if a.top[j] != a.top[i] {
			break
		}
		if r.Kind != trace.StepRead || !ancestorOrSelf(a.path[j], a.path[i]) {
			continue
		}
		rk := keyOf(r)
		if seen[rk] || noisy(rk) || !objs[objKey{rk.obj, rk.id}] {
			continue
		}
		seen[rk] = true
		out = append(out, j)
	}
	return out
}

var lockOrderRE = regexp.MustCompile(`takes ([a-z_>-]+)#(\d+) while holding ([a-z_>-]+)#(\d+)`)

// reverseNesting, for a lock-order violation ("takes A#x while holding
// B#y"), returns the last earlier step where a CPU took B#y while holding
// A#x: the order the failing acquisition inverts (-1 if none).
func (a *analysis) reverseNesting() int {
	f := a.in.Failure
	if f.Name != "lock-order" {
		return -1
	}
	m := lockOrderRE.FindStringSubmatch(f.Message)
	if m == nil {
		return -1
	}
	ca, cb := classOf(m[1]), classOf(m[3])
	ka, _ := strconv.Atoi(m[2])
	kb, _ := strconv.Atoi(m[4])
	if ca < 0 || cb < 0 {
		return -1
	}
	held := lockID{uint8(ca), int32(ka)}
	for i := a.end - 1; i >= 0; i-- {
		s := &a.steps[i]
		if s.Kind != trace.StepLock || s.Class != uint8(cb) || s.ID != int32(kb) {
			continue
		}
		for _, l := range a.heldSets[a.held[i]] {
			if l == held {
				return i
			}
		}
	}
	return -1
}

// classNames are the lock classes by number (internal/spinlock's).
var classNames = []string{"pi_lock", "rq->lock", "wait_lock", "blocked_lock", "timer_base", "other", "siglock", "shared_runq->lock",
	"wq_head->lock", "sk_lock.slock", "unix_sock->lock"}

func classOf(name string) int {
	for i, n := range classNames {
		if n == name {
			return i
		}
	}
	return -1
}

// critKey is a field the invariant looked at; leaf: its last write is
// context (shown, not explained further).
type critKey struct {
	key
	leaf bool
}

// criterion returns the fields the invariant looked at.
func (a *analysis) criterion() []critKey {
	f := a.in.Failure
	spec, ok := criteria[f.Name]
	if !ok {
		spec = defaultCriterion
	}
	var ks []critKey
	add := func(k key) { ks = append(ks, critKey{k, spec.leaf[k.field]}) }
	if spec.chain && len(f.Tasks) > 0 {
		// The blocked_on chain from the violation's task, as the last
		// writes left it: each link's lock and that lock's owner.
		f.Tasks = append([]int32(nil), f.Tasks...)
		t := f.Tasks[0]
		for n := 0; n < 8; n++ {
			w := lastBefore(a.writes[key{obj: trace.ObjTask, id: t, field: trace.FieldBlockedOn}], a.end)
			if w < 0 || a.steps[w].Val == 0 {
				break
			}
			m := int32(a.steps[w].Val - 1)
			if !containsID(f.Mutexes, m) {
				f.Mutexes = append(f.Mutexes, m)
			}
			o := lastBefore(a.writes[key{obj: trace.ObjMutex, id: m, field: trace.FieldOwner}], a.end)
			if o < 0 {
				break
			}
			t = int32(a.steps[o].Val & 0xffffffff)
			if t == 0 || containsID(f.Tasks, t) {
				break
			}
			f.Tasks = append(f.Tasks, t)
		}
	}
	for n, t := range f.Tasks {
		fields := spec.others
		if n == 0 {
			fields = spec.task
		} else if p, ok := spec.pos[n]; ok {
			fields = p
		}
		for _, fl := range fields {
			k := key{obj: trace.ObjTask, id: t, field: fl}
			if setField(fl) && n > 0 {
				// the violation's task on this task's list
				k.member = f.Tasks[0]
			}
			add(k)
		}
	}
	for _, m := range f.Mutexes {
		for _, fl := range spec.mutex {
			add(key{obj: trace.ObjMutex, id: m, field: fl})
		}
	}
	rqs := []int{}
	if f.CPU >= 0 {
		rqs = append(rqs, f.CPU)
	}
	if spec.assertedRQ {
		if m := assertedRQRE.FindStringSubmatch(f.Message); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n != f.CPU {
				rqs = append(rqs, n)
			}
		}
	}
	for _, cpu := range rqs {
		for _, fl := range spec.rq {
			if fl == trace.FieldNeedResched {
				// TIF_NEED_RESCHED is rq->curr's: the task the last
				// write of rq->curr left there.
				if w := lastBefore(a.writes[key{obj: trace.ObjRQ, id: int32(cpu), field: trace.FieldCurr}], a.end); w >= 0 {
					add(key{obj: trace.ObjTask, id: int32(a.steps[w].Val), field: fl})
				}
				continue
			}
			add(key{obj: trace.ObjRQ, id: int32(cpu), field: fl})
		}
	}
	// The queue membership of the named tasks, wherever they are queued.
	if spec.queue {
		for _, t := range f.Tasks {
			// the task's latest enqueue or dequeue, wherever it was
			var last key
			at := -1
			for k, ws := range a.writes {
				if k.field == trace.FieldQueued && k.member == t {
					if w := lastBefore(ws, a.end); w > at {
						at, last = w, k
					}
				}
			}
			if at >= 0 {
				add(last)
			}
		}
	}
	return ks
}

func containsID(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// crit is what an invariant looks at: fields of the violation's task, of
// the other tasks its message names, of the mutexes it names and of the
// runqueue of the CPU that found it; queue: where the named tasks are
// queued.
type crit struct {
	task, others, mutex, rq []trace.Field
	// pos, where set, replaces others for the task the message names at
	// that position (1: the first after the violation's task).
	pos   map[int][]trace.Field
	queue bool
	// chain: the tasks and mutexes of the violation's task's blocked_on
	// chain count as named.
	chain bool
	// leaf fields are context: their last write is shown, not explained.
	leaf map[trace.Field]bool
	// assertedRQ: the rq fields count for the runqueue a failed
	// lockdep_assert_rq_held(rqN) names as well as for the CPU that
	// found it (a sibling whose rq_lockp() changed under it).
	assertedRQ bool
}

// assertedRQRE finds the runqueue of a failed lockdep_assert_rq_held.
var assertedRQRE = regexp.MustCompile(`lockdep_assert_rq_held\(rq(\d+)\)`)

var (
	taskCore         = []trace.Field{trace.FieldState, trace.FieldOnRQ, trace.FieldCPU, trace.FieldBlockedOn, trace.FieldIsBlocked, trace.FieldSleepingOwner}
	defaultCriterion = crit{task: taskCore, others: taskCore,
		mutex: []trace.Field{trace.FieldOwner}, rq: []trace.Field{trace.FieldDonor}}
)

var criteria = map[string]crit{
	// "W parked on O but its lock M is owned by X"
	"parked-owner": {task: []trace.Field{trace.FieldSleepingOwner, trace.FieldBlockedOn},
		pos: map[int][]trace.Field{1: {trace.FieldBlockedHead}, 2: nil}, mutex: []trace.Field{trace.FieldOwner},
		leaf: map[trace.Field]bool{trace.FieldBlockedOn: true, trace.FieldOwner: true}},
	"no-stranded-waiter": {task: []trace.Field{trace.FieldSleepingOwner},
		others: []trace.Field{trace.FieldOnRQ, trace.FieldBlockedHead}},
	"sleeping-owner": {task: []trace.Field{trace.FieldSleepingOwner, trace.FieldOnRQ},
		others: []trace.Field{trace.FieldBlockedHead}},
	"curr-donor": {task: []trace.Field{trace.FieldBlockedOn, trace.FieldIsBlocked, trace.FieldOnRQ},
		others: []trace.Field{trace.FieldBlockedOn, trace.FieldIsBlocked, trace.FieldCPU},
		rq:     []trace.Field{trace.FieldDonor, trace.FieldCurr}, chain: true},
	"one-queue": {task: []trace.Field{trace.FieldOnRQ, trace.FieldCPU, trace.FieldDelayed},
		others: []trace.Field{trace.FieldOnRQ}, queue: true},
	// affinity: where the task is and its mask, and the wake_cpu that
	// decided where it was woken (the mask change the run slipped past).
	"affinity":         {task: []trace.Field{trace.FieldCPU, trace.FieldOnCPU, trace.FieldMask, trace.FieldWakeCPU}, rq: []trace.Field{trace.FieldCurr}},
	"wake-cpu":         {task: []trace.Field{trace.FieldWakeCPU, trace.FieldCPU, trace.FieldIsBlocked, trace.FieldMask}},
	"migrate-disabled": {task: []trace.Field{trace.FieldCPU}},
	"running-not-blocked": {task: []trace.Field{trace.FieldState, trace.FieldIsBlocked},
		rq: []trace.Field{trace.FieldCurr}},
	"no-stale-rq-ref": {task: []trace.Field{trace.FieldCPU, trace.FieldOnRQ},
		rq: []trace.Field{trace.FieldDonor}},
	"proxy-migrate": {task: []trace.Field{trace.FieldCPU, trace.FieldOnRQ, trace.FieldBlockedOn},
		others: []trace.Field{trace.FieldCPU, trace.FieldOnRQ, trace.FieldOnCPU, trace.FieldState},
		mutex:  []trace.Field{trace.FieldOwner}},
	"chain-acyclic": {task: []trace.Field{trace.FieldBlockedOn}, others: []trace.Field{trace.FieldBlockedOn},
		mutex: []trace.Field{trace.FieldOwner}, chain: true},
	"progress": {task: []trace.Field{trace.FieldOnRQ, trace.FieldState, trace.FieldCPU},
		rq: []trace.Field{trace.FieldCurr, trace.FieldDonor, trace.FieldNeedResched}, queue: true},
	"offline-cpu": {task: []trace.Field{trace.FieldCPU, trace.FieldOnRQ, trace.FieldWakeCPU}, queue: true},
	"donor-handoff": {task: []trace.Field{trace.FieldBlockedDonor, trace.FieldBlockedOn},
		others: []trace.Field{trace.FieldBlockedOn}, mutex: []trace.Field{trace.FieldOwner}},
	"one-owner":   {task: []trace.Field{trace.FieldBlockedOn}, mutex: []trace.Field{trace.FieldOwner, trace.FieldWaiters}},
	"exited-dead": {task: []trace.Field{trace.FieldState, trace.FieldOnRQ}, queue: true},
	// "lockdep_assert_rq_held(rq0) on cpu2: rq_lockp() is ... not held
	// here": which lock rq_lockp() names follows rq->core_enabled, so
	// its last write on both runqueues (the __sched_core_flip of
	// whichever CPU switched core scheduling) is what the check rests
	// on, beside the CPU's own donor.
	"rq-lock-identity": {task: taskCore, others: taskCore, mutex: []trace.Field{trace.FieldOwner},
		rq: []trace.Field{trace.FieldDonor, trace.FieldCoreEnabled}, assertedRQ: true},
	// dl-throttled-pick: the throttle, and the sibling's selection the
	// fast path took (core_pick, written by the CPU that selected it).
	"dl-throttled-pick": {task: []trace.Field{trace.FieldDLThrottled, trace.FieldOnRQ, trace.FieldCPU},
		rq: []trace.Field{trace.FieldCorePick, trace.FieldDonor}},
}

package cpu

// The scenario-test harness: a machine whose CPUs are driven one step at
// a time from the test goroutine, so every interleaving is the one the
// script writes down. Each CPU still takes its real locks; nothing runs
// concurrently. Scripts live in testdata/*.txt (datadriven format; refresh
// expected output with `go test ./internal/cpu -run TestScenarios -rewrite`
// and review the diff).

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/topology"
	"github.com/proxysim/proxysim/internal/trace"
)

// cfgHorizon is the harness machine's epoch, sim time and run horizon:
// far away, and below the timer list's "no timer" value (1<<62-1).
const cfgHorizon = math.MaxInt64 / 4

type harness struct {
	t       *testing.T
	m       *Machine
	mutexes map[string]int
	tasks   map[string]*task.Task
	lastSeq uint64
	nviol   int
	// intr is the armed interrupt, if any; nested is true while it runs;
	// out holds the output of a command so far when an interrupt fired.
	intr   *interrupt
	nested bool
	paused int
	out    strings.Builder
}

func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := &harness{t: t}
		datadriven.RunTest(t, path, h.handle)
	})
}

func (h *harness) handle(t *testing.T, d *datadriven.TestData) string {
	defer func() {
		if e := recover(); e != nil {
			t.Fatalf("%s: panic: %v", d.Pos, e)
		}
	}()
	if in := h.intr; in != nil && d.Cmd != "interrupt" {
		defer func() {
			if h.intr == in {
				t.Fatalf("%s: the interrupt armed before this command did not fire", d.Pos)
			}
		}()
	}
	switch d.Cmd {
	case "interrupt":
		return h.armInterrupt(t, d)
	case "machine":
		return h.machine(t, d)
	case "mutex":
		for _, a := range d.CmdArgs {
			h.mutexes[a.Key] = h.m.AddMutex(a.Key).ID()
		}
		return ""
	case "task":
		return h.task(t, d)
	case "run":
		cpu := h.intArg(t, d, "cpu", 0)
		steps := h.intArg(t, d, "steps", 1)
		cp := h.m.cpus[cpu]
		for i := 0; i < steps; i++ {
			// The horizon is the epoch's end (below the "no timer"
			// sentinel, 1<<62-1): an idle CPU with no timer stops here
			// instead of jumping its clock to the sentinel.
			if cp.iterate(cfgHorizon) {
				break // idle with nothing to do
			}
		}
		return h.events()
	case "wake":
		p := h.taskArg(t, d, "task")
		from := h.intArg(t, d, "from", 0)
		ok := h.m.tryToWakeUp(h.m.cpus[from].c, p, task.WakeNormal)
		return fmt.Sprintf("woken=%v\n", ok) + h.events()
	case "signal":
		// signal task=X [from=N] [fatal]: send_signal from cpu N
		p := h.taskArg(t, d, "task")
		from := h.intArg(t, d, "from", 0)
		ok := h.m.sendSignal(h.m.cpus[from].c, p, d.HasArg("fatal"))
		return fmt.Sprintf("woken=%v\n", ok) + h.events()
	case "affinity":
		p := h.taskArg(t, d, "task")
		from := h.intArg(t, d, "from", 0)
		var list string
		d.ScanArgs(t, "cpus", &list)
		mask, err := task.ParseMask(list, h.m.NumCPUs())
		if err != nil {
			t.Fatal(err)
		}
		h.m.setCPUsAllowed(h.m.cpus[from].c, p, mask)
		return h.events()
	case "clock":
		cpu := h.intArg(t, d, "cpu", 0)
		var at string
		d.ScanArgs(t, "t", &at)
		dur, err := time.ParseDuration(at)
		if err != nil {
			t.Fatal(err)
		}
		cp := h.m.cpus[cpu]
		cp.advance(int64(dur) - cp.c.Now)
		cp.resyncTick()
		return ""
	case "state":
		return h.state()
	case "setattr":
		return h.setattr(t, d)
	case "dl":
		return h.dlState()
	case "audit":
		h.m.Audit()
		return h.violations()
	case "events":
		return h.events()
	}
	t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	return ""
}

func (h *harness) machine(t *testing.T, d *datadriven.TestData) string {
	cfg := DefaultConfig()
	cfg.CPUs = h.intArg(t, d, "cpus", 2)
	cfg.Epoch = cfgHorizon
	cfg.SimTime = cfgHorizon
	cfg.RingSize = 1 << 14
	cfg.Seed = 1
	cfg.AuditEvery = 0
	cfg.Hooks = func(int) spinlock.Hooks { return harnessHooks{h} }
	for _, a := range d.CmdArgs {
		switch a.Key {
		case "proxy":
			cfg.Proxy = a.Vals[0] == "on"
		case "sleeping-owners":
			cfg.SleepingOwners = a.Vals[0] == "on"
		case "core-sched":
			cs, err := ParseCoreMode(a.Vals[0])
			if err != nil {
				t.Fatal(err)
			}
			cfg.CoreSched = cs
		case "optimistic-spin":
			cfg.NoOptimisticSpin = a.Vals[0] == "off"
		case "topology":
			tp, err := topology.Parse(a.Vals[0])
			if err != nil {
				t.Fatal(err)
			}
			cfg.Topology = tp
		case "bug":
			s, err := bugs.Parse(a.Vals)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Bugs = s
		}
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.m, h.mutexes, h.tasks, h.lastSeq, h.nviol = m, map[string]int{}, map[string]*task.Task{}, 0, 0
	h.intr = nil
	return ""
}

func (h *harness) intArg(t *testing.T, d *datadriven.TestData, key string, def int) int {
	if !d.HasArg(key) {
		return def
	}
	var v int
	d.ScanArgs(t, key, &v)
	return v
}

func (h *harness) taskArg(t *testing.T, d *datadriven.TestData, key string) *task.Task {
	var name string
	d.ScanArgs(t, key, &name)
	p, ok := h.tasks[name]
	if !ok {
		t.Fatalf("%s: unknown task %q", d.Pos, name)
	}
	return p
}

func (h *harness) task(t *testing.T, d *datadriven.TestData) string {
	var name string
	d.ScanArgs(t, "name", &name)
	policy, prio := task.Normal, 0
	if d.HasArg("policy") {
		var s string
		d.ScanArgs(t, "policy", &s)
		switch s {
		case "fifo":
			policy = task.FIFO
		case "rr":
			policy = task.RR
		case "deadline":
			policy = task.Deadline
		}
	}
	dl := h.dlArgs(t, d)
	prio = h.intArg(t, d, "prio", 0)
	mask := task.MaskAll(h.m.NumCPUs())
	if d.HasArg("cpus") {
		var s string
		d.ScanArgs(t, "cpus", &s)
		var err error
		if mask, err = task.ParseMask(s, h.m.NumCPUs()); err != nil {
			t.Fatal(err)
		}
	}
	on := h.intArg(t, d, "on", mask.Next(0))
	cookie := uint64(h.intArg(t, d, "cookie", 0))
	prog := h.program(t, d)
	p, err := h.m.AddTask(TaskSpec{Name: name, Policy: policy, Prio: prio, DL: dl, Mask: mask, Prog: prog, CPU: on, Cookie: cookie, Seed: uint64(len(h.tasks) + 1)})
	if err != nil {
		return fmt.Sprintf("error: %v\n", err)
	}
	h.tasks[name] = p
	return h.events()
}

// dlArgs reads runtime=, deadline= and period= (durations; period
// defaults to deadline) of a SCHED_DEADLINE task or setattr.
func (h *harness) dlArgs(t *testing.T, d *datadriven.TestData) task.DLParams {
	var a task.DLParams
	for _, k := range []struct {
		key string
		dst *int64
	}{{"runtime", &a.Runtime}, {"deadline", &a.Deadline}, {"period", &a.Period}} {
		if !d.HasArg(k.key) {
			continue
		}
		var s string
		d.ScanArgs(t, k.key, &s)
		x, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s: %v", d.Pos, err)
		}
		*k.dst = int64(x)
	}
	return a
}

// setattr task=X policy=P [prio=N] [runtime= deadline= period=] [from=N]:
// sched_setattr from cpu N, through admission control.
func (h *harness) setattr(t *testing.T, d *datadriven.TestData) string {
	p := h.taskArg(t, d, "task")
	from := h.intArg(t, d, "from", 0)
	var s string
	d.ScanArgs(t, "policy", &s)
	pol := map[string]task.Policy{"normal": task.Normal, "fifo": task.FIFO, "rr": task.RR, "deadline": task.Deadline}[s]
	h.m.setScheduler(h.m.cpus[from].c, p, pol, h.intArg(t, d, "prio", 0), h.dlArgs(t, d))
	return h.events()
}

// dlState prints every SCHED_DEADLINE task's entity and the DL counters.
func (h *harness) dlState() string {
	var b strings.Builder
	for _, p := range h.m.tasks[1:] {
		if !p.DLTask() {
			continue
		}
		dl := &p.SE.DL
		fmt.Fprintf(&b, "%s cpu%d runtime=%v deadline=%v throttled=%v in-tree=%v timer=%v\n", p.Name, p.CPU(),
			time.Duration(dl.Runtime), time.Duration(dl.Deadline), dl.Throttled, dl.OnDLRQ, dl.TimerQueued)
	}
	for _, k := range []stats.Counter{stats.DLThrottles, stats.DLReplenishments, stats.DLPushes, stats.DLPulls, stats.DLDonorPicks, stats.DLAdmissionFails} {
		fmt.Fprintf(&b, "%s=%d ", stats.CounterNames[k], stats.Sum(h.m.Stats, k))
	}
	b.WriteString("\n")
	return b.String()
}

// program parses one instruction per line.
func (h *harness) program(t *testing.T, d *datadriven.TestData) *task.Program {
	pr := &task.Program{}
	dur := func(s string) int64 {
		x, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s: %v", d.Pos, err)
		}
		return int64(x)
	}
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		k, mode, ok := task.ParseOpName(f[0])
		if !ok {
			t.Fatalf("%s: unknown instruction %q", d.Pos, f[0])
		}
		op := task.Op{Kind: k, LockMode: mode}
		switch k {
		case task.OpCompute, task.OpSleep:
			op.Min = dur(f[1])
		case task.OpLock, task.OpUnlock:
			op.Mutex = h.mutexes[f[1]]
		case task.OpWake, task.OpSignal, task.OpKill:
			op.Target = h.tasks[f[1]].ID
		case task.OpLoop:
			op.Jump, _ = strconv.Atoi(f[1])
		case task.OpCookie:
			op.Prio, _ = strconv.Atoi(f[1])
		}
		pr.Ops = append(pr.Ops, op)
	}
	if len(pr.Ops) == 0 {
		pr.Ops = []task.Op{{Kind: task.OpCompute, Min: int64(time.Hour)}}
	}
	return pr
}

func (h *harness) name(id int32) string {
	if id < 0 {
		return "idle"
	}
	if id == 0 {
		return "-"
	}
	if p := h.m.Task(int(id)); p != nil {
		return p.Name
	}
	return fmt.Sprint(id)
}

// events prints what happened since the last call, ticks and IPIs
// omitted, then any new violations.
func (h *harness) events() string {
	var b strings.Builder
	b.WriteString(h.out.String())
	h.out.Reset()
	for _, e := range h.m.Log.Merged(0) {
		if e.Seq <= h.lastSeq {
			continue
		}
		h.lastSeq = e.Seq
		if e.Kind == trace.EvTick || e.Kind == trace.EvIPI {
			continue
		}
		b.WriteString(h.format(e))
		b.WriteByte('\n')
	}
	b.WriteString(h.violations())
	return b.String()
}

func (h *harness) format(e trace.Event) string {
	n := h.name
	pre := fmt.Sprintf("cpu%d t=%v", e.CPU, time.Duration(e.Time))
	switch e.Kind {
	case trace.EvSwitch:
		s := fmt.Sprintf("%s switch %s -> %s", pre, n(e.A), n(e.Task))
		if e.B != e.Task {
			s += fmt.Sprintf(" (donor %s)", n(e.B))
		}
		return s
	case trace.EvMigrate:
		return fmt.Sprintf("%s migrate %s cpu%d->cpu%d %s", pre, n(e.Task), e.A, e.B, trace.MigrateReason(e.C))
	case trace.EvProxyPick:
		return fmt.Sprintf("%s proxy: run %s for donor %s (chain %d)", pre, n(e.Task), n(e.A), e.B)
	case trace.EvContend:
		return fmt.Sprintf("%s %s blocks on %s (owner %s)", pre, n(e.Task), h.mutexName(e.A), n(e.B))
	case trace.EvLock:
		return fmt.Sprintf("%s %s takes %s", pre, n(e.Task), h.mutexName(e.A))
	case trace.EvUnlock:
		return fmt.Sprintf("%s %s releases %s (next %s)", pre, n(e.Task), h.mutexName(e.A), n(e.B))
	case trace.EvHandoff:
		kind := "handoff"
		if e.B == 1 {
			kind = "donor handoff"
		}
		return fmt.Sprintf("%s %s of %s to %s", pre, kind, h.mutexName(e.A), n(e.Task))
	case trace.EvIsBlocked:
		return fmt.Sprintf("%s %s is_blocked=%d", pre, n(e.Task), e.A)
	case trace.EvBlockedOnClear:
		return fmt.Sprintf("%s %s blocked_on %s cleared", pre, n(e.Task), h.mutexName(e.A))
	case trace.EvWake:
		via := ""
		if e.B == 1 {
			via = " via wake list"
		}
		return fmt.Sprintf("%s wake %s on cpu%d%s", pre, n(e.Task), e.A, via)
	case trace.EvWakeRunnable:
		return fmt.Sprintf("%s wake %s (still queued on cpu%d)", pre, n(e.Task), e.A)
	case trace.EvReschedIdle:
		return fmt.Sprintf("%s resched idle (donor was %s)", pre, n(e.A))
	case trace.EvParkOnOwner:
		return fmt.Sprintf("%s park %s on sleeping owner %s", pre, n(e.Task), n(e.A))
	case trace.EvActivate:
		return fmt.Sprintf("%s activate %s on cpu%d", pre, n(e.Task), e.B)
	case trace.EvDonorKeep:
		return fmt.Sprintf("%s %s stays queued as donor", pre, n(e.Task))
	case trace.EvBlock:
		return fmt.Sprintf("%s %s sleeps (%s)", pre, n(e.Task), task.State(e.A))
	case trace.EvSleep:
		d := "long"
		if e.A < 1<<31-1 {
			d = (time.Duration(e.A) * time.Microsecond).String()
		}
		return fmt.Sprintf("%s %s sleep %s", pre, n(e.Task), d)
	case trace.EvLoadBalance:
		return fmt.Sprintf("%s load balance pulls %s cpu%d->cpu%d", pre, n(e.Task), e.A, e.B)
	case trace.EvLockEINTR:
		return fmt.Sprintf("%s %s leaves the wait for %s with -EINTR", pre, n(e.Task), h.mutexName(e.A))
	case trace.EvSignal:
		kind := "signal"
		if e.A == 1 {
			kind = "SIGKILL"
		}
		return fmt.Sprintf("%s %s to %s (woken=%v)", pre, kind, n(e.Task), e.B == 1)
	case trace.EvSignalHandled:
		kind := "a signal"
		if e.A == 1 {
			kind = "SIGKILL"
		}
		return fmt.Sprintf("%s %s handles %s", pre, n(e.Task), kind)
	case trace.EvSpin:
		kind := "spins on the owner of"
		if e.B == 1 {
			kind = "spins (first waiter, blocked_on cleared) on the owner of"
		}
		return fmt.Sprintf("%s %s %s %s", pre, n(e.Task), kind, h.mutexName(e.A))
	case trace.EvSpinEnd:
		how := [...]string{"took it", "owner not on a CPU", "need_resched"}[e.B]
		return fmt.Sprintf("%s %s stops spinning on %s after %d turns: %s", pre, n(e.Task), h.mutexName(e.A), e.C, how)
	case trace.EvSpuriousWake:
		return fmt.Sprintf("%s spurious wake of %s waiting for %s (woken=%v)", pre, n(e.Task), h.mutexName(e.A), e.B == 1)
	case trace.EvViolation:
		return fmt.Sprintf("%s VIOLATION invariant %d (%s)", pre, e.A, check.Invariant(e.A).Name())
	case trace.EvCorePick:
		return fmt.Sprintf("%s core pick: %s here, core cookie %d, %d forced idle", pre, n(e.Task), e.A, e.B)
	case trace.EvCookie:
		return fmt.Sprintf("%s %s cookie %d", pre, n(e.Task), e.A)
	case trace.EvDLThrottle:
		return fmt.Sprintf("%s dl throttle %s (runtime %dus)", pre, n(e.Task), e.A)
	case trace.EvDLReplenish:
		return fmt.Sprintf("%s dl replenish %s (runtime %dus, deadline in %dus)", pre, n(e.Task), e.A, e.B)
	case trace.EvDLAdmission:
		if e.A == 1 {
			return fmt.Sprintf("%s dl admission refuses %s (-EBUSY)", pre, n(e.Task))
		}
		return fmt.Sprintf("%s dl admission admits %s", pre, n(e.Task))
	}
	return fmt.Sprintf("%s %s %s", pre, e.Kind, n(e.Task))
}

func (h *harness) mutexName(id int32) string {
	for k, v := range h.mutexes {
		if v == int(id) {
			return k
		}
	}
	return fmt.Sprint(id)
}

func (h *harness) violations() string {
	vs := h.m.Rep.Violations()
	var b strings.Builder
	for _, v := range vs[h.nviol:] {
		fmt.Fprintf(&b, "violation: %s: %s\n", v.Name, v.Message)
	}
	h.nviol = len(vs)
	return b.String()
}

// state dumps every CPU and every task.
func (h *harness) state() string {
	var b strings.Builder
	m := h.m
	for c := 0; c < m.NumCPUs(); c++ {
		r := m.RQ(c)
		var q []string
		for _, p := range r.Tasks() {
			q = append(q, p.Name)
		}
		sort.Strings(q)
		fmt.Fprintf(&b, "cpu%d: curr=%s donor=%s queued=[%s] need_resched=%v\n", c, h.name(int32(r.Curr().ID)), h.name(int32(r.PeekDonor().ID)), strings.Join(q, " "), r.NeedResched())
	}
	names := make([]string, 0, len(h.tasks))
	for n := range h.tasks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := h.tasks[n]
		mx, isb, donor := p.Peek()
		fmt.Fprintf(&b, "%s: %s on_rq=%d on_cpu=%v cpu=%d wake_cpu=%d", n, p.State(), p.OnRQ(), p.OnCPU(), p.CPU(), p.WakeCPU)
		if mx != nil {
			fmt.Fprintf(&b, " blocked_on=%s", h.mutexName(int32(mx.ID())))
		}
		if isb {
			b.WriteString(" is_blocked")
		}
		if donor != nil {
			fmt.Fprintf(&b, " blocked_donor=%s", donor.Name)
		}
		if so := p.SleepingOwner.Load(); so != nil {
			fmt.Fprintf(&b, " parked_on=%s", so.Name)
		}
		fmt.Fprintf(&b, " runtime=%v", time.Duration(p.SE.SumExecRuntime))
		if p.SE.DonatedRuntime > 0 {
			fmt.Fprintf(&b, " donated=%v", time.Duration(p.SE.DonatedRuntime))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// interrupt is armed by `interrupt cpu=N task=X when=migrating|waking|unlocking
// run=M [steps=K]` and fires during the next command: the first time CPU
// N passes a lock-release yield point while X is on_rq MIGRATING (when=
// migrating) or woken (when=waking: is_blocked with blocked_on cleared),
// or a lock-acquire point inside X's mutex_unlock before wait_lock (when=
// unlocking: X let go of a mutex whose owner word still names it), holding no lock but pi_locks, CPU
// M takes K turns of its loop right there, as it could concurrently, and
// then CPU N goes on. It makes mid-operation interleavings (a move between
// its two rq locks, an unlock before its wake_up_q) exact. The nested CPU
// must not need a lock the paused one holds, nor wait for it: either fails
// the test. A command that does not fire an armed interrupt fails too.
type interrupt struct {
	cpu, run, steps int
	p               *task.Task
	when            string
}

func (h *harness) armInterrupt(t *testing.T, d *datadriven.TestData) string {
	in := &interrupt{cpu: h.intArg(t, d, "cpu", 0), run: h.intArg(t, d, "run", 0), steps: h.intArg(t, d, "steps", 1), p: h.taskArg(t, d, "task")}
	d.ScanArgs(t, "when", &in.when)
	if in.when != "migrating" && in.when != "waking" && in.when != "unlocking" {
		t.Fatalf("%s: interrupt when=%q: want migrating, waking or unlocking", d.Pos, in.when)
	}
	if in.cpu == in.run || in.run < 0 || in.run >= h.m.NumCPUs() {
		t.Fatalf("%s: interrupt run=%d: want another CPU of the machine", d.Pos, in.run)
	}
	h.intr = in
	return ""
}

// harnessHooks are the lock-layer hooks of every harness CPU: no-ops
// unless an interrupt is armed or running.
type harnessHooks struct{ h *harness }

func (k harnessHooks) Yield(c *spinlock.CPU, pt spinlock.Point) {
	h := k.h
	if h.nested && pt == spinlock.PointRelax {
		panic(fmt.Sprintf("interrupt: cpu%d waits (cpu_relax) for something paused cpu%d holds", c.ID, h.paused))
	}
	in := h.intr
	want := spinlock.PointRelease
	if in != nil && in.when == "unlocking" {
		want = spinlock.PointAcquire
	}
	if in == nil || h.nested || pt != want || c.ID != in.cpu || !h.interruptDue(c, in) {
		return
	}
	h.intr = nil
	h.out.WriteString(h.events())
	held := c.HeldLocks()
	if held == "" {
		held = "no lock"
	}
	fmt.Fprintf(&h.out, "-- cpu%d paused (%s %s, holding %s): cpu%d runs\n", in.cpu, in.p.Name, in.when, held, in.run)
	h.nested, h.paused = true, in.cpu
	cp := h.m.cpus[in.run]
	for i := 0; i < in.steps; i++ {
		if cp.iterate(cfgHorizon) {
			break
		}
	}
	h.nested = false
	h.out.WriteString(h.events())
	fmt.Fprintf(&h.out, "-- cpu%d resumes\n", in.cpu)
}

func (k harnessHooks) Spin(c *spinlock.CPU, l *spinlock.Lock) bool {
	if k.h.nested {
		panic(fmt.Sprintf("interrupt: cpu%d needs %s#%d, held by cpu%d (paused: cpu%d)", c.ID, l.Class(), l.Sub(), l.Holder(), k.h.paused))
	}
	return false
}

func (h *harness) interruptDue(c *spinlock.CPU, in *interrupt) bool {
	for _, l := range strings.Split(c.HeldLocks(), " -> ") {
		if l != "" && !strings.HasPrefix(l, spinlock.ClassPiLock.String()+"#") {
			return false
		}
	}
	switch in.when {
	case "migrating":
		return in.p.Migrating()
	case "waking":
		m, isb, _ := in.p.Peek()
		return m == nil && isb
	case "unlocking":
		// inside mutex_unlock's slow path, before wait_lock: the program
		// has let go of a mutex whose owner word still names the task
		// (a hand-off is coming)
		for _, mx := range h.m.mutexes {
			if o, _, _ := mx.Peek(); o == in.p && !slices.Contains(in.p.Exec.Held, mx.ID()) {
				return true
			}
		}
	}
	return false
}

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
	"github.com/proxysim/proxysim/internal/rq"
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
	// wwClasses maps ww_class names to the machine's class indices.
	wwClasses map[string]int
	tasks     map[string]*task.Task
	lastSeq   uint64
	nviol     int
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
			if h.intr != nil {
				t.Fatalf("%s: an interrupt armed before this command did not fire", d.Pos)
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
	case "ww_class":
		// ww_class name=X wait-die|wound-wait
		var name string
		d.ScanArgs(t, "name", &name)
		h.wwClasses[name] = h.m.AddWWClass(name, d.HasArg("wait-die"))
		return ""
	case "ww_mutex":
		// ww_mutex class=X a b ...
		var class string
		d.ScanArgs(t, "class", &class)
		k, ok := h.wwClasses[class]
		if !ok {
			t.Fatalf("%s: unknown ww_class %q", d.Pos, class)
		}
		for _, a := range d.CmdArgs {
			if a.Key != "class" {
				h.mutexes[a.Key] = h.m.AddWWMutex(a.Key, k).ID()
			}
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
	case "offline", "online":
		// offline cpu=N / online cpu=N: post a hotplug request; CPU N
		// takes it at its next step (run cpu=N). Needs hotplug=on.
		req := hpDown
		if d.Cmd == "online" {
			req = hpUp
		}
		h.m.hotplugRequest(nil, h.intArg(t, d, "cpu", 0), req)
		return h.events()
	case "barrier":
		// An epoch barrier with every CPU stopped (stop_machine): the
		// take_cpu_down of every dying CPU that is empty one grace
		// period after it went inactive, and the RCU callbacks queued
		// before it (a dead task's delayed_put_task_struct).
		// With respawn=on, also respawnEpoch: each reaped task's slot
		// gets a TASK_NEW task (named NAME.GEN in the script).
		h.m.epochs.Add(1)
		h.m.rcuBarrierPuts() // a grace period: call_rcu callbacks run
		h.m.hotplugEpoch(0)
		if h.m.cfg.Respawn {
			h.m.respawnEpoch()
			for _, p := range h.m.tasks[1:] {
				h.tasks[p.Name] = p
			}
		}
		return h.events()
	case "coreflip":
		// coreflip on|off [from=N]: __sched_core_flip from cpu N (no lock held)
		from := h.intArg(t, d, "from", 0)
		on := d.HasArg("on")
		if on == d.HasArg("off") {
			t.Fatalf("%s: coreflip wants on or off", d.Pos)
		}
		flipped := h.m.coreToggle(h.m.cpus[from].c, on)
		return fmt.Sprintf("flipped=%v\n", flipped) + h.events()
	case "forceidle":
		// forceidle: each core's forced-idle books (invariant 51) and
		// each task's core_forceidle_sum.
		var b strings.Builder
		for _, r := range h.m.rqs {
			if r.Core.Leader == r {
				fmt.Fprintf(&b, "core cpu%d: count x elapsed %v, charged %v, arithmetic %v\n", r.CPU, time.Duration(r.Core.FIExpected), time.Duration(r.Core.FICharged), time.Duration(r.Core.FIAllowed))
			}
		}
		for _, p := range h.m.tasks[1:] {
			fmt.Fprintf(&b, "%s: forceidle_sum %v\n", p.Name, time.Duration(p.Stats.ForceidleSum))
		}
		return b.String()
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
	case "rebuild":
		// rebuild [from=N]: a sched domain rebuild (update_domains_fair)
		// from cpu N, process context.
		from := h.intArg(t, d, "from", 0)
		ok := h.m.RebuildDomains(h.m.cpus[from].c)
		return fmt.Sprintf("rebuilt=%v\n", ok) + h.events() + h.violations()
	case "lockdep":
		// lockdep: the IRQ usage of every lock class used so far.
		var b strings.Builder
		for k := spinlock.Class(0); k < spinlock.NumClasses; k++ {
			if u := h.m.Dep.Usage(k); u != 0 {
				fmt.Fprintf(&b, "%s%s %v\n", k, u.Chars(), u)
			}
		}
		return b.String()
	case "state":
		return h.state()
	case "newidle":
		return h.newidle(t, d)
	case "shards":
		return h.shards()
	case "coretree":
		return h.coreTree()
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
	cfg.MaxSkew = cfgHorizon // the scripts step CPUs by hand: one window
	cfg.SimTime = cfgHorizon
	cfg.RingSize = 1 << 14
	cfg.Seed = 1
	cfg.AuditEvery = 0
	cfg.Hooks = func(int) spinlock.Hooks { return harnessHooks{h} }
	// Newidle balancing is free unless a script prices it
	// (newidle-cost=DOMAIN,CPU,TASK): the protocol scripts pin
	// interleavings, and their timestamps stay those of the events.
	cfg.NewidleCost, cfg.NewidleCPUCost, cfg.NewidleTaskCost = 0, 0, 0
	for _, a := range d.CmdArgs {
		switch a.Key {
		case "newidle-cost":
			if len(a.Vals) != 3 {
				t.Fatalf("%s: newidle-cost=DOMAIN,CPU,TASK", d.Pos)
			}
			var v [3]int64
			for i, s := range a.Vals {
				dur, err := time.ParseDuration(s)
				if err != nil {
					t.Fatalf("%s: newidle-cost: %v", d.Pos, err)
				}
				v[i] = int64(dur)
			}
			cfg.NewidleCost, cfg.NewidleCPUCost, cfg.NewidleTaskCost = v[0], v[1], v[2]
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
		case "hotplug":
			cfg.Hotplug = a.Vals[0] == "on"
		case "respawn":
			cfg.Respawn = a.Vals[0] == "on"
		case "topology":
			tp, err := topology.Parse(a.Vals[0])
			if err != nil {
				t.Fatal(err)
			}
			cfg.Topology = tp
		case "srq":
			// srq=on|off: SHARED_RUNQ built, the feature set or clear
			if cfg.SRQ == nil {
				cfg.SRQ = &SRQOptions{}
			}
			cfg.SRQ.Enabled = a.Vals[0] == "on"
		case "srq-hooks":
			if cfg.SRQ == nil {
				cfg.SRQ = &SRQOptions{Enabled: true}
			}
			cfg.SRQ.Hooks, _ = strconv.Atoi(strings.TrimPrefix(a.Vals[0], "v"))
		case "srq-bailouts":
			if cfg.SRQ == nil {
				cfg.SRQ = &SRQOptions{Enabled: true}
			}
			b, err := rq.ParseBailouts(a.Vals)
			if err != nil {
				t.Fatal(err)
			}
			cfg.SRQ.Bailouts = b
		case "sched-features":
			for _, n := range a.Vals {
				if !cfg.SchedFeatures.Set(n) {
					t.Fatalf("%s: unknown sched feature %q", d.Pos, n)
				}
			}
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
	h.wwClasses = map[string]int{}
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
	for _, k := range []stats.Counter{stats.DLThrottles, stats.DLReplenishments, stats.DLPushes, stats.DLPulls, stats.DLDonorPicks, stats.DLAdmissionFails, stats.DLEqualPreempts} {
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
		case task.OpLock, task.OpUnlock, task.OpWWUnlock:
			op.Mutex = h.mutexes[f[1]]
		case task.OpWWLock:
			// ww_lock M [retry-pc]: the back-off goes on at retry-pc (0)
			op.Mutex = h.mutexes[f[1]]
			if len(f) > 2 {
				op.Jump, _ = strconv.Atoi(f[2])
			}
		case task.OpWWInit:
			op.Class = h.wwClasses[f[1]]
		case task.OpWake, task.OpSignal, task.OpKill:
			op.Target = h.tasks[f[1]].ID
		case task.OpLoop:
			op.Jump, _ = strconv.Atoi(f[1])
		case task.OpCookie:
			op.Prio, _ = strconv.Atoi(f[1])
		case task.OpCPUOffline, task.OpCPUOnline:
			op.CPU, _ = strconv.Atoi(f[1])
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
		if e.B == 2 {
			return fmt.Sprintf("%s %s leaves (delayed, picked: %s)", pre, n(e.Task), task.State(e.A))
		}
		return fmt.Sprintf("%s %s sleeps (%s)", pre, n(e.Task), task.State(e.A))
	case trace.EvDelayed:
		switch e.B {
		case 1:
			return fmt.Sprintf("%s %s dequeue delayed (not eligible: sched_delayed)", pre, n(e.Task))
		case 2:
			return fmt.Sprintf("%s find_proxy_task: owner %s is sched_delayed", pre, n(e.Task))
		}
		return fmt.Sprintf("%s %s requeued (ENQUEUE_DELAYED)", pre, n(e.Task))
	case trace.EvSleep:
		d := "long"
		if e.A < 1<<31-1 {
			d = (time.Duration(e.A) * time.Microsecond).String()
		}
		return fmt.Sprintf("%s %s sleep %s", pre, n(e.Task), d)
	case trace.EvFork:
		return fmt.Sprintf("%s wake_up_new_task %s on cpu%d", pre, n(e.Task), e.A)
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
	case trace.EvWWWound:
		return fmt.Sprintf("%s %s wounds %s (holder of %s)", pre, n(e.B), n(e.Task), h.mutexName(e.A))
	case trace.EvWWDie:
		return fmt.Sprintf("%s %s makes %s die (waiter for %s)", pre, n(e.B), n(e.Task), h.mutexName(e.A))
	case trace.EvWWBackoff:
		return fmt.Sprintf("%s %s gets -EDEADLK on %s", pre, n(e.Task), h.mutexName(e.A))
	case trace.EvSpuriousWake:
		return fmt.Sprintf("%s spurious wake of %s waiting for %s (woken=%v)", pre, n(e.Task), h.mutexName(e.A), e.B == 1)
	case trace.EvHotplug:
		step := [...]string{"sched_cpu_deactivate (inactive, balance_push on)", "take_cpu_down (offline)", "sched_cpu_activate (online, active)"}[e.B]
		return fmt.Sprintf("%s cpu%d hotplug: %s", pre, e.A, step)
	case trace.EvMigrateDisable:
		return fmt.Sprintf("%s %s migration_disabled=%d", pre, n(e.Task), e.A)
	case trace.EvViolation:
		return fmt.Sprintf("%s VIOLATION invariant %d (%s)", pre, e.A, check.Invariant(e.A).Name())
	case trace.EvCorePick:
		return fmt.Sprintf("%s core pick: %s here, core cookie %d, %d forced idle", pre, n(e.Task), e.A, e.B)
	case trace.EvSRQPop:
		return fmt.Sprintf("%s shared_runq pop %s (shard %d, on cpu%d)", pre, n(e.Task), e.A, e.B)
	case trace.EvSRQRecheck:
		why := [...]string{"dequeued", "on_cpu", "not allowed", "task_is_blocked", "rq->donor"}[e.A]
		return fmt.Sprintf("%s shared_runq recheck of %s on cpu%d fails: %s", pre, n(e.Task), e.B, why)
	case trace.EvSRQDrain:
		return fmt.Sprintf("%s shared_runq drain LLC %d: %d unlinked", pre, e.A, e.B)
	case trace.EvCookie:
		return fmt.Sprintf("%s %s cookie %d", pre, n(e.Task), e.A)
	case trace.EvCoreFlip:
		return fmt.Sprintf("%s core scheduling flipped %s", pre, map[bool]string{true: "on", false: "off"}[e.Task == 1])
	case trace.EvDLThrottle:
		return fmt.Sprintf("%s dl throttle %s (runtime %dus)", pre, n(e.Task), e.A)
	case trace.EvDLReplenish:
		return fmt.Sprintf("%s dl replenish %s (runtime %dus, deadline in %dus)", pre, n(e.Task), e.A, e.B)
	case trace.EvDLAdmission:
		switch e.A {
		case 1:
			return fmt.Sprintf("%s dl admission refuses %s (-EBUSY)", pre, n(e.Task))
		case 2:
			return fmt.Sprintf("%s sched_setattr refuses deadline for %s (-EPERM: its mask does not span the root domain)", pre, n(e.Task))
		case 3:
			return fmt.Sprintf("%s sched_setaffinity refuses %s's new mask (-EBUSY: a deadline task must span the root domain)", pre, n(e.Task))
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
		msg := v.Message
		if v.Invariant == check.InvIRQLockUsage || v.Invariant == check.InvIRQLockOrder {
			msg = lockdepFrames(msg)
		}
		fmt.Fprintf(&b, "violation: %s: %s\n", v.Name, msg)
	}
	h.nviol = len(vs)
	return b.String()
}

// lockdepFrames keeps a lockdep report's frames of the model's packages,
// without source positions (they move with every edit): the sites, not
// the test harness that drove them.
func lockdepFrames(msg string) string {
	var out []string
	for _, l := range strings.Split(msg, "\n") {
		if i := strings.Index(l, " (internal/"); i >= 0 {
			l = l[:i]
		}
		if f := strings.TrimSpace(l); strings.HasPrefix(l, "  ") && !strings.HasPrefix(f, "lock(") && !strings.HasPrefix(f, "<") &&
			(strings.Contains(f, "harness") || strings.HasPrefix(f, "datadriven.") || strings.HasPrefix(f, "cpu.TestScenarios")) {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// state dumps every CPU and every task.
// newidle [cpu=N]: the newidle balance state of cpu N (default 0): its
// runqueue's avg_idle, idle_stamp and max_idle_balance_cost, the root
// domain's overloaded flag, each balance span's max_newidle_lb_cost, and
// its newidle counters.
func (h *harness) newidle(t *testing.T, d *datadriven.TestData) string {
	cp := h.m.cpus[h.intArg(t, d, "cpu", 0)]
	r := cp.rq
	var b strings.Builder
	fmt.Fprintf(&b, "cpu%d: avg_idle=%v idle_stamp=%v max_idle_balance_cost=%v rd_overloaded=%v\n", cp.id,
		time.Duration(r.AvgIdle), time.Duration(r.IdleStamp), time.Duration(r.MaxIdleBalanceCost.Load()), h.m.rdOverloaded.Load())
	for i, span := range h.m.spans(cp.id) {
		fmt.Fprintf(&b, "  domain%d (%d CPUs): max_newidle_lb_cost=%v\n", i, len(span), time.Duration(cp.sd[i].maxCost))
	}
	st := cp.c.Stats
	fmt.Fprintf(&b, "  balances=%d domains=%d pulls=%d cut: ttwu_pending=%d overload=%d avg_idle=%d domain=%d; cost %v\n",
		st.C[stats.NewidleBalances].Load(), st.C[stats.NewidleDomains].Load(), st.C[stats.NewidlePulls].Load(),
		st.C[stats.NewidleCutTTWUPending].Load(), st.C[stats.NewidleCutOverload].Load(), st.C[stats.NewidleCutAvgIdle].Load(),
		st.C[stats.NewidleCutDomain].Load(), time.Duration(st.C[stats.NewidleCostNs].Load()))
	return b.String()
}

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
		fmt.Fprintf(&b, "cpu%d: curr=%s donor=%s queued=[%s] need_resched=%v", c, h.name(int32(r.Curr().ID)), h.name(int32(r.PeekDonor().ID)), strings.Join(q, " "), r.NeedResched())
		switch {
		case !m.cpuOnline(c):
			b.WriteString(" offline")
		case !m.cpuActive(c):
			b.WriteString(" inactive")
		}
		b.WriteString("\n")
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
		if p.MigrationDisabled > 0 {
			fmt.Fprintf(&b, " migration_disabled=%d", p.MigrationDisabled)
		}
		if p.PinnedCPU >= 0 {
			fmt.Fprintf(&b, " pinned=cpu%d", p.PinnedCPU)
		}
		if p.SE.Delayed {
			b.WriteString(" sched_delayed")
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

// shards prints every shared_runq shard's list, head first.
func (h *harness) shards() string {
	var b strings.Builder
	if h.m.srq == nil {
		return "no shared runqueue\n"
	}
	fmt.Fprintf(&b, "SHARED_RUNQ enabled=%v\n", h.m.srq.cfg.Enabled.Load())
	for _, q := range h.m.srq.queues {
		for _, s := range q.Shards {
			var names []string
			for _, p := range s.Peek() {
				names = append(names, p.Name)
			}
			fmt.Fprintf(&b, "llc%d shard %d: [%s]\n", q.LLC, s.ID(), strings.Join(names, " "))
		}
	}
	return b.String()
}

// coreTree prints every runqueue's core_tree in order (the order
// sched_core_find and sched_core_next walk), each task with its cookie,
// the key it was linked with and its key now.
func (h *harness) coreTree() string {
	var b strings.Builder
	for i, r := range h.m.rqs {
		var ts []string
		for _, p := range r.CoreTree() {
			k := p.CoreNode.Key
			now := p.SE.Vruntime
			if p.SE.Policy.DL() {
				now = p.SE.DL.Deadline
			}
			ts = append(ts, fmt.Sprintf("%s(cookie %d, prio %d, linked at %v, now %v)", p.Name, p.CoreCookie, k.Prio, time.Duration(k.Value), time.Duration(now)))
		}
		fmt.Fprintf(&b, "cpu%d: [%s]\n", i, strings.Join(ts, " "))
	}
	return b.String()
}

// interrupt is armed by `interrupt cpu=N task=X when=migrating|waking|unlocking
// run=M [steps=K]` and fires during the next command: the first time CPU
// N passes a lock-release yield point while X is on_rq MIGRATING (when=
// migrating), woken (when=waking: is_blocked with blocked_on cleared) or
// popped off a shared_runq shard by CPU N and not yet rechecked under
// task_rq_lock (when=popped), taken off a sleeping owner's list by
// activate_blocked_waiters and not yet activated (when=activating: the
// link cleared, X still parked: is_blocked, off every queue, not WAKING),
// or a lock-acquire point inside X's mutex_unlock before wait_lock (when=
// unlocking: X let go of a mutex whose owner word still names it), holding no lock but pi_locks, CPU
// M takes K turns of its loop right there, as it could concurrently, and
// then CPU N goes on. It makes mid-operation interleavings (a move between
// its two rq locks, an unlock before its wake_up_q) exact. The nested CPU
// must not need a lock the paused one holds, nor wait for it: either fails
// the test. A command that does not fire an armed interrupt fails too.
//
// With `signal` instead of run=M (when=blocking: X is current on CPU N in
// a sleep state, past its last check, on its way into schedule()), the
// pause queues a signal to X without waking it: a sender that set
// TIF_SIGPENDING and whose wake-up waits in ttwu for the rq lock that
// CPU N's __schedule is about to take.
type interrupt struct {
	cpu, run, steps int
	p               *task.Task
	when            string
	// next is armed once this one has fired (consecutive interrupt
	// commands chain: the second fires later in the same command).
	next   *interrupt
	signal bool
}

func (h *harness) armInterrupt(t *testing.T, d *datadriven.TestData) string {
	in := &interrupt{cpu: h.intArg(t, d, "cpu", 0), run: h.intArg(t, d, "run", 0), steps: h.intArg(t, d, "steps", 1), p: h.taskArg(t, d, "task")}
	d.ScanArgs(t, "when", &in.when)
	in.signal = d.HasArg("signal")
	if in.when != "migrating" && in.when != "waking" && in.when != "unlocking" && in.when != "popped" && in.when != "blocking" && in.when != "activating" {
		t.Fatalf("%s: interrupt when=%q: want migrating, waking, unlocking, popped, blocking or activating", d.Pos, in.when)
	}
	if in.signal {
		h.intr = in
		return ""
	}
	if in.cpu == in.run || in.run < 0 || in.run >= h.m.NumCPUs() {
		t.Fatalf("%s: interrupt run=%d: want another CPU of the machine", d.Pos, in.run)
	}
	if h.intr == nil {
		h.intr = in
		return ""
	}
	last := h.intr
	for last.next != nil {
		last = last.next
	}
	last.next = in
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
	h.intr = in.next
	h.out.WriteString(h.events())
	held := c.HeldLocks()
	if held == "" {
		held = "no lock"
	}
	if in.signal {
		in.p.SigLock.Lock(c)
		in.p.QueueSignal(c, false)
		in.p.SigLock.Unlock(c)
		fmt.Fprintf(&h.out, "-- cpu%d paused (%s %s, holding %s): a signal to %s is queued; its wake-up waits for cpu%d's rq lock\n", in.cpu, in.p.Name, in.when, held, in.p.Name, in.cpu)
		fmt.Fprintf(&h.out, "-- cpu%d resumes\n", in.cpu)
		return
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
	case "popped":
		// a shared_runq pull has popped X and dropped its rq lock, not
		// yet in task_rq_lock(X)
		return h.m.cpus[in.cpu].srqPopped == in.p
	case "activating":
		// activate_blocked_waiters has unlinked X (under the owner's
		// blocked_lock, now dropped) and not yet taken X's pi_lock in
		// do_activate_blocked_waiter
		_, isb, _ := in.p.Peek()
		return isb && in.p.SleepingOwner.Load() == nil && in.p.OnRQ() == task.OnRQNone && in.p.State() != task.Waking && !in.p.OnCPU()
	case "blocking":
		st := in.p.State()
		return st != task.Running && st != task.Dead && h.m.cpus[in.cpu].rq.Curr() == in.p
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

package cpu

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
)

// steppedConfig is a 2-CPU machine whose CPUs a test steps by hand
// (iterate with cfgHorizon): no epochs, no periodic audit, every CPU's
// lock layer calling hook.
func steppedConfig(hook spinlock.Hooks) Config {
	cfg := DefaultConfig()
	cfg.CPUs = 2
	cfg.Epoch, cfg.SimTime = cfgHorizon, cfgHorizon
	cfg.RingSize = 1 << 12
	cfg.Seed = 1
	cfg.AuditEvery = 0
	cfg.Hooks = func(int) spinlock.Hooks { return hook }
	return cfg
}

// spinReport reports, once, what a CPU holds when it first has to wait
// for the watched lock.
type spinReport struct {
	watch *spinlock.Lock
	held  chan string
}

func (s *spinReport) Yield(*spinlock.CPU, spinlock.Point) {}

func (s *spinReport) Spin(c *spinlock.CPU, l *spinlock.Lock) bool {
	if l == s.watch {
		select {
		case s.held <- c.HeldLocks():
		default:
		}
	}
	return false
}

// TestWWNestedBlockedLockABBA shows the AB-BA of v21's catalogue entry
// (ww-nested-blocked-lock) deterministically: O (older context) holds a
// and wants b, held by Y (younger): __ww_mutex_add_waiter wounds Y and
// takes Y's blocked_lock to clear its blocked_on. The test holds Y's
// blocked_lock, standing for Y in its own mutex_unlock nesting a stale
// blocked_donor's blocked_lock (O's), and looks at what O's CPU holds
// while it waits: with the reference's code only b's wait_lock, so Y's
// unlock can finish and the wound goes on; with --bug also O's own
// blocked_lock, which Y's unlock is about to take: the two CPUs would
// wait for each other.
func TestWWNestedBlockedLockABBA(t *testing.T) {
	for _, bug := range []bool{false, true} {
		t.Run(fmt.Sprintf("bug=%v", bug), func(t *testing.T) {
			hook := &spinReport{held: make(chan string, 1)}
			cfg := steppedConfig(hook)
			cfg.NoOptimisticSpin = true
			if bug {
				cfg.Bugs = bugs.Set(0).With(bugs.WWNestedBlockedLock)
			}
			m, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			o, y := wwOwnerAndYounger(t, m, task.Op{Kind: task.OpCompute, Min: int64(time.Hour)})
			run := func(cpu, steps int) {
				for i := 0; i < steps; i++ {
					m.cpus[cpu].iterate(cfgHorizon)
				}
			}
			run(0, 6) // O: init (stamp 1), takes a, sleeps
			run(1, 8) // Y: init (stamp 2) after its sleep, takes b, computes
			if o.Exec.WW == nil || o.Exec.WW.Acquired != 1 || y.Exec.WW == nil || y.Exec.WW.Acquired != 1 {
				t.Fatalf("setup: O and Y should each hold one ww_mutex")
			}
			hook.watch = &y.BlockedLock
			me := spinlock.NewCPU(99)
			y.BlockedLock.Lock(me) // Y, in its unlock, holds its blocked_lock
			done := make(chan struct{})
			go func() { run(0, 4); close(done) }() // O wakes, wants b: wounds Y
			var held string
			select {
			case held = <-hook.held:
			case <-done:
				t.Fatal("O never waited for Y's blocked_lock")
			case <-time.After(10 * time.Second):
				t.Fatal("O did not reach the wound")
			}
			y.BlockedLock.Unlock(me)
			<-done
			hook.watch = nil
			t.Logf("O waits for Y's blocked_lock holding %s", held)
			ownBL := fmt.Sprintf("%s#%d", spinlock.ClassBlockedLock, o.ID)
			if got := strings.Contains(held, ownBL); got != bug {
				t.Errorf("O waits for Y's blocked_lock holding %q: own blocked_lock held = %v, want %v", held, got, bug)
			}
			if !y.Exec.WW.Wounded() {
				t.Errorf("Y's context was not wounded")
			}
		})
	}
}

// pauseAt runs CPU run's loop steps times inside CPU cpu's first lock
// release with no lock held once when() holds: an interleaving between
// the release of a wait_lock and what follows it (the waker's wake_up_q).
type pauseAt struct {
	m        *Machine
	cpu, run int
	steps    int
	when     func() bool // armed when set and true
	grace    bool        // a grace period ends within the pause
	hit      bool
}

func (h *pauseAt) Yield(c *spinlock.CPU, pt spinlock.Point) {
	if h.when == nil || h.hit || c.ID != h.cpu || pt != spinlock.PointRelease || c.Held() != 0 || !h.when() {
		return
	}
	h.hit = true
	for i := 0; i < h.steps; i++ {
		h.m.cpus[h.run].iterate(cfgHorizon)
	}
	if h.grace {
		// The pause outlasts an RCU grace period, as it may where the
		// waker runs preemptible after the release (wake_up_q before
		// raw_spin_unlock_irqrestore_wake disabled preemption around
		// it): dead tasks' call_rcu puts run.
		h.m.rcuBarrierPuts()
	}
}

func (h *pauseAt) Spin(*spinlock.CPU, *spinlock.Lock) bool { return false }

// wwVictimExitsBeforeWake: O (older context, cpu0) holds a and wants b,
// held by Y (younger, cpu1, computing): the wound queues Y on O's
// wake_q. Before O's wake_up_q (right after it drops b's wait_lock) Y
// ends its program: do_exit releases b (handed to O) and Y's last
// switch-out hands its own reference to call_rcu, whose grace period ends
// within the pause. Only the wake_q's reference keeps Y's task struct
// alive for O's wake-up. Returns the violations and Y.
func wwVictimExitsBeforeWake(t *testing.T) ([]string, *task.Task, *Machine) {
	t.Helper()
	hook := &pauseAt{cpu: 0, run: 1, steps: 10, grace: true}
	cfg := steppedConfig(hook)
	cfg.NoOptimisticSpin = true
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hook.m = m
	o, y := wwOwnerAndYounger(t, m, task.Op{Kind: task.OpCompute, Min: 3_000_000}, task.Op{Kind: task.OpExit})
	until := func(cpu int, done func() bool) {
		for i := 0; i < 50 && !done(); i++ {
			m.cpus[cpu].iterate(cfgHorizon)
		}
		if !done() {
			t.Fatalf("cpu%d: setup step not reached", cpu)
		}
	}
	until(0, func() bool { return len(o.Exec.Held) == 1 }) // O: init (stamp 1), takes a
	until(1, func() bool { return len(y.Exec.Held) == 1 }) // Y: init (stamp 2), takes b
	// Armed once Y's context is wounded (under b's wait_lock): the next
	// release with nothing held is that wait_lock's, before wake_up_q.
	hook.when = func() bool { return y.Exec.WW != nil && y.Exec.WW.Wounded() }
	until(0, func() bool { return hook.hit }) // O wakes, wants b, wounds Y; Y exits in the pause
	if !hook.hit {
		for _, e := range m.Log.Merged(0) {
			t.Logf("cpu%d t=%d %s task=%d a=%d b=%d", e.CPU, e.Time, e.Kind, e.Task, e.A, e.B)
		}
		t.Fatal("the pause never happened")
	}
	var vs []string
	for _, v := range m.Rep.Violations() {
		vs = append(vs, v.String())
	}
	return vs, y, m
}

// TestWWVictimExitsBeforeWake is the control of the use-after-free check
// (invariant 53): with the wake_q's reference the late wake-up is safe,
// the task struct is freed after it, and the exit counts as one with a
// reference outstanding.
func TestWWVictimExitsBeforeWake(t *testing.T) {
	vs, y, m := wwVictimExitsBeforeWake(t)
	if len(vs) > 0 {
		t.Fatalf("violations: %v", vs)
	}
	if y.State() != task.Dead || !y.Freed() {
		t.Fatalf("Y: state %v, freed %v; want DEAD and freed after the wake_q's put", y.State(), y.Freed())
	}
	if n := stats.Sum(m.Stats, stats.ExitsWithRefs); n != 1 {
		t.Errorf("exits_with_refs = %d, want 1 (Y exited while on O's wake_q)", n)
	}
}

// A wake_q that takes no reference (mutant wakeq-no-ref) lets the victim
// be freed under the waker: invariant 53.
func TestWakeQWithoutReferenceIsCaught(t *testing.T) {
	out := runMutantChild(t, "TestMutantChildWakeQNoRef", false)
	if !strings.Contains(out, "--- PASS: TestMutantChildWakeQNoRef") {
		t.Fatalf("the mutant child did not pass:\n%s", tail(out, 3000))
	}
}

// wwOwnerAndYounger adds the two tasks of the ww scenarios: O (cpu0) takes
// ww_mutex a, sleeps 100us and takes b; Y (cpu1), younger, takes b after
// 10us and then runs yTail.
func wwOwnerAndYounger(t *testing.T, m *Machine, yTail ...task.Op) (o, y *task.Task) {
	t.Helper()
	k := m.AddWWClass("ww", false)
	a, b := m.AddWWMutex("a", k).ID(), m.AddWWMutex("b", k).ID()
	o, err := m.AddTask(TaskSpec{Name: "O", Mask: task.MaskOf(0), CPU: 0, Seed: 1, Prog: &task.Program{Ops: []task.Op{
		{Kind: task.OpWWInit},
		{Kind: task.OpWWLock, Mutex: a},
		{Kind: task.OpSleep, Min: 100_000},
		{Kind: task.OpWWLock, Mutex: b},
		{Kind: task.OpCompute, Min: int64(time.Hour)}}}})
	if err != nil {
		t.Fatal(err)
	}
	y, err = m.AddTask(TaskSpec{Name: "Y", Mask: task.MaskOf(1), CPU: 1, Seed: 2, Prog: &task.Program{Ops: append([]task.Op{
		{Kind: task.OpSleep, Min: 10_000},
		{Kind: task.OpWWInit},
		{Kind: task.OpWWLock, Mutex: b}}, yTail...)}})
	if err != nil {
		t.Fatal(err)
	}
	return o, y
}

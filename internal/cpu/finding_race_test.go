package cpu

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/proxy"
	"github.com/proxysim/proxysim/internal/task"
)

// Finding F4 (docs/findings.md): do_activate_blocked_waiter reads
// is_blocked holding only the waiter's pi_lock, while try_to_block_task
// and ttwu_do_wakeup write it holding only the rq lock. Nothing orders
// the two, so the race detector reports the pair however the goroutines
// happen to run (it compares happens-before, not timing). The child runs
// a writer on cpu0 (rq lock held, as try_to_block_task) and
// activate_blocked_waiters on cpu1 (pi_lock held) once with the kernel's
// plain read (--bug is-blocked-plain-read) and once with the proposed
// READ_ONCE/WRITE_ONCE, in -race child processes.
func TestFindingIsBlockedPlainReadIsARace(t *testing.T) {
	checkRaceFinding(t, "TestFindingChildIsBlockedRead", "the kernel's plain is_blocked read", "doActivateBlockedWaiter", "SetIsBlocked")
}

// TestFindingChildIsBlockedRead runs only as the -race child of
// TestFindingIsBlockedPlainReadIsARace.
func TestFindingChildIsBlockedRead(t *testing.T) {
	findingChildOnly(t, "TestFindingIsBlockedPlainReadIsARace")
	cfg := DefaultConfig()
	cfg.CPUs = 2
	if findingBug() {
		cfg.Bugs = cfg.Bugs.With(bugs.IsBlockedPlainRead)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	prog := &task.Program{Ops: []task.Op{{Kind: task.OpCompute, Min: 1e9}}}
	o, _ := m.AddTask(TaskSpec{Name: "O", Policy: task.Normal, Mask: task.MaskOf(0, 1), Prog: prog, CPU: 0, Seed: 1})
	w, _ := m.AddTask(TaskSpec{Name: "W", Policy: task.Normal, Mask: task.MaskOf(0, 1), Prog: prog, CPU: 0, Seed: 2})
	// W is parked on O (as proxy_enqueue_on_owner leaves it) but still
	// queued, so that do_activate_blocked_waiter returns right after its
	// tests: only the is_blocked read matters here.
	o.BlockedHead = append(o.BlockedHead, w)
	w.SleepingOwner.Store(o)
	c0, c1 := m.cpus[0].c, m.cpus[1].c
	r0 := m.rqs[0]
	var wg sync.WaitGroup
	wg.Add(2)
	// Sleeps, which order nothing, keep the writer alive while the reader
	// runs (the detector reports a race from the stacks of both).
	go func() { // cpu0: try_to_block_task's write, under W's rq lock
		defer wg.Done()
		r0.Lock(c0)
		w.SetIsBlocked(true)
		r0.Unlock(c0)
		time.Sleep(200 * time.Millisecond)
	}()
	go func() { // cpu1: O's wake-up activates its waiters, under W's pi_lock
		defer wg.Done()
		time.Sleep(50 * time.Millisecond)
		proxy.ActivateBlockedWaiters(c1, m, 1, o)
	}()
	wg.Wait()
}

// Finding F5 (docs/findings.md): task_is_blocked() reads blocked_on with
// no lock (here from can_migrate_task, holding only the runqueue's lock),
// while the unlocker's hand-off clears it holding only the waiter's
// blocked_lock. The child runs the clear on cpu0 and the load balancer's
// test on cpu1, once with the kernel's plain read (--bug
// blocked-on-plain-read) and once with the proposed READ_ONCE.
func TestFindingBlockedOnPlainReadIsARace(t *testing.T) {
	checkRaceFinding(t, "TestFindingChildBlockedOnRead", "the kernel's plain blocked_on read", "TaskIsBlocked", "ClearBlockedOn")
}

// TestFindingChildBlockedOnRead runs only as the -race child of
// TestFindingBlockedOnPlainReadIsARace.
func TestFindingChildBlockedOnRead(t *testing.T) {
	findingChildOnly(t, "TestFindingBlockedOnPlainReadIsARace")
	cfg := DefaultConfig()
	cfg.CPUs = 2
	if findingBug() {
		cfg.Bugs = cfg.Bugs.With(bugs.BlockedOnPlainRead)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mx := m.AddMutex("L")
	prog := &task.Program{Ops: []task.Op{{Kind: task.OpCompute, Min: 1e9}}}
	w, _ := m.AddTask(TaskSpec{Name: "W", Policy: task.Normal, Mask: task.MaskOf(0, 1), Prog: prog, CPU: 0, Seed: 1})
	c0, c1 := m.cpus[0].c, m.cpus[1].c
	// W waits for L (set before the goroutines start: the set is ordered
	// before both by the goroutine starts).
	w.BlockedLock.Lock(c0.CPU)
	w.SetBlockedOn(c0, mx)
	w.BlockedLock.Unlock(c0.CPU)
	r0 := m.rqs[0]
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // cpu0: the unlocker hands L to W, under W's blocked_lock
		defer wg.Done()
		w.BlockedLock.Lock(c0.CPU)
		w.ClearBlockedOn(c0, mx, true)
		w.BlockedLock.Unlock(c0.CPU)
		time.Sleep(200 * time.Millisecond)
	}()
	go func() { // cpu1: can_migrate_task pulling from cpu0, under cpu0's rq lock
		defer wg.Done()
		time.Sleep(50 * time.Millisecond)
		r0.Lock(c1)
		_ = proxy.TaskIsBlocked(c1, w)
		r0.Unlock(c1)
	}()
	wg.Wait()
}

// Finding F11 (docs/findings.md): find_proxy_task reads the owner's
// se.sched_delayed holding its own rq lock, not the owner's, while the
// owner's CPU writes it under its rq lock (set_delayed when the owner goes
// to sleep while not eligible). The child runs that write on cpu0 and the
// walk of a donor on cpu1 whose owner is queued on cpu0, once with the
// kernel's plain read (--bug delayed-plain-read) and once with the fix's
// READ_ONCE, in -race child processes.
func TestFindingDelayedPlainReadIsARace(t *testing.T) {
	checkRaceFinding(t, "TestFindingChildDelayedRead", "the kernel's plain sched_delayed read", "FindProxyTask", "SetSchedDelayed")
}

// TestFindingChildDelayedRead runs only as the -race child of
// TestFindingDelayedPlainReadIsARace.
func TestFindingChildDelayedRead(t *testing.T) {
	findingChildOnly(t, "TestFindingDelayedPlainReadIsARace")
	cfg := DefaultConfig()
	cfg.CPUs = 2
	if findingBug() {
		cfg.Bugs = cfg.Bugs.With(bugs.DelayedPlainRead)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	prog := &task.Program{Ops: []task.Op{{Kind: task.OpCompute, Min: 1e9}}}
	o, _ := m.AddTask(TaskSpec{Name: "O", Policy: task.Normal, Mask: task.MaskOf(0), Prog: prog, CPU: 0, Seed: 1})
	d, _ := m.AddTask(TaskSpec{Name: "D", Policy: task.Normal, Mask: task.MaskOf(1), Prog: prog, CPU: 1, Seed: 2})
	mx := m.AddMutex("m")
	c0, c1 := m.cpus[0].c, m.cpus[1].c
	r0, r1 := m.rqs[0], m.rqs[1]
	if !mx.TryLockFast(c0, o) {
		t.Fatal("O could not take m")
	}
	// D waits for m (blocked_on set, is_blocked as try_to_block_task
	// leaves a mutex waiter), queued on cpu1: the donor of a walk.
	d.BlockedLock.Lock(c1.CPU)
	d.SetBlockedOn(c1, mx)
	d.BlockedLock.Unlock(c1.CPU)
	r1.Lock(c1)
	d.SetIsBlocked(true)
	r1.Unlock(c1)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // cpu0: O goes to sleep while not eligible: set_delayed under O's rq lock
		defer wg.Done()
		r0.Lock(c0)
		o.SetSchedDelayed(true)
		r0.Unlock(c0)
		time.Sleep(200 * time.Millisecond)
	}()
	go func() { // cpu1: __schedule picks D and walks to its owner O
		defer wg.Done()
		time.Sleep(50 * time.Millisecond)
		r1.Lock(c1)
		proxy.FindProxyTask(c1, m, r1, d)
		r1.Unlock(c1)
	}()
	wg.Wait()
}

// checkRaceFinding runs child, a test of two accesses on two CPUs, in
// -race child processes: with the kernel's code (findingBug true) the race
// detector must report a race whose stacks name every frame; with the
// proposed fix the child must pass with no race reported. The detector
// judges happens-before, not timing, so each outcome holds on every run.
func checkRaceFinding(t *testing.T, child, what string, frames ...string) {
	t.Helper()
	kernel := runRaceFindingChild(t, child, "1")
	ok := strings.Contains(kernel, "WARNING: DATA RACE")
	for _, f := range frames {
		ok = ok && strings.Contains(kernel, f)
	}
	if !ok {
		t.Fatalf("the race detector did not report %s:\n%s", what, tail(kernel, 3000))
	}
	fixed := runRaceFindingChild(t, child, "0")
	if strings.Contains(fixed, "WARNING: DATA RACE") || !strings.Contains(fixed, "--- PASS: "+child) {
		t.Fatalf("the fixed form is not race-free:\n%s", tail(fixed, 3000))
	}
}

func runRaceFindingChild(t *testing.T, child, bug string) string {
	t.Helper()
	t.Setenv("PROXYSIM_FINDING_BUG", bug)
	return runMutantChild(t, child, true)
}

// findingChildOnly skips a finding's child test unless checkRaceFinding
// runs it for parent.
func findingChildOnly(t *testing.T, parent string) {
	t.Helper()
	if os.Getenv("PROXYSIM_MUTANT_CHILD") == "" {
		t.Skip("only run as a child of " + parent)
	}
}

// findingBug says whether a finding's child runs the kernel's code.
func findingBug() bool { return os.Getenv("PROXYSIM_FINDING_BUG") == "1" }

package rq

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
)

// coreRQs builds n cores of two SMT threads numbered as Linux numbers x86
// (cpu i and cpu i+n are siblings), core scheduling enabled, with (core,
// CPU) lock keys as topology.LockOrderKey gives them.
func coreRQs(n int) []*RQ {
	rqs := make([]*RQ, 2*n)
	for i := range rqs {
		rqs[i] = newRQ(i)
		rqs[i].SetLockOrder((i%n)<<16 | i)
	}
	for i := 0; i < n; i++ {
		sibs := []*RQ{rqs[i], rqs[i+n]}
		for _, r := range sibs {
			r.EnableCore(rqs[i], sibs)
		}
	}
	return rqs
}

func warnCtx(id int, dep *spinlock.Validator, bug bool, got *[]check.Invariant) *percpu.Ctx {
	c := testCtx(id, dep)
	c.Stats = &stats.CPU{}
	if bug {
		c.Bugs = c.Bugs.With(bugs.CoreLockFlip)
	}
	c.OnWarn = func(_ *percpu.Ctx, inv check.Invariant, _ int, _, _ string) { *got = append(*got, inv) }
	return c
}

// flipAt runs fn once, on CPU cpu's first acquire attempt: after the
// acquire read rq_lockp() and before it takes the lock.
type flipAt struct {
	cpu  int
	fn   func()
	done bool
}

func (f *flipAt) Yield(c *spinlock.CPU, pt spinlock.Point) {
	if pt == spinlock.PointAcquire && c.ID == f.cpu && !f.done {
		f.done = true
		f.fn()
	}
}

func (f *flipAt) Spin(*spinlock.CPU, *spinlock.Lock) bool { return false }

// raw_spin_rq_lock re-validates: cpu2 reads rq_lockp(rq2) = its own lock
// (core scheduling off), a flip on completes before it takes that lock,
// and the re-read sends it to the core's lock. --bug core-lock-flip keeps
// the stale lock: lockdep_assert_rq_held reports invariant 50.
func TestCoreFlipRevalidatingAcquire(t *testing.T) {
	for _, bug := range []bool{false, true} {
		var got []check.Invariant
		rqs := coreRQs(2) // cores {0,2} and {1,3}
		sibs := rqs[0].Core.Siblings
		flipper := warnCtx(1, nil, false, &got)
		SchedCoreLock(flipper, sibs)
		CoreFlipLocked(flipper, sibs, false)
		SchedCoreUnlock(flipper, sibs)
		if rqs[2].LockP() != rqs[2].OwnLock() || rqs[2].CoreEnabled() {
			t.Fatal("after the flip off, rq2's lock is not its own")
		}
		c := warnCtx(2, nil, bug, &got)
		c.CPU.Hooks = &flipAt{cpu: 2, fn: func() {
			SchedCoreLock(flipper, sibs)
			CoreFlipLocked(flipper, sibs, true)
			SchedCoreUnlock(flipper, sibs)
		}}
		rqs[2].Lock(c)
		rqs[2].AssertHeld(c)
		if !bug {
			if len(got) != 0 || !rqs[0].OwnLock().HeldBy(c.CPU) || rqs[2].OwnLock().HeldBy(c.CPU) {
				t.Fatalf("re-validating acquire: warnings %v, holds %s; want the core's lock (rq->lock#2) only", got, c.CPU.HeldLocks())
			}
			if n := c.Stats.C[stats.CoreLockRetries].Load(); n != 1 {
				t.Fatalf("core_lock_retries %d, want 1", n)
			}
			rqs[2].Unlock(c)
			continue
		}
		if len(got) != 1 || got[0] != check.InvRQLockIdentity {
			t.Fatalf("--bug core-lock-flip: warnings %v, want invariant 50 once", got)
		}
		// Meanwhile the sibling takes the core's lock: two CPUs each
		// "hold the rq lock" of core 0.
		c0 := warnCtx(0, nil, false, &got)
		rqs[0].Lock(c0)
		if !rqs[2].OwnLock().HeldBy(c.CPU) || !rqs[0].OwnLock().HeldBy(c0.CPU) {
			t.Fatal("expected cpu2 on its own lock and cpu0 on the core's")
		}
		rqs[0].Unlock(c0)
		rqs[2].Unlock(c) // the unlock reports again and releases what cpu2 holds
		if c.CPU.Held() != 0 || len(got) != 2 {
			t.Fatalf("after the unlock: %d held, warnings %v", c.CPU.Held(), got)
		}
	}
}

// yieldAt widens the acquire window as stress jitter does: a yield after
// rq_lockp() was read and before the lock is taken.
type yieldAt struct{}

func (yieldAt) Yield(_ *spinlock.CPU, pt spinlock.Point) {
	if pt == spinlock.PointAcquire {
		runtime.Gosched()
	}
}

func (yieldAt) Spin(*spinlock.CPU, *spinlock.Lock) bool { return false }

// siblingsUnderFlips has two goroutines lock their own runqueue over and
// over (and, under its lock, check that they hold rq_lockp() and count
// how many hold a lock of the core while core scheduling is on) while a
// third flips the core off and on. It returns what went wrong, if
// anything.
func siblingsUnderFlips(bug bool) string {
	rqs := coreRQs(1) // core {0,1}
	sibs := rqs[0].Core.Siblings
	var warned atomic.Int32
	var inside atomic.Int32
	var bad atomic.Value
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var mine []check.Invariant
			c := warnCtx(i, nil, bug, &mine)
			c.CPU.Hooks = yieldAt{}
			r := rqs[i]
			for k := 0; k < 5000 && bad.Load() == nil; k++ {
				r.Lock(c)
				if !r.LockP().HeldBy(c.CPU) {
					bad.Store("a CPU holds a lock for its rq that is not rq_lockp()")
				}
				if r.CoreEnabled() {
					if n := inside.Add(1); n != 1 {
						bad.Store("two siblings hold a lock of the core with core scheduling on")
					}
					inside.Add(-1)
				}
				r.Unlock(c)
			}
			warned.Add(int32(len(mine)))
		}(i)
	}
	done := make(chan struct{})
	flips := 0
	go func() {
		defer close(done)
		var mine []check.Invariant
		c := warnCtx(2, nil, false, &mine)
		for on := false; !stop.Load(); on = !on {
			SchedCoreLock(c, sibs)
			CoreFlipLocked(c, sibs, on)
			SchedCoreUnlock(c, sibs)
			flips++
			runtime.Gosched()
		}
	}()
	wg.Wait()
	stop.Store(true)
	<-done
	if v := bad.Load(); v != nil {
		return v.(string)
	}
	if n := warned.Load(); n != 0 {
		return "invariant 50 reported"
	}
	if flips == 0 {
		return "no flip happened"
	}
	return ""
}

// Two SMT siblings never hold "different" rq locks while core scheduling
// is on, whatever the flips; --bug core-lock-flip (no re-validation) is
// caught by the same test.
func TestCoreFlipSiblingsAgree(t *testing.T) {
	if msg := siblingsUnderFlips(false); msg != "" {
		t.Fatal(msg)
	}
	for try := 0; ; try++ {
		if msg := siblingsUnderFlips(true); msg != "" {
			t.Logf("--bug core-lock-flip: %s", msg)
			break
		}
		if try == 5 {
			t.Fatal("--bug core-lock-flip: six runs, no sibling caught on a stale lock")
		}
	}
}

// rq_order_less orders core-wide locks by the core first: cores {0,2}
// and {1,3}, double_rq_lock(1,2) takes core 0's lock (cpu2's) first.
// --bug core-lock-cpu-order takes cpu1's (core 1) first: with
// double_rq_lock(0,3) taking core 0 then core 1, AB-BA, which the
// validator reports.
func TestCoreLockOrder(t *testing.T) {
	for _, bug := range []bool{false, true} {
		var inv []spinlock.Inversion
		dep := spinlock.NewValidator(func(i spinlock.Inversion) { inv = append(inv, i) })
		rqs := coreRQs(2)
		var got []check.Invariant
		c := warnCtx(0, dep, false, &got)
		if bug {
			c.Bugs = c.Bugs.With(bugs.CoreLockCPUOrder)
		}
		for _, p := range [][2]int{{0, 3}, {1, 2}, {3, 0}, {2, 1}} {
			DoubleLock(c, rqs[p[0]], rqs[p[1]])
			if got := c.CPU.HeldLocks(); !bug && !strings.HasPrefix(got, "rq->lock#0 ") {
				t.Fatalf("double_rq_lock(%d,%d) took %s, want core 0's lock first", p[0], p[1], got)
			}
			DoubleUnlock(c, rqs[p[0]], rqs[p[1]])
		}
		if bug != (len(inv) > 0) {
			t.Fatalf("bug %v: validator reported %v", bug, inv)
		}
	}
}

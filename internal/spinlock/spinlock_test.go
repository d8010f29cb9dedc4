package spinlock

import (
	"strings"
	"testing"
)

func newLocks() (pi, rq0, rq1, wait, blocked1, blocked2 *Lock) {
	pi, rq0, rq1, wait, blocked1, blocked2 = &Lock{}, &Lock{}, &Lock{}, &Lock{}, &Lock{}, &Lock{}
	pi.Init(ClassPiLock, 1)
	rq0.Init(ClassRQ, 0)
	rq1.Init(ClassRQ, 1)
	wait.Init(ClassWaitLock, 0)
	blocked1.Init(ClassBlockedLock, 1)
	blocked2.Init(ClassBlockedLock, 2)
	return
}

// The documented order is accepted and recorded.
func TestLockOrderAcceptsProtocolOrder(t *testing.T) {
	var got []Inversion
	v := NewValidator(func(i Inversion) { got = append(got, i) })
	c := NewCPU(0)
	c.Dep = v
	pi, rq0, rq1, wait, b1, b2 := newLocks()
	pi.Lock(c)
	rq0.Lock(c)
	wait.Lock(c)
	b1.Lock(c)
	b2.LockNested(c) // mutex unlock: owner's, then the waiter's
	sh := &Lock{}
	sh.Init(ClassShard, 0)
	sh.Lock(c) // a SHARED_RUNQ push from activate_task: innermost
	sh.Unlock(c)
	b2.Unlock(c)
	b1.Unlock(c)
	wait.Unlock(c)
	rq1.Lock(c) // double_rq_lock: lower CPU first
	rq1.Unlock(c)
	rq0.Unlock(c)
	pi.Unlock(c)
	if len(got) != 0 {
		t.Fatalf("protocol order reported: %v", got)
	}
	if !v.Seen(ClassPiLock, ClassRQ) || !v.Seen(ClassWaitLock, ClassBlockedLock) {
		t.Fatalf("edges not recorded: %v", v.Edges())
	}
}

// Every kind of inversion is reported the first time it happens, before
// any deadlock.
func TestLockOrderReportsInversions(t *testing.T) {
	cases := []struct {
		name  string
		do    func(c *CPU, pi, rq0, rq1, wait, b1, b2 *Lock)
		cause string
	}{
		{"rq then pi_lock", func(c *CPU, pi, rq0, rq1, wait, b1, b2 *Lock) { rq0.Lock(c); pi.Lock(c); pi.Unlock(c); rq0.Unlock(c) }, "order is pi_lock"},
		{"blocked then wait_lock", func(c *CPU, pi, rq0, rq1, wait, b1, b2 *Lock) { b1.Lock(c); wait.Lock(c); wait.Unlock(c); b1.Unlock(c) }, "order is pi_lock"},
		{"wait_lock then rq", func(c *CPU, pi, rq0, rq1, wait, b1, b2 *Lock) {
			wait.Lock(c)
			rq0.Lock(c)
			rq0.Unlock(c)
			wait.Unlock(c)
		}, "order is pi_lock"},
		{"rq higher CPU first", func(c *CPU, pi, rq0, rq1, wait, b1, b2 *Lock) { rq1.Lock(c); rq0.Lock(c); rq0.Unlock(c); rq1.Unlock(c) }, "(core, CPU) order"},
		{"nested blocked_lock without annotation", func(c *CPU, pi, rq0, rq1, wait, b1, b2 *Lock) { b1.Lock(c); b2.Lock(c); b2.Unlock(c); b1.Unlock(c) }, "nested blocked_lock"},
		{"two pi_locks", func(c *CPU, pi, rq0, rq1, wait, b1, b2 *Lock) {
			p2 := &Lock{}
			p2.Init(ClassPiLock, 2)
			pi.Lock(c)
			p2.Lock(c)
			p2.Unlock(c)
			pi.Unlock(c)
		}, "never nested"},
		{"rq lock under a shared_runq shard lock", func(c *CPU, pi, rq0, rq1, wait, b1, b2 *Lock) {
			sh := &Lock{}
			sh.Init(ClassShard, 0)
			sh.Lock(c)
			rq0.Lock(c)
			rq0.Unlock(c)
			sh.Unlock(c)
		}, "leaf"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []Inversion
			v := NewValidator(func(i Inversion) { got = append(got, i) })
			c := NewCPU(3)
			c.Dep = v
			pi, rq0, rq1, wait, b1, b2 := newLocks()
			tc.do(c, pi, rq0, rq1, wait, b1, b2)
			if len(got) != 1 {
				t.Fatalf("got %d reports, want 1: %v", len(got), got)
			}
			if !strings.Contains(got[0].Reason, tc.cause) || got[0].CPU != 3 {
				t.Fatalf("report %q, want reason containing %q on cpu 3", got[0], tc.cause)
			}
			// the same inversion again is not reported twice
			tc.do(c, pi, rq0, rq1, wait, b1, b2)
			if len(got) != 1 {
				t.Fatalf("repeated inversion reported again: %v", got)
			}
		})
	}
}

func TestAssertHeld(t *testing.T) {
	c0, c1 := NewCPU(0), NewCPU(1)
	var l Lock
	l.Init(ClassRQ, 0)
	l.Lock(c0)
	l.AssertHeld(c0)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("AssertHeld by another CPU did not panic")
			}
		}()
		l.AssertHeld(c1)
	}()
	l.Unlock(c0)
}

// Nested blocked_locks keyed by role: the unlock hand-off nests a
// waiter's inside the owner's; a nesting the other way round (v21's
// wound, current waiting and the owner's lock nested) is an AB-BA with
// it and is reported, whichever comes first. A waiter nesting another
// waiter's (v21's die) is not an inversion.
func TestBlockedLockRoleInversion(t *testing.T) {
	for _, ownerFirst := range []bool{true, false} {
		var got []Inversion
		v := NewValidator(func(i Inversion) { got = append(got, i) })
		c := NewCPU(0)
		c.Dep = v
		_, _, _, wait, b1, b2 := newLocks()
		nest := func(outer, inner Role) {
			wait.Lock(c)
			b1.Lock(c)
			b2.LockNestedRoles(c, outer, inner)
			b2.Unlock(c)
			b1.Unlock(c)
			wait.Unlock(c)
		}
		first, second := [2]Role{RoleOwner, RoleWaiter}, [2]Role{RoleWaiter, RoleOwner}
		if !ownerFirst {
			first, second = second, first
		}
		nest(first[0], first[1])
		nest(first[0], first[1])
		nest(RoleWaiter, RoleWaiter)
		if len(got) != 0 {
			t.Fatalf("one order and waiter-in-waiter: %v", got)
		}
		nest(second[0], second[1])
		if len(got) != 1 || !strings.Contains(got[0].Reason, "AB-BA between two tasks' blocked_locks") {
			t.Fatalf("ownerFirst=%v: the reverse nesting gave %v, want one AB-BA report", ownerFirst, got)
		}
	}
}

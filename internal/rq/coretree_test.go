package rq

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/task"
)

func treeNames(ts []*task.Task) string {
	var b strings.Builder
	for i, p := range ts {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p.Name)
	}
	return b.String()
}

// With keys that do not move, core_tree is a red-black tree whose order
// is (cookie, vruntime), ties in insertion order, through a long random
// run of links and unlinks; the shape check must hold after every step.
func TestCoreTreeRandom(t *testing.T) {
	rqs := coreRQs(1)
	r := rqs[0]
	var got []check.Invariant
	c := warnCtx(0, nil, false, &got)
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 200
	ts := make([]*task.Task, n)
	for i := range ts {
		ts[i] = task.New(i+1, fmt.Sprintf("t%d", i), 2, 0)
		ts[i].CoreCookie = uint64(1 + rng.IntN(3))
		ts[i].SE.Vruntime = int64(rng.IntN(50))
	}
	var linked []*task.Task // in insertion order
	for step := 0; step < 20000; step++ {
		p := ts[rng.IntN(n)]
		if p.CoreNode.Linked {
			r.coreTreeErase(c, p)
			linked = slices.DeleteFunc(linked, func(q *task.Task) bool { return q == p })
		} else {
			r.coreTreeAdd(c, p)
			linked = append(linked, p)
		}
		if bad := r.coreTreeShape(); bad != "" {
			t.Fatalf("step %d: %s", step, bad)
		}
		want := slices.Clone(linked)
		slices.SortStableFunc(want, func(a, b *task.Task) int {
			if a.CoreCookie != b.CoreCookie {
				return int(a.CoreCookie) - int(b.CoreCookie)
			}
			return int(a.SE.Vruntime - b.SE.Vruntime)
		})
		if g, w := treeNames(r.CoreTree()), treeNames(want); g != w {
			t.Fatalf("step %d: in order %s, want %s", step, g, w)
		}
		for ck := uint64(0); ck <= 4; ck++ {
			var first *task.Task
			for _, q := range want {
				if q.CoreCookie == ck {
					first = q
					break
				}
			}
			r.Lock(c)
			f := r.SchedCoreFind(c, ck)
			r.Unlock(c)
			if f != first {
				t.Fatalf("step %d: sched_core_find(%d) = %v, want %v", step, ck, f, first)
			}
		}
	}
	if len(got) != 0 {
		t.Fatalf("warnings: %v", got)
	}
}

// rb_add places a task by comparing it with the keys the tasks on its way
// down have now: a key that moved after its task was linked is not
// re-sorted, and sched_core_find returns the leftmost task of the cookie
// even when another one now has the smaller vruntime (the kernel's
// behaviour; the running task's vruntime grows while it stays linked).
// Where a later task lands depends on the shape: here A is the root's
// left child, so C compares with B (the root) only and goes right of it.
func TestCoreTreeStaleOrder(t *testing.T) {
	r := coreRQs(1)[0]
	var got []check.Invariant
	c := warnCtx(0, nil, false, &got)
	mk := func(id int, name string, v int64) *task.Task {
		p := task.New(id, name, 2, 0)
		p.CoreCookie = 1
		p.SE.Vruntime = v
		return p
	}
	a, b := mk(1, "A", 10), mk(2, "B", 20)
	r.coreTreeAdd(c, b)
	r.coreTreeAdd(c, a)
	a.SE.Vruntime = 100 // A ran: its key moved, its place did not
	cc := mk(3, "C", 30)
	r.coreTreeAdd(c, cc)
	if g := treeNames(r.CoreTree()); g != "A B C" {
		t.Fatalf("in order %s, want A B C", g)
	}
	r.Lock(c)
	f := r.SchedCoreFind(c, 1)
	n := r.SchedCoreNext(c, f, 1)
	r.Unlock(c)
	if f != a || n != b {
		t.Fatalf("sched_core_find = %v, next %v; want A, then B (A leftmost by its key at insertion)", f, n)
	}
	if len(got) != 0 {
		t.Fatalf("warnings: %v", got)
	}
}

// sched_core_find skips a throttled SCHED_DEADLINE task (still on_rq and
// linked) and returns the next task of the cookie.
func TestCoreTreeSkipsThrottled(t *testing.T) {
	r := coreRQs(1)[0]
	var got []check.Invariant
	c := warnCtx(0, nil, false, &got)
	d := task.New(1, "D", 2, 0)
	d.SetDL(task.DLParams{Runtime: 1, Deadline: 10, Period: 10})
	d.CoreCookie = 1
	f := task.New(2, "F", 2, 0)
	f.CoreCookie = 1
	r.coreTreeAdd(c, d)
	r.coreTreeAdd(c, f)
	r.Lock(c)
	defer r.Unlock(c)
	if p := r.SchedCoreFind(c, 1); p != d {
		t.Fatalf("sched_core_find = %v, want D (DL ranks above fair)", p)
	}
	d.SE.DL.Throttled = true
	if p := r.SchedCoreFind(c, 1); p != f {
		t.Fatalf("sched_core_find = %v with D throttled, want F", p)
	}
}

// Invariant 62's audit half can fail: a queued task with a cookie
// missing from core_tree, or a linked task that is not queued here, is
// reported; enqueue_task and dequeue_task keep it clean, and so do the
// model's flips (emptied off, refilled on).
func TestCoreTreeAudit(t *testing.T) {
	rqs := coreRQs(1)
	r := rqs[0]
	var got []check.Invariant
	c := warnCtx(0, nil, false, &got)
	a := task.New(1, "A", 2, 0)
	a.CoreCookie = 1
	u := task.New(2, "U", 2, 0)
	r.Lock(c)
	r.Enqueue(c, a, EnqueueWakeup)
	r.Enqueue(c, u, EnqueueWakeup)
	if bad := r.AuditCoreTree(); bad != "" || treeNames(r.CoreTree()) != "A" {
		t.Fatalf("after enqueue: tree %s, audit %q", treeNames(r.CoreTree()), bad)
	}
	r.coreTreeErase(c, a)
	if bad := r.AuditCoreTree(); !strings.Contains(bad, "missing from its core_tree") {
		t.Fatalf("A unlinked but queued: audit %q", bad)
	}
	r.coreTreeAdd(c, a)
	r.Dequeue(c, a, DequeueSpecial|DequeueSleep)
	if bad := r.AuditCoreTree(); bad != "" || len(r.CoreTree()) != 0 {
		t.Fatalf("after dequeue: tree %s, audit %q", treeNames(r.CoreTree()), bad)
	}
	r.coreTreeAdd(c, a)
	if bad := r.AuditCoreTree(); !strings.Contains(bad, "not a queued") {
		t.Fatalf("A linked but not queued: audit %q", bad)
	}
	r.coreTreeErase(c, a)
	r.Enqueue(c, a, EnqueueWakeup)
	r.Unlock(c)
	sibs := r.Core.Siblings
	// A flip finds every core_tree empty (sched_core_assert_empty): no
	// cookie outlives sched_core_count. With A still tagged it WARNs.
	SchedCoreLock(c, sibs)
	CoreFlipLocked(c, sibs, false)
	SchedCoreUnlock(c, sibs)
	if len(got) != 1 || got[0] != check.InvCoreTree {
		t.Fatalf("flip with A tagged: warnings %v, want one of invariant 62", got)
	}
	got = nil
	SchedCoreLock(c, sibs)
	CoreFlipLocked(c, sibs, true)
	SchedCoreUnlock(c, sibs)
	got = nil
	r.Lock(c)
	r.SchedCoreUpdateCookie(c, a, 0) // prctl: A's cookie goes away
	r.Unlock(c)
	for _, on := range []bool{false, true} {
		SchedCoreLock(c, sibs)
		CoreFlipLocked(c, sibs, on)
		SchedCoreUnlock(c, sibs)
		if bad := r.AuditCoreTree(); bad != "" || len(r.CoreTree()) != 0 {
			t.Fatalf("after flip %v: tree %s, audit %q", on, treeNames(r.CoreTree()), bad)
		}
	}
	if len(got) != 0 {
		t.Fatalf("warnings: %v", got)
	}
}

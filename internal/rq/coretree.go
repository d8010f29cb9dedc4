// This file is rq->core_tree (CONFIG_SCHED_CORE, kernel/sched/core.c):
// a red-black tree of the runqueue's queued tasks that carry a cookie,
// ordered by __sched_core_less (cookie ascending, then priority, highest
// first), with sched_core_enqueue/sched_core_dequeue linking and
// unlinking tasks and sched_core_find/sched_core_next reading it.
//
// The order is the one rb_add gave each task when it was linked: rb_add
// compares the new task with the tasks on its way down as they are at
// that moment, and nothing re-sorts the tree when a key moves later (the
// running task's vruntime grows while it stays linked). So the leftmost
// task of a cookie is the best one as of the insertions, not necessarily
// by the current keys, and which one it is depends on the tree's shape:
// the model keeps a real red-black tree, with the kernel's insertion and
// erase rebalancing (lib/rbtree.c's cases), so that it finds what the
// kernel finds.

package rq

import (
	"fmt"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/task"
)

// coreKey is the key __sched_core_less compares after the cookie: the
// class rank (__task_prio) and the deadline or vruntime within it.
func (r *RQ) coreKey(p *task.Task) task.CoreKey {
	k := task.CoreKey{Prio: r.TaskPrio(p)}
	switch k.Prio {
	case task.DLPrio:
		k.Value = p.SE.DL.Deadline
	case task.DefaultPrio:
		k.Value = p.SE.Vruntime
	}
	return k
}

// schedCoreLess is __sched_core_less(a, b): by cookie, then "prio flipped,
// so high prio is leftmost": a goes left of b if b has lower priority
// (prio_less(b, a, in_fi) with in_fi = the core's forced-idle count).
// Both tasks are on this runqueue, so the fair compare is by vruntime
// alone (one min_vruntime_fi on each side).
func (r *RQ) schedCoreLess(c *percpu.Ctx, a, b *task.Task) bool {
	if a.CoreCookie != b.CoreCookie {
		return a.CoreCookie < b.CoreCookie
	}
	return PrioLess(c, b, r, a, r, r.Core.Leader.Core.ForceidleCount > 0)
}

// schedCoreEnqueue is sched_core_enqueue(rq, p): a delayed task is left
// out (no core_task_seq bump either); otherwise bump core_task_seq and,
// if p carries a cookie, link it into core_tree (rb_add). The caller
// checked sched_core_enabled(rq).
func (r *RQ) schedCoreEnqueue(c *percpu.Ctx, p *task.Task) {
	if p.SE.Delayed {
		return
	}
	r.Core.Leader.Core.TaskSeq++
	if p.CoreCookie == 0 {
		return
	}
	r.coreTreeAdd(c, p)
}

// schedCoreDequeue is sched_core_dequeue(rq, p, flags) up to the
// forced-idle resched (coreDequeue): a delayed task is not linked and is
// left alone; otherwise bump core_task_seq and unlink p if it is linked.
// It reports whether it did anything (the caller then does the resched
// test).
func (r *RQ) schedCoreDequeue(c *percpu.Ctx, p *task.Task) bool {
	if p.SE.Delayed {
		return false
	}
	r.Core.Leader.Core.TaskSeq++
	if p.CoreNode.Linked {
		r.coreTreeErase(c, p)
	}
	return true
}

// coreEnqueueAfterClass is enqueue_task's last step, after the class
// enqueue: sched_core_enqueue if sched_core_enabled(rq), then the
// model's check that p was linked with the key the class enqueue left
// it (invariant 62). --bug core-tree-stale-key linked it before the class
// enqueue instead (coreEnqueueBeforeClass).
func (r *RQ) coreEnqueueAfterClass(c *percpu.Ctx, p *task.Task) {
	if !r.CoreEnabled() {
		return
	}
	if !c.Bug(bugs.CoreTreeStaleKey) {
		r.schedCoreEnqueue(c, p)
	}
	if n := &p.CoreNode; n.Linked && n.Key != r.coreKey(p) {
		k := r.coreKey(p)
		c.Warn(check.InvCoreTree, p.ID, p.String(), "enqueue_task on cpu%d: %v (cookie %d) is in core_tree with key %s, but the class enqueue left it %s: linked before its class placed it, sched_core_find ranks it by a stale key", r.CPU, p, p.CoreCookie, fmtCoreKey(n.Key), fmtCoreKey(k))
	}
}

// coreEnqueueBeforeClass is --bug core-tree-stale-key (design note K7):
// the historical enqueue_task that called sched_core_enqueue before the
// class's enqueue_task, so a waking task was linked into core_tree with
// the vruntime (or deadline) it had before place_entity (or the DL
// replenishment) moved it. A delayed task being requeued is still
// sched_delayed at that point and is not linked at all (the historical
// code predates DELAY_DEQUEUE; this is the consequence of its order
// today).
func (r *RQ) coreEnqueueBeforeClass(c *percpu.Ctx, p *task.Task) {
	if r.CoreEnabled() && c.Bug(bugs.CoreTreeStaleKey) {
		r.schedCoreEnqueue(c, p)
	}
}

func fmtCoreKey(k task.CoreKey) string {
	switch k.Prio {
	case task.DLPrio:
		return fmt.Sprintf("(deadline %d)", k.Value)
	case task.DefaultPrio:
		return fmt.Sprintf("(vruntime %d)", k.Value)
	}
	return fmt.Sprintf("(prio %d)", k.Prio)
}

// SchedCoreFind is sched_core_find(rq, cookie): the leftmost task of
// core_tree with the cookie (rb_find_first) that is not throttled, else
// the next ones (sched_core_next); nil when there is none (the callers
// substitute the idle task, as the reference's do).
func (r *RQ) SchedCoreFind(c *percpu.Ctx, cookie uint64) *task.Task {
	r.AssertHeld(c)
	var match *task.Task
	for n := r.Core.tree; n != nil; {
		switch {
		case cookie < n.CoreCookie:
			n = n.CoreNode.Left
		case cookie > n.CoreCookie:
			n = n.CoreNode.Right
		default:
			match = n
			n = n.CoreNode.Left
		}
	}
	if match == nil || !schedTaskIsThrottled(match) {
		return match
	}
	return r.SchedCoreNext(c, match, cookie)
}

// SchedCoreNext is sched_core_next(p, cookie): the next task of core_tree
// in order while it carries the cookie, skipping throttled ones; nil at
// the end of the cookie's run.
func (r *RQ) SchedCoreNext(c *percpu.Ctx, p *task.Task, cookie uint64) *task.Task {
	r.AssertHeld(c)
	for {
		p = rbNext(p)
		if p == nil || p.CoreCookie != cookie {
			return nil
		}
		if !schedTaskIsThrottled(p) {
			return p
		}
	}
}

// schedTaskIsThrottled is sched_task_is_throttled(p, cpu): a
// SCHED_DEADLINE task out of budget (task_is_throttled_dl); the model has
// no RT or fair bandwidth throttling.
func schedTaskIsThrottled(p *task.Task) bool {
	return p.SE.Policy.DL() && p.SE.DL.Throttled
}

// coreTreeAdd is rb_add(&p->core_node, &rq->core_tree, rb_sched_core_less):
// walk down from the root, left where p is less than the node, right
// otherwise (ties go right), link p as a red leaf and rebalance. The key
// p carries now is recorded for invariant 62.
func (r *RQ) coreTreeAdd(c *percpu.Ctx, p *task.Task) {
	n := &p.CoreNode
	if n.Linked {
		c.Warn(check.InvCoreTree, p.ID, p.String(), "sched_core_enqueue on cpu%d: %v already linked in cpu%d's core_tree", r.CPU, p, n.TreeCPU)
		return
	}
	var parent *task.Task
	left := false
	for x := r.Core.tree; x != nil; {
		parent = x
		if left = r.schedCoreLess(c, p, x); left {
			x = x.CoreNode.Left
		} else {
			x = x.CoreNode.Right
		}
	}
	*n = task.CoreNode{Parent: parent, Red: true, Linked: true, TreeCPU: r.CPU, Key: r.coreKey(p)}
	switch {
	case parent == nil:
		r.Core.tree = p
	case left:
		parent.CoreNode.Left = p
	default:
		parent.CoreNode.Right = p
	}
	r.rbInsertColor(p)
}

// rbLeftRotate turns x's right child y into x's parent.
func (r *RQ) rbLeftRotate(x *task.Task) {
	y := x.CoreNode.Right
	x.CoreNode.Right = y.CoreNode.Left
	if b := y.CoreNode.Left; b != nil {
		b.CoreNode.Parent = x
	}
	r.rbReplaceChild(x, y)
	y.CoreNode.Left = x
	x.CoreNode.Parent = y
}

// rbRightRotate turns x's left child y into x's parent.
func (r *RQ) rbRightRotate(x *task.Task) {
	y := x.CoreNode.Left
	x.CoreNode.Left = y.CoreNode.Right
	if b := y.CoreNode.Right; b != nil {
		b.CoreNode.Parent = x
	}
	r.rbReplaceChild(x, y)
	y.CoreNode.Right = x
	x.CoreNode.Parent = y
}

// rbReplaceChild puts n where old hangs from old's parent (or the root).
func (r *RQ) rbReplaceChild(old, n *task.Task) {
	p := old.CoreNode.Parent
	if n != nil {
		n.CoreNode.Parent = p
	}
	switch {
	case p == nil:
		r.Core.tree = n
	case p.CoreNode.Left == old:
		p.CoreNode.Left = n
	default:
		p.CoreNode.Right = n
	}
}

func rbRed(n *task.Task) bool { return n != nil && n.CoreNode.Red }

// rbInsertColor restores the red-black properties after linking red
// leaf n: a red uncle recolours and moves the problem two levels up; a
// black one ends it with one or two rotations at the grandparent.
func (r *RQ) rbInsertColor(n *task.Task) {
	for {
		p := n.CoreNode.Parent
		if p == nil {
			n.CoreNode.Red = false
			return
		}
		if !p.CoreNode.Red {
			return
		}
		g := p.CoreNode.Parent // p is red, so not the root
		if p == g.CoreNode.Left {
			if u := g.CoreNode.Right; rbRed(u) {
				p.CoreNode.Red, u.CoreNode.Red, g.CoreNode.Red = false, false, true
				n = g
				continue
			}
			if n == p.CoreNode.Right {
				r.rbLeftRotate(p)
				n, p = p, n
			}
			p.CoreNode.Red, g.CoreNode.Red = false, true
			r.rbRightRotate(g)
			return
		}
		if u := g.CoreNode.Left; rbRed(u) {
			p.CoreNode.Red, u.CoreNode.Red, g.CoreNode.Red = false, false, true
			n = g
			continue
		}
		if n == p.CoreNode.Left {
			r.rbRightRotate(p)
			n, p = p, n
		}
		p.CoreNode.Red, g.CoreNode.Red = false, true
		r.rbLeftRotate(g)
		return
	}
}

// coreTreeErase is rb_erase(&p->core_node, &rq->core_tree) and
// RB_CLEAR_NODE: a node with two children is replaced by its successor
// (the leftmost of its right subtree), which takes its place and colour;
// if a black node left the tree without a red child to take its colour,
// the tree is rebalanced from where it left.
func (r *RQ) coreTreeErase(c *percpu.Ctx, p *task.Task) {
	n := &p.CoreNode
	if !n.Linked || n.TreeCPU != r.CPU {
		c.Warn(check.InvCoreTree, p.ID, p.String(), "sched_core_dequeue on cpu%d: %v not in this core_tree (linked %v, cpu%d)", r.CPU, p, n.Linked, n.TreeCPU)
		return
	}
	var child, parent *task.Task
	removedBlack := false
	switch {
	case n.Left == nil || n.Right == nil:
		child = n.Left
		if child == nil {
			child = n.Right
		}
		parent = n.Parent
		removedBlack = !n.Red
		r.rbReplaceChild(p, child)
	default:
		s := n.Right
		for s.CoreNode.Left != nil {
			s = s.CoreNode.Left
		}
		removedBlack = !s.CoreNode.Red
		child = s.CoreNode.Right
		if s.CoreNode.Parent == p {
			parent = s
		} else {
			parent = s.CoreNode.Parent
			r.rbReplaceChild(s, child)
			s.CoreNode.Right = n.Right
			n.Right.CoreNode.Parent = s
		}
		r.rbReplaceChild(p, s)
		s.CoreNode.Left = n.Left
		n.Left.CoreNode.Parent = s
		s.CoreNode.Red = n.Red
	}
	*n = task.CoreNode{}
	if !removedBlack {
		return
	}
	if rbRed(child) {
		child.CoreNode.Red = false
		return
	}
	r.rbEraseColor(child, parent)
}

// rbEraseColor rebalances after a black node left: x (possibly nil) under
// parent is one black short. A red sibling is rotated up first; a black
// sibling with black children turns red and moves the shortage up (or
// ends it at a red parent); otherwise one or two rotations end it.
func (r *RQ) rbEraseColor(x, parent *task.Task) {
	for parent != nil && !rbRed(x) {
		if x == parent.CoreNode.Left {
			s := parent.CoreNode.Right
			if rbRed(s) {
				s.CoreNode.Red, parent.CoreNode.Red = false, true
				r.rbLeftRotate(parent)
				s = parent.CoreNode.Right
			}
			if !rbRed(s.CoreNode.Left) && !rbRed(s.CoreNode.Right) {
				s.CoreNode.Red = true
				x, parent = parent, parent.CoreNode.Parent
				continue
			}
			if !rbRed(s.CoreNode.Right) {
				s.CoreNode.Left.CoreNode.Red, s.CoreNode.Red = false, true
				r.rbRightRotate(s)
				s = parent.CoreNode.Right
			}
			s.CoreNode.Red, parent.CoreNode.Red = parent.CoreNode.Red, false
			s.CoreNode.Right.CoreNode.Red = false
			r.rbLeftRotate(parent)
			x = r.Core.tree
			break
		}
		s := parent.CoreNode.Left
		if rbRed(s) {
			s.CoreNode.Red, parent.CoreNode.Red = false, true
			r.rbRightRotate(parent)
			s = parent.CoreNode.Left
		}
		if !rbRed(s.CoreNode.Left) && !rbRed(s.CoreNode.Right) {
			s.CoreNode.Red = true
			x, parent = parent, parent.CoreNode.Parent
			continue
		}
		if !rbRed(s.CoreNode.Left) {
			s.CoreNode.Right.CoreNode.Red, s.CoreNode.Red = false, true
			r.rbLeftRotate(s)
			s = parent.CoreNode.Left
		}
		s.CoreNode.Red, parent.CoreNode.Red = parent.CoreNode.Red, false
		s.CoreNode.Left.CoreNode.Red = false
		r.rbRightRotate(parent)
		x = r.Core.tree
		break
	}
	if x != nil {
		x.CoreNode.Red = false
	}
}

// rbNext is rb_next(): the in-order successor.
func rbNext(n *task.Task) *task.Task {
	if x := n.CoreNode.Right; x != nil {
		for x.CoreNode.Left != nil {
			x = x.CoreNode.Left
		}
		return x
	}
	for p := n.CoreNode.Parent; p != nil; n, p = p, p.CoreNode.Parent {
		if n == p.CoreNode.Left {
			return p
		}
	}
	return nil
}

// CoreTree lists core_tree in order (tests, reports).
func (r *RQ) CoreTree() []*task.Task {
	var out []*task.Task
	var walk func(n *task.Task)
	walk = func(n *task.Task) {
		if n == nil {
			return
		}
		walk(n.CoreNode.Left)
		out = append(out, n)
		walk(n.CoreNode.Right)
	}
	walk(r.Core.tree)
	return out
}

// AuditCoreTree is invariant 62's stop-the-world half for this runqueue:
// core_tree is a red-black tree (parent links, no red node with a red
// child, one black height, a black root) in cookie order, whose nodes are
// exactly the queued, non-delayed tasks of this runqueue with a cookie
// while core scheduling is enabled here, and empty while it is not. It
// returns the first problem found, or "".
func (r *RQ) AuditCoreTree() string {
	if bad := r.coreTreeShape(); bad != "" {
		return bad
	}
	in := map[*task.Task]bool{}
	for _, p := range r.CoreTree() {
		in[p] = true
		if !r.CoreEnabled() {
			return fmt.Sprintf("cpu%d's core_tree holds %v while core scheduling is off here", r.CPU, p)
		}
		if !p.SE.Queued || p.SE.QueueCPU != r.CPU || p.CoreCookie == 0 || p.SE.Delayed {
			return fmt.Sprintf("cpu%d's core_tree holds %v (queued %v on cpu%d, cookie %d, delayed %v): not a queued, non-delayed task with a cookie here", r.CPU, p, p.SE.Queued, p.SE.QueueCPU, p.CoreCookie, p.SE.Delayed)
		}
	}
	if !r.CoreEnabled() {
		return ""
	}
	for _, q := range [4][]*task.Task{r.dl, r.dlThrottled, r.rt, r.fair} {
		for _, p := range q {
			if p.CoreCookie != 0 && !p.SE.Delayed && !in[p] {
				return fmt.Sprintf("%v (cookie %d) is queued on cpu%d but missing from its core_tree", p, p.CoreCookie, r.CPU)
			}
		}
	}
	return ""
}

// coreTreeShape checks that core_tree is a red-black tree in cookie
// order whose nodes say they are linked here; it returns the first
// problem, or "".
func (r *RQ) coreTreeShape() string {
	if r.Core.tree != nil && (r.Core.tree.CoreNode.Parent != nil || r.Core.tree.CoreNode.Red) {
		return fmt.Sprintf("cpu%d's core_tree root %v has a parent or is red", r.CPU, r.Core.tree)
	}
	var bad string
	var check func(n *task.Task) int
	check = func(n *task.Task) int {
		if n == nil || bad != "" {
			return 1
		}
		cn := &n.CoreNode
		for _, ch := range [2]*task.Task{cn.Left, cn.Right} {
			if ch != nil && ch.CoreNode.Parent != n {
				bad = fmt.Sprintf("cpu%d's core_tree: %v's child %v points to parent %v", r.CPU, n, ch, ch.CoreNode.Parent)
			}
			if ch != nil && cn.Red && ch.CoreNode.Red {
				bad = fmt.Sprintf("cpu%d's core_tree: red %v has red child %v", r.CPU, n, ch)
			}
		}
		if !cn.Linked || cn.TreeCPU != r.CPU {
			bad = fmt.Sprintf("cpu%d's core_tree holds %v, marked linked %v in cpu%d's", r.CPU, n, cn.Linked, cn.TreeCPU)
		}
		lh, rh := check(cn.Left), check(cn.Right)
		if lh != rh && bad == "" {
			bad = fmt.Sprintf("cpu%d's core_tree: black heights %d and %d under %v", r.CPU, lh, rh, n)
		}
		if !cn.Red {
			lh++
		}
		return lh
	}
	check(r.Core.tree)
	if bad != "" {
		return bad
	}
	var prev *task.Task
	for _, p := range r.CoreTree() {
		if prev != nil && prev.CoreCookie > p.CoreCookie {
			return fmt.Sprintf("cpu%d's core_tree out of cookie order: %v (cookie %d) before %v (cookie %d)", r.CPU, prev, prev.CoreCookie, p, p.CoreCookie)
		}
		prev = p
	}
	return ""
}

// SchedCoreUpdateCookie is sched_core_update_cookie()'s middle, under
// task_rq_lock: a linked task is unlinked (sched_core_dequeue with
// DEQUEUE_SAVE), takes the cookie, and a queued task with a cookie is
// linked again (sched_core_enqueue; a delayed one is not). While core
// scheduling is off here the model only sets the cookie: its trees are
// not kept then (the kernel has no cookies while it is off) and the flip
// on refills them.
func (r *RQ) SchedCoreUpdateCookie(c *percpu.Ctx, p *task.Task, cookie uint64) {
	r.AssertHeld(c)
	on := r.CoreEnabled()
	if on && p.CoreNode.Linked {
		r.schedCoreDequeue(c, p)
	}
	p.CoreCookie = cookie
	if on && cookie != 0 && p.SE.Queued && p.SE.QueueCPU == r.CPU {
		r.schedCoreEnqueue(c, p)
	}
}

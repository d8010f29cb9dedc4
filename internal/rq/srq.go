// This file is the shared runqueue of David Vernet's SHARED_RUNQ series
// (v2-v4, 2023, never merged) with K Prateek Nayak's follow-ups: one FIFO
// of runnable fair tasks per LLC, split into shards, that a CPU about to
// go idle pops from (docs/kernel-map.md, "SHARED_RUNQ").

package rq

import (
	"fmt"
	"sync/atomic"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
)

// Hook placements (--shared-runq-hooks).
const (
	// SRQHooksV2: push at the end of enqueue_task_fair on a wakeup that
	// is not a migration; remove when picked and at dequeue.
	SRQHooksV2 = 2
	// SRQHooksV3: push in __enqueue_entity (every insert into the tree,
	// put_prev of a preempted donor too), remove in __dequeue_entity
	// (dequeue and set_next_entity); pull at the top of newidle balance.
	SRQHooksV3 = 3
	// SRQHooksV4: v3's, plus no push onto an empty runqueue, dequeue
	// kept going by the force-dequeue key while a disable drains, and the
	// pull rechecks affinity and reports an RT arrival (-1).
	SRQHooksV4 = 4
)

// SRQBailout is one of the bailouts of Prateek's diff (design note
// section 5), each a separate knob (--shared-runq-bailouts).
type SRQBailout uint8

// The bailouts.
const (
	BailOverload      SRQBailout = 1 << iota // (a) no pull unless rd->overload
	BailAvgIdle                              // (b) no pull (no newidle) if avg_idle < max_newidle_lb_cost
	BailShardOverload                        // (c) no pop from a shard whose overload flag is clear
	BailTTWUPending                          // (d) after a failed pull, stop if a wakeup is pending here
	BailDiscard                              // (e) pop drops non-migratable heads, looping until ttwu_pending
	BailChargeCost                           // (f) the pull's cost counts in max_newidle_lb_cost
	BailSkipLLC                              // (g) newidle load balance skips domains <= LLC
	NumBailouts       = 7
)

// BailoutNames are the knob names, in bit order.
var BailoutNames = [NumBailouts]string{"overload", "avg-idle", "shard-overload", "ttwu-pending", "discard-head", "charge-cost", "skip-llc"}

// ParseBailouts parses a comma-separated list of bailout names ("none":
// no bailout; "all": every one).
func ParseBailouts(names []string) (SRQBailout, error) {
	var b SRQBailout
	for _, n := range names {
		switch n {
		case "none", "":
			continue
		case "all":
			b = 1<<NumBailouts - 1
			continue
		}
		found := false
		for i, k := range BailoutNames {
			if k == n {
				b |= 1 << i
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("unknown shared_runq bailout %q (known: %v, none, all)", n, BailoutNames)
		}
	}
	return b, nil
}

// String lists the bailouts by name.
func (b SRQBailout) String() string {
	s := ""
	for i, k := range BailoutNames {
		if b&(1<<i) != 0 {
			if s != "" {
				s += ","
			}
			s += k
		}
	}
	if s == "" {
		return "none"
	}
	return s
}

// SRQConfig is the machine-wide SHARED_RUNQ state.
type SRQConfig struct {
	// Hooks, ShardSize, Bailouts and PullCost are set before the
	// machine starts and read-only after.
	Hooks     int
	ShardSize int // SHARED_RUNQ_SHARD_SZ (v3: 6)
	Bailouts  SRQBailout
	// Enabled is sched_feat(SHARED_RUNQ): read without a lock on every
	// hook (a static branch in the kernel), flipped at run time by the
	// stress toggle.
	Enabled atomic.Bool
	// ForceDequeue is v4's __shared_runq_force_dequeue static key: on
	// while a disable drains, so that dequeues keep unlinking.
	ForceDequeue atomic.Bool
}

// SharedRunq is one LLC's struct shared_runq: its shards. Immutable once
// built (a domain rebuild builds new ones and drains the old).
type SharedRunq struct {
	LLC    int
	Shards []*Shard
}

// Shard is struct shared_runq_shard.
type Shard struct {
	lock spinlock.Lock
	head task.SRQList
	// list is the FIFO of linked tasks: guarded by lock.
	list []*task.Task
	// n is the list length, written under lock: the series'
	// list_empty() peek before taking the lock reads it without one.
	n atomic.Int32
	// Overload is Prateek's per-shard flag (3/3): some runqueue of the
	// shard may have more than one runnable task. READ_ONCE/WRITE_ONCE.
	Overload atomic.Bool
}

// NewSharedRunq builds an LLC's shared runqueue of nshards shards; id0
// numbers the shards' locks machine-wide.
func NewSharedRunq(llc, nshards, id0 int) *SharedRunq {
	q := &SharedRunq{LLC: llc}
	for i := 0; i < nshards; i++ {
		s := &Shard{}
		s.lock.Init(spinlock.ClassShard, id0+i)
		s.head = task.SRQList{ID: id0 + i, Owner: s}
		q.Shards = append(q.Shards, s)
	}
	return q
}

// ID is the shard's machine-wide number.
func (s *Shard) ID() int { return s.head.ID }

// Peek returns the linked tasks (audits, with every CPU parked).
func (s *Shard) Peek() []*task.Task { return s.list }

// Len is the lockless length (list_empty peek).
func (s *Shard) Len() int { return int(s.n.Load()) }

// List returns the list head a linked task's node names.
func (s *Shard) List() *task.SRQList { return &s.head }

// ShardOf returns the shard a node's list head belongs to.
func ShardOf(l *task.SRQList) *Shard { return l.Owner.(*Shard) }

// SRQ returns cfs_rq->shared_runq and cfs_rq->shard; the rq lock must be
// held.
func (r *RQ) SRQ(c *percpu.Ctx) (*SharedRunq, *Shard) {
	r.AssertHeld(c)
	return r.srq, r.shard
}

// SetSRQ is shared_runq_reassign_domains() for one runqueue: the rq lock
// must be held (or the machine not started).
func (r *RQ) SetSRQ(q *SharedRunq, s *Shard) { r.srq, r.shard = q, s }

// PeekSRQ returns the runqueue's shard without the lock (audits).
func (r *RQ) PeekSRQ() (*SharedRunq, *Shard) { return r.srq, r.shard }

// srqEnqueue runs the enqueue-side hooks after p joined the class queue:
// add_nr_running's overload flags, then the push where the version puts
// it. nrBefore is nr_running before this enqueue.
func (r *RQ) srqEnqueue(c *percpu.Ctx, p *task.Task, flags int, nrBefore int32) {
	cfg := r.SRQCfg
	if nrBefore < 2 && nrBefore+1 >= 2 {
		// add_nr_running(): (3/3) the shard's overload flag next to
		// set_rd_overloaded (Enqueue), READ_ONCE-tested first.
		if s := r.shard; s != nil && !s.Overload.Load() {
			s.Overload.Store(true)
		}
	}
	if !p.SE.Policy.Fair() {
		return // only fair tasks are linked on a shard
	}
	switch cfg.Hooks {
	case SRQHooksV2:
		if flags&EnqueueWakeup == 0 || flags&EnqueueMigrated != 0 {
			return
		}
	default:
		if p == r.donor {
			return // enqueue of cfs_rq->curr: no __enqueue_entity
		}
		if cfg.Hooks == SRQHooksV4 && nrBefore < 1 {
			return // v4: it goes to an empty rq and runs next anyway
		}
	}
	r.srqPush(c, p, flags&EnqueueWakeup != 0)
}

// srqPush is shared_runq_push_task(): link p at the tail of this
// runqueue's shard. The rq lock is held (p is queued here). waking: the
// enqueue of a try_to_wake_up (ttwu_do_activate, or ttwu_runnable's
// requeue of a delayed sleeper), before ttwu_do_wakeup clears is_blocked.
func (r *RQ) srqPush(c *percpu.Ctx, p *task.Task, waking bool) {
	if !r.SRQCfg.Enabled.Load() || p.NrCPUsAllowed == 1 {
		return
	}
	// proxysim's rule (docs/protocol.md rule 20): a mutex-blocked donor
	// (is_blocked, under this rq lock: the model's blocked_on needs its
	// blocked_lock, which activate_task may hold here) is never linked.
	// A waking task still carries the is_blocked of its sleep (every
	// sleeper sets it; ttwu_do_wakeup clears it after the enqueue, under
	// this lock): for it the test is task_is_blocked()'s READ_ONCE of
	// blocked_on, as the load balancer reads it. Testing is_blocked there
	// refused every wakeup, and v2, which pushes only wakeups, never
	// pushed once new tasks stopped passing ENQUEUE_WAKEUP.
	blocked := p.IsBlocked()
	if waking {
		blocked = p.IsBlockedOnOnce()
	}
	if c.Proxy && blocked && !c.Bug(bugs.SRQPullsDonor) {
		return
	}
	s := r.shard
	if s == nil {
		return
	}
	s.lock.Lock(c.CPU)
	if p.SRQ.Shard() != nil {
		s.lock.Unlock(c.CPU)
		c.Warn(check.InvOneQueue, p.ID, p.String(), "shared_runq push: %v already linked on shard %d (push on cpu%d)", p, p.SRQ.Shard().ID, r.CPU)
		return
	}
	s.list = append(s.list, p)
	p.SRQ.Link(&s.head)
	s.n.Store(int32(len(s.list)))
	s.lock.Unlock(c.CPU)
	c.Inc(stats.SRQPushes)
}

// srqRemove is shared_runq_dequeue_task(): unlink p if it is linked. The
// lock of p's runqueue is held. The lockless peek of the node, then the
// recheck under the shard lock (Aaron Lu's v2 review: another CPU's pop
// may have taken it meanwhile).
//
// The kernel locks rq->cfs.shard; the model locks the shard the node was
// linked on (recorded at the push): a slice cannot be unlinked from a
// list whose lock the remover does not hold, and the two differ only
// between a domain rebuild's reassignment and its drain (design note B9).
func (r *RQ) srqRemove(c *percpu.Ctx, p *task.Task) {
	cfg := r.SRQCfg
	if !cfg.Enabled.Load() && !(cfg.Hooks == SRQHooksV4 && cfg.ForceDequeue.Load()) {
		return
	}
	l := p.SRQ.Shard()
	if l == nil {
		return
	}
	s := ShardOf(l)
	s.lock.Lock(c.CPU)
	if p.SRQ.Shard() == l {
		s.unlink(p)
		c.Inc(stats.SRQRemoves)
	}
	s.lock.Unlock(c.CPU)
}

// unlink takes p off s's list; s's lock is held and p is on it.
func (s *Shard) unlink(p *task.Task) {
	for i, t := range s.list {
		if t == p {
			copy(s.list[i:], s.list[i+1:])
			s.list[len(s.list)-1] = nil
			s.list = s.list[:len(s.list)-1]
			break
		}
	}
	p.SRQ.Unlink()
	s.n.Store(int32(len(s.list)))
}

// Pop is shared_runq_pop_task() for the CPU cpu: the head of s if it is
// allowed there (is_cpu_allowed, read without p's locks: the published
// mask), else nothing, leaving the head in place (v3), or, with
// discard, dropping heads that are not allowed until one is or stop()
// says a wakeup is pending (Prateek's loop, bailout (e)). The caller
// holds its own rq lock only.
func Pop(c *percpu.Ctx, s *Shard, cpu int, discard bool, stop func() bool) *task.Task {
	if s.n.Load() == 0 {
		return nil
	}
	s.lock.Lock(c.CPU)
	var p *task.Task
	for len(s.list) > 0 {
		h := s.list[0]
		if h.AllowedOnce(cpu) {
			p = h
			s.unlink(h)
			break
		}
		if !discard {
			c.Inc(stats.SRQHeadNotAllowed)
			break
		}
		s.unlink(h)
		c.Inc(stats.SRQDiscarded)
		if stop != nil && stop() {
			break
		}
	}
	s.lock.Unlock(c.CPU)
	return p
}

// Drain is __shared_runq_drain() for one shard: unlink every node.
// Called from the toggle and the domain rebuild, in process context. The
// series as posted takes the shard lock there with plain raw_spin_lock,
// IRQs on (irqsOn: --bug srq-drain-irqs-on), while enqueues from hard-IRQ
// wake-ups take it too: the inconsistency of design note B8. The fixed
// form is raw_spin_lock_irq. Returns how many it unlinked.
func Drain(c *percpu.Ctx, s *Shard, irqsOn bool) int {
	if irqsOn {
		s.lock.Lock(c.CPU)
	} else {
		s.lock.LockIrq(c.CPU)
	}
	n := len(s.list)
	for _, p := range s.list {
		p.SRQ.Unlink()
	}
	clear(s.list)
	s.list = s.list[:0]
	s.n.Store(0)
	if irqsOn {
		s.lock.Unlock(c.CPU)
	} else {
		s.lock.UnlockIrq(c.CPU)
	}
	return n
}

package task

import "sync/atomic"

// SRQList is the head of one shared_runq shard's list (SHARED_RUNQ,
// internal/rq/srq.go), as far as a task's node needs to name it. Owner is
// the shard (set once at creation).
type SRQList struct {
	ID    int
	Owner any
}

// SRQNode is p->shared_runq_node. The kernel's node is self-linked when
// the task is on no shard, and both !list_empty(&p->shared_runq_node) and
// the shard list are read without the shard lock before it is taken (the
// series' racy peeks). Here the node records the shard list it is linked
// on: written only under that shard's lock, read without it (an atomic,
// as the kernel's peek is a lockless read).
type SRQNode struct {
	on atomic.Pointer[SRQList]
}

// Shard returns the shard list the node is linked on, or nil (lockless
// peek; recheck under the shard lock).
func (n *SRQNode) Shard() *SRQList { return n.on.Load() }

// Link records that the node is on l; the caller holds l's lock.
func (n *SRQNode) Link(l *SRQList) { n.on.Store(l) }

// Unlink is list_del_init: the node is on no shard. The caller holds the
// lock of the shard it was on.
func (n *SRQNode) Unlink() { n.on.Store(nil) }

// PublishMask publishes cpus_ptr for lockless readers (the shared_runq
// pop's is_cpu_allowed, which reads p->cpus_ptr under the shard lock
// only): CPUsMask, or the one CPU a migrate-disabled task was switched
// out on (migrate_disable_switch points cpus_ptr at cpumask_of(cpu)).
// Called by the writers of CPUsMask and PinnedCPU, which hold the rq lock
// (and PiLock, except migrate_disable_switch, as in the kernel).
func (p *Task) PublishMask() {
	m := p.CPUsMask
	if p.PinnedCPU >= 0 {
		// cpus_ptr of a migrate-disabled task that was switched out
		// points at its CPU alone (migrate_disable_switch).
		m = MaskOf(p.PinnedCPU)
	}
	p.maskOnce.Store(&m)
}

// SetPinnedCPU sets the CPU a migrate-disabled task is pinned to (-1:
// none) and publishes cpus_ptr for lockless readers. The caller holds the
// task's rq lock (and PiLock where the kernel's writer does).
func (p *Task) SetPinnedCPU(cpu int) {
	p.PinnedCPU = cpu
	p.PublishMask()
}

// AllowedOnce reads the published mask without a lock (READ_ONCE of
// cpus_ptr): may be stale; callers recheck under task_rq_lock.
func (p *Task) AllowedOnce(cpu int) bool {
	m := p.maskOnce.Load()
	if m == nil {
		return true
	}
	return m.Has(cpu)
}

// This file is the EEVDF part of kernel/sched/fair.c: avg_vruntime and
// its incremental sums, entity_eligible, update_deadline, pick_eevdf,
// place_entity, update_entity_lag, the slice protection of RUN_TO_PARITY,
// delayed dequeue (DELAY_DEQUEUE, DELAY_ZERO) and the sched features
// that steer them.

package rq

import (
	"fmt"
	"strings"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// Features is the fair class's part of sysctl_sched_features
// (kernel/sched/features.h), by the kernel's names.
type Features uint32

// The modelled sched features (SCHED_FEAT names).
const (
	FeatPlaceLag             Features = 1 << iota // PLACE_LAG: keep lag across sleep and migration
	FeatPlaceDeadlineInitial                      // PLACE_DEADLINE_INITIAL: a new task starts with half a slice
	FeatPlaceRelDeadline                          // PLACE_REL_DEADLINE: keep the deadline relative across a non-sleep dequeue
	FeatRunToParity                               // RUN_TO_PARITY: protect curr up to its deadline (shortest queued slice)
	FeatPreemptShort                              // PREEMPT_SHORT: a waking task with a shorter slice cancels curr's protection
	FeatDelayDequeue                              // DELAY_DEQUEUE: a sleeper that is not eligible stays queued until picked
	FeatDelayZero                                 // DELAY_ZERO: a delayed entity leaves (or is requeued) with lag clipped to 0
)

// FeatureNames lists the modelled features in features.h order with
// their kernel defaults (all true).
var FeatureNames = []struct {
	Name    string
	F       Features
	Default bool
}{
	{"PLACE_LAG", FeatPlaceLag, true},
	{"PLACE_DEADLINE_INITIAL", FeatPlaceDeadlineInitial, true},
	{"PLACE_REL_DEADLINE", FeatPlaceRelDeadline, true},
	{"RUN_TO_PARITY", FeatRunToParity, true},
	{"PREEMPT_SHORT", FeatPreemptShort, true},
	{"DELAY_DEQUEUE", FeatDelayDequeue, true},
	{"DELAY_ZERO", FeatDelayZero, true},
}

// DefaultFeatures are the kernel's defaults.
func DefaultFeatures() Features {
	var f Features
	for _, n := range FeatureNames {
		if n.Default {
			f |= n.F
		}
	}
	return f
}

// Set applies one /sys/kernel/debug/sched/features write: NAME sets it,
// NO_NAME clears it. It reports whether the name is known.
func (f *Features) Set(name string) bool {
	on := true
	if n, ok := strings.CutPrefix(name, "NO_"); ok {
		name, on = n, false
	}
	for _, n := range FeatureNames {
		if n.Name == name {
			if on {
				*f |= n.F
			} else {
				*f &^= n.F
			}
			return true
		}
	}
	return false
}

// String is the features file's format: every name, NO_ when clear.
func (f Features) String() string {
	var b strings.Builder
	for i, n := range FeatureNames {
		if i > 0 {
			b.WriteByte(' ')
		}
		if f&n.F == 0 {
			b.WriteString("NO_")
		}
		b.WriteString(n.Name)
	}
	return b.String()
}

func (r *RQ) feat(f Features) bool { return r.Feat&f != 0 }

// Fair tunables (virtual ns).
const (
	// NormalizedBaseSlice is normalized_sysctl_sched_base_slice (0.75 ms);
	// FairSlice (sysctl_sched_base_slice) is it scaled by 1+ilog2(8) for
	// the default machine.
	NormalizedBaseSlice = 750_000
	// TickNsec is TICK_NSEC at HZ=1000 (update_entity_lag's lag limit).
	TickNsec = 1_000_000
)

// calcDeltaFair is calc_delta_fair(delta, se): delta scaled by
// NICE_0_LOAD / weight.
func calcDeltaFair(delta int64, se *task.SchedEntity) int64 {
	if se.Weight == NiceZeroWeight {
		return delta
	}
	return delta * NiceZeroWeight / se.Weight
}

// entityKey is entity_key(): v_i - v0, v0 = min_vruntime.
func (r *RQ) entityKey(se *task.SchedEntity) int64 { return se.Vruntime - r.minVruntime }

// avgVruntimeAdd is __enqueue_entity's accounting: the entity joins the
// tree (everything queued but cfs_rq->curr) and its weighted key joins
// avg_vruntime. The insertion order breaks deadline ties.
func (r *RQ) avgVruntimeAdd(se *task.SchedEntity) {
	r.treeSeq++
	se.TreeSeq = r.treeSeq
	r.avgVruntime += r.entityKey(se) * se.Weight
	r.avgLoad += se.Weight
}

// avgVruntimeSub is __dequeue_entity's accounting.
func (r *RQ) avgVruntimeSub(se *task.SchedEntity) {
	r.avgVruntime -= r.entityKey(se) * se.Weight
	r.avgLoad -= se.Weight
}

// currOnRQ is "cfs_rq->curr && cfs_rq->curr->on_rq".
func (r *RQ) currOnRQ() *task.SchedEntity {
	if c := r.cfsCurr; c != nil && c.SE.Queued {
		return &c.SE
	}
	return nil
}

// avgSums returns avg_vruntime and avg_load with curr added when it is
// on the runqueue (curr is kept out of the tree).
func (r *RQ) avgSums() (avg, load int64) {
	avg, load = r.avgVruntime, r.avgLoad
	if se := r.currOnRQ(); se != nil {
		avg += r.entityKey(se) * se.Weight
		load += se.Weight
	}
	return avg, load
}

// AvgVruntime is avg_vruntime(): V, the load-weighted average vruntime of
// the queued entities (delayed ones included), rounded towards -inf so
// that an entity at V is eligible. The rq lock is held (or every CPU is
// parked, for the audit).
func (r *RQ) AvgVruntime() int64 {
	avg, load := r.avgSums()
	if load != 0 {
		if avg < 0 {
			avg -= load - 1
		}
		avg /= load
	}
	return r.minVruntime + avg
}

// vruntimeEligible is vruntime_eligible(): lag >= 0, i.e. v <= V, tested
// without the division.
func (r *RQ) vruntimeEligible(v int64) bool {
	avg, load := r.avgSums()
	return avg >= (v-r.minVruntime)*load
}

// EntityEligible is entity_eligible().
func (r *RQ) EntityEligible(p *task.Task) bool { return r.vruntimeEligible(p.SE.Vruntime) }

// updateEntityLag is update_entity_lag(): vlag = V - v, clamped to the
// larger of two slices and a tick (in the entity's virtual time).
func (r *RQ) updateEntityLag(se *task.SchedEntity) {
	vlag := r.AvgVruntime() - se.Vruntime
	limit := calcDeltaFair(max(2*se.Slice, TickNsec), se)
	se.Vlag = min(max(vlag, -limit), limit)
}

// updateMinVruntime is update_min_vruntime(): min_vruntime follows the
// smallest vruntime of curr (if queued) and the tree, never backwards;
// avg_vruntime is rebased as v0 moves.
func (r *RQ) updateMinVruntime() {
	v := r.minVruntime
	curr := r.currOnRQ()
	if curr != nil {
		v = curr.Vruntime
	}
	first := true
	for _, t := range r.fair {
		if &t.SE == curr {
			continue
		}
		if first && curr == nil {
			v = t.SE.Vruntime
		} else if t.SE.Vruntime < v {
			v = t.SE.Vruntime
		}
		first = false
	}
	if d := v - r.minVruntime; d > 0 {
		r.avgVruntime -= r.avgLoad * d
		r.minVruntime = v
	}
}

// updateDeadline is update_deadline(): once vruntime reaches the
// deadline, a new request of one slice starts. Reports whether it did.
func (r *RQ) updateDeadline(se *task.SchedEntity) bool {
	if se.Vruntime-se.Deadline < 0 {
		return false
	}
	se.Slice = FairSlice
	se.Deadline = se.Vruntime + calcDeltaFair(se.Slice, se)
	return true
}

// minSlice is cfs_rq_min_slice(): every fair entity of the model has the
// base slice (no sched_attr runtime), so it is the base slice.
func (r *RQ) minSlice() int64 {
	if len(r.fair) == 0 {
		return -1
	}
	m := int64(FairSlice)
	for _, t := range r.fair {
		m = min(m, t.SE.Slice)
	}
	return m
}

// setProtectSlice is set_protect_slice().
func (r *RQ) setProtectSlice(se *task.SchedEntity) {
	slice := int64(NormalizedBaseSlice)
	vprot := se.Deadline
	if r.feat(FeatRunToParity) {
		slice = r.minSlice()
	}
	slice = min(slice, se.Slice)
	if slice != se.Slice {
		vprot = min(vprot, se.Vruntime+calcDeltaFair(slice, se))
	}
	se.Vprot = vprot
}

// updateProtectSlice is update_protect_slice().
func (r *RQ) updateProtectSlice(se *task.SchedEntity) {
	se.Vprot = min(se.Vprot, se.Vruntime+calcDeltaFair(r.minSlice(), se))
}

// protectSlice is protect_slice().
func protectSlice(se *task.SchedEntity) bool { return se.Vprot-se.Vruntime > 0 }

// cancelProtectSlice is cancel_protect_slice().
func cancelProtectSlice(se *task.SchedEntity) {
	if protectSlice(se) {
		se.Vprot = se.Vruntime
	}
}

// How pickEEVDF decided (for the counters).
const (
	pickOnly      = iota // one entity queued
	pickProtected        // curr kept: its slice is protected (RUN_TO_PARITY)
	pickLeftmost         // the earliest deadline was eligible (the kernel's fast path)
	pickSearched         // the earliest deadline was not eligible: the heap search
)

// pickEEVDF is __pick_eevdf(cfs_rq, protect): the eligible entity with the
// earliest virtual deadline, curr kept while its slice is protected. The
// kernel searches an rbtree ordered by deadline and augmented with the
// subtree's minimum vruntime; its result is the leftmost eligible entity
// in (deadline, insertion) order, which this scan finds too
// (docs/kernel-map.md).
func (r *RQ) pickEEVDF(protect bool) (*task.Task, int) {
	if len(r.fair) == 0 {
		return nil, pickOnly
	}
	if len(r.fair) == 1 {
		return r.fair[0], pickOnly // curr if queued, else the one tree entity
	}
	curr := r.cfsCurr
	if curr != nil && (!curr.SE.Queued || !r.EntityEligible(curr)) {
		curr = nil
	}
	if curr != nil && protect && protectSlice(&curr.SE) {
		return curr, pickProtected
	}
	avg, load := r.avgSums()
	var best, first *task.Task
	before := func(a, b *task.Task) bool {
		return a.SE.Deadline-b.SE.Deadline < 0 || a.SE.Deadline == b.SE.Deadline && a.SE.TreeSeq < b.SE.TreeSeq
	}
	for _, t := range r.fair {
		if t == r.cfsCurr {
			continue
		}
		if first == nil || before(t, first) {
			first = t
		}
		if best != nil && !before(t, best) {
			continue
		}
		if avg >= (t.SE.Vruntime-r.minVruntime)*load {
			best = t
		}
	}
	how := pickLeftmost
	if best != first {
		how = pickSearched
	}
	if best == nil || (curr != nil && curr.SE.Deadline-best.SE.Deadline < 0) {
		best = curr
	}
	return best, how
}

// placeEntity is place_entity(): v = V - lag, the lag inflated by
// (W + w_i) / W so that the lag after joining is the lag at the last
// dequeue (PLACE_LAG); deadline = v + r_i/w_i, half a slice for a new
// task (PLACE_DEADLINE_INITIAL), or the kept relative deadline.
func (r *RQ) placeEntity(se *task.SchedEntity, flags int) {
	v := r.AvgVruntime()
	se.Slice = FairSlice
	vslice := calcDeltaFair(se.Slice, se)
	var lag int64
	if r.feat(FeatPlaceLag) && r.nrQueuedFair() > 0 && se.Vlag != 0 {
		lag = se.Vlag
		load := r.avgLoad
		if c := r.currOnRQ(); c != nil {
			load += c.Weight
		}
		lag *= load + se.Weight
		if load == 0 {
			load = 1
		}
		lag /= load // div_s64 truncates towards zero
	}
	se.Vruntime = v - lag
	if se.RelDeadline {
		se.Deadline += se.Vruntime
		se.RelDeadline = false
		return
	}
	if r.feat(FeatPlaceDeadlineInitial) && flags&EnqueueInitial != 0 {
		vslice /= 2
	}
	se.Deadline = se.Vruntime + vslice
}

// nrQueuedFair is cfs_rq->nr_queued: fair entities on the runqueue,
// curr and delayed ones included.
func (r *RQ) nrQueuedFair() int { return len(r.fair) }

// enqueueFair is enqueue_task_fair() / enqueue_entity() for p, not yet in
// the fair queue (or ENQUEUE_DELAYED: requeue_delayed_entity).
func (r *RQ) enqueueFair(c *percpu.Ctx, p *task.Task, flags int) {
	se := &p.SE
	isCurr := p == r.cfsCurr
	if isCurr {
		r.placeEntity(se, flags)
	}
	r.updateCurrFair(c)
	if !isCurr {
		r.placeEntity(se, flags)
	}
	if !isCurr {
		r.avgVruntimeAdd(se)
	}
	r.fair = append(r.fair, p)
}

// requeueDelayedEntity is requeue_delayed_entity(): a delayed entity that
// is woken competes again; with DELAY_ZERO positive lag is dropped and it
// is placed anew. Reports whether p was delayed.
func (r *RQ) requeueDelayedEntity(c *percpu.Ctx, p *task.Task) bool {
	se := &p.SE
	if !se.Delayed || !se.Queued {
		c.Warn(check.InvOneQueue, p.ID, p.String(), "requeue_delayed_entity: %v not delayed or not queued (delayed=%v queued=%v)", p, se.Delayed, se.Queued)
		return false
	}
	if r.feat(FeatDelayZero) {
		r.updateEntityLag(se)
		if se.Vlag > 0 {
			isCurr := p == r.cfsCurr
			if !isCurr {
				r.avgVruntimeSub(se)
			}
			remove(&r.fair, p)
			se.Vlag = 0
			r.placeEntity(se, 0)
			if !isCurr {
				r.avgVruntimeAdd(se)
			}
			r.fair = append(r.fair, p)
		}
	}
	p.SetSchedDelayed(false)
	c.Inc(stats.DelayedRequeues)
	c.Emit(trace.EvDelayed, int32(p.ID), int32(r.CPU), 0, 0)
	return true
}

// dequeueFair is dequeue_entity() for p: false when DELAY_DEQUEUE keeps a
// sleeper that is not eligible queued (sched_delayed). special is
// DEQUEUE_SPECIAL (TASK_DEAD and the other special states).
func (r *RQ) dequeueFair(c *percpu.Ctx, p *task.Task, flags int) bool {
	se := &p.SE
	sleep := flags&DequeueSleep != 0
	r.updateCurrFair(c)
	if flags&DequeueDelayed != 0 {
		if !se.Delayed {
			c.Warn(check.InvOneQueue, p.ID, p.String(), "dequeue_entity: DEQUEUE_DELAYED of %v, which is not delayed", p)
		}
	} else {
		delay := sleep && flags&DequeueSpecial == 0
		if delay && se.Delayed {
			c.Warn(check.InvOneQueue, p.ID, p.String(), "dequeue_entity: sleep dequeue of %v, already delayed", p)
		}
		if r.feat(FeatDelayDequeue) && delay && !r.EntityEligible(p) {
			if mutantDelayedOutOfAvg() && p != r.cfsCurr {
				r.avgVruntimeSub(se) // the mistake: a delayed entity taken out of V
			}
			p.SetSchedDelayed(true)
			c.Inc(stats.DelayedDequeues)
			c.Emit(trace.EvDelayed, int32(p.ID), int32(r.CPU), 1, 0)
			return false
		}
	}
	r.updateEntityLag(se)
	if r.feat(FeatPlaceRelDeadline) && !sleep {
		se.Deadline -= se.Vruntime
		se.RelDeadline = true
	}
	if p != r.cfsCurr {
		r.avgVruntimeSub(se)
	}
	if !remove(&r.fair, p) {
		c.Warn(check.InvOneQueue, p.ID, p.String(), "dequeue_task: %v marked queued on cpu%d but missing from its class queue", p, r.CPU)
		return true
	}
	se.Queued = false
	if flags&(DequeueSave|DequeueMove) != DequeueSave {
		r.updateMinVruntime()
	}
	if flags&DequeueDelayed != 0 {
		p.SetSchedDelayed(false)
		if r.feat(FeatDelayZero) && se.Vlag > 0 {
			se.Vlag = 0
		}
	}
	return true
}

// updateCurrFair is update_curr() of the fair class: charge the donor
// (cfs_rq->curr) the time since the last update; reports whether the
// donor should be rescheduled (its request is done, or its protected
// slice is over, with others queued). Only the owning CPU advances the
// clock, so a remote caller charges nothing.
func (r *RQ) updateCurrFair(c *percpu.Ctx) bool {
	if c.ID != r.CPU {
		return false
	}
	return r.updateCurr(c, false)
}

// setNextEntity is set_next_entity(): p becomes cfs_rq->curr and leaves
// the tree; its slice protection starts.
func (r *RQ) setNextEntity(p *task.Task) {
	se := &p.SE
	if se.Queued {
		r.avgVruntimeSub(se)
		r.cfsCurr = p
		r.setProtectSlice(se)
		return
	}
	r.cfsCurr = p
}

// putPrevEntity is put_prev_entity(): curr goes back into the tree if it
// is still queued.
func (r *RQ) putPrevEntity(p *task.Task) {
	r.cfsCurr = nil
	if p.SE.Queued {
		r.avgVruntimeAdd(&p.SE)
	}
}

// PutPrevDonor is put_prev_task() of rq.donor around a change of its
// class or priority (__sched_setscheduler): its fair entity stops being
// cfs_rq->curr. The rq lock is held.
func (r *RQ) PutPrevDonor(c *percpu.Ctx) {
	r.AssertHeld(c)
	if d := r.donor; d == r.cfsCurr && d != nil {
		r.putPrevEntity(d)
	}
}

// SetNextDonor is the matching set_next_task().
func (r *RQ) SetNextDonor(c *percpu.Ctx) {
	r.AssertHeld(c)
	if d := r.donor; d != r.Idle && d.SE.Policy.Fair() {
		r.setNextEntity(d)
	}
}

// finishDelayedBlock is __block_task() after the delayed dequeue of a
// picked delayed entity: on_rq goes to 0 last.
func (r *RQ) finishDelayedBlock(c *percpu.Ctx, p *task.Task) {
	if p.ContributesToLoad {
		r.NrUninterruptible++
	}
	c.Inc(stats.DelayedBlocks)
	c.Emit(trace.EvBlock, int32(p.ID), int32(p.State()), 2, 0)
	p.SetOnRQ(task.OnRQNone)
}

// pickTaskFair is pick_task_fair(): pick_eevdf, and a delayed pick is
// dequeued for good (dequeue_entities with DEQUEUE_DELAYED, then
// __block_task) and the pick repeated. nil if no fair task is queued.
func (r *RQ) pickTaskFair(c *percpu.Ctx) *task.Task {
	for {
		if r.cfsCurr != nil && r.cfsCurr.SE.Queued {
			r.updateCurrFair(c)
		}
		p, how := r.pickEEVDF(true)
		if p == nil {
			return nil
		}
		switch how {
		case pickProtected:
			c.Inc(stats.EEVDFPicksProtected)
		case pickSearched:
			c.Inc(stats.EEVDFPicksSearched)
		}
		if !p.SE.Delayed {
			return p
		}
		r.dequeueTask(c, p, DequeueSleep|DequeueDelayed)
		r.finishDelayedBlock(c, p)
	}
}

// LagSum returns the sum over the queued fair entities (curr and delayed
// ones included) of w_i * (V - v_i), and the total weight W: the EEVDF
// books balance when the sum lies in (-W, 0] (V is rounded down). For
// the audit, with every CPU parked.
func (r *RQ) LagSum() (sum, load int64) {
	v := r.AvgVruntime()
	for _, t := range r.fair {
		sum += t.SE.Weight * (v - t.SE.Vruntime)
		load += t.SE.Weight
	}
	return sum, load
}

// LagBooks checks the incremental avg_vruntime / avg_load against a
// recount (audit): "" if they agree.
func (r *RQ) LagBooks() string {
	var avg, load int64
	for _, t := range r.fair {
		if t == r.cfsCurr {
			continue
		}
		avg += r.entityKey(&t.SE) * t.SE.Weight
		load += t.SE.Weight
	}
	if avg != r.avgVruntime || load != r.avgLoad {
		return fmt.Sprintf("avg_vruntime %d avg_load %d, recount %d and %d", r.avgVruntime, r.avgLoad, avg, load)
	}
	return ""
}

// This file is the charge ledger (invariant 37): an accounting of every
// interval a runqueue charged, checked at each change of rq->curr or
// rq->donor, so that the first wrong charge is reported where it happens
// rather than as unfairness seconds later. No kernel file: the rule is
// that of the 6.17 update_curr split (protocol decision 13).

package cpu

import (
	"fmt"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/task"
)

// seSnap is what the ledger remembers of a task at a checkpoint.
type seSnap struct {
	sum, donated, vruntime, slice int64
	weight                        int64
	policy                        task.Policy
	queueSeq                      uint64
	dlRuntime, dlDeadline         int64 // SCHED_DEADLINE: budget left, absolute deadline
	dlInTree                      bool
}

func snap(p *task.Task) seSnap {
	se := &p.SE
	return seSnap{sum: se.SumExecRuntime, donated: se.DonatedRuntime, vruntime: se.Vruntime, slice: se.Slice,
		weight: se.Weight, policy: se.Policy, queueSeq: se.QueueSeq,
		dlRuntime: se.DL.Runtime, dlDeadline: se.DL.Deadline, dlInTree: se.DL.OnDLRQ}
}

// ledger is one runqueue's charge ledger. Its fields are protected by the
// rq lock (Checkpoint runs with it held).
type ledger struct {
	m            *Machine
	valid        bool
	curr, donor  *task.Task
	start        int64 // execStart at the baseline
	owed         int64 // the DL donor's deferred budget charge at the baseline (rq.PeekDLOwed)
	cSnap, dSnap seSnap
	reported     bool
}

// Checkpoint implements rq.Ledger: before a change, check the interval
// since the baseline; after it (rebase), take a new baseline.
func (l *ledger) Checkpoint(c *percpu.Ctx, r *rq.RQ, rebase bool) {
	if !rebase && l.valid && !l.reported {
		l.check(c, r)
	}
	l.curr, l.donor = r.Curr(), r.PeekDonor()
	l.start = r.PeekExecStart()
	l.owed = r.PeekDLOwed()
	l.valid = ours(r, l.curr) && ours(r, l.donor)
	if l.valid {
		l.cSnap, l.dSnap = snap(l.curr), snap(l.donor)
	}
}

// ours reports whether p's class state is ours to read: it is curr here,
// or queued on this runqueue (task_cpu here), so the rq lock we hold
// guards it.
func ours(r *rq.RQ, p *task.Task) bool {
	return p == r.Idle || p == r.Curr() || (p.CPU() == r.CPU && p.OnRQ() == task.OnRQQueued)
}

// check verifies the charges of the interval since the baseline, during
// which curr and donor were l.curr and l.donor (every change of either
// passes through a checkpoint).
func (l *ledger) check(c *percpu.Ctx, r *rq.RQ) {
	charged := r.PeekExecStart() - l.start
	if charged <= 0 {
		return
	}
	C, D := l.curr, l.donor
	fail := func(p *task.Task, format string, args ...any) {
		l.reported = true
		l.m.Report(c, check.InvChargeLedger, p, fmt.Sprintf("cpu%d charged %d ns with curr %v and donor %v: ", r.CPU, charged, C, D)+fmt.Sprintf(format, args...))
	}
	// Execution time goes to the execution context.
	if C != r.Idle {
		if got := C.SE.SumExecRuntime - l.cSnap.sum; got != charged {
			fail(C, "curr's sum_exec_runtime grew by %d ns, not by the %d ns it executed", got, charged)
			return
		}
	}
	if D == r.Idle || !ours(r, D) || (C != r.Idle && !ours(r, C)) {
		return
	}
	dNow := snap(D)
	if dNow.policy != l.dSnap.policy || dNow.weight != l.dSnap.weight {
		return // sched_setscheduler in between: a new rate
	}
	if D != C {
		// A proxied interval: class time and donated time to the donor,
		// nothing of either to the execution context, no execution time
		// to the donor.
		cNow := snap(C)
		if got := dNow.donated - l.dSnap.donated; got != charged {
			fail(D, "the donor's donated time grew by %d ns, not by the %d ns donated", got, charged)
			return
		}
		if got := dNow.sum - l.dSnap.sum; got != 0 {
			fail(D, "the donor's sum_exec_runtime grew by %d ns while %v executed", got, C)
			return
		}
		if C != r.Idle && cNow.policy == l.cSnap.policy && cNow.queueSeq == l.cSnap.queueSeq {
			if got := cNow.donated - l.cSnap.donated; got != 0 {
				fail(C, "the execution context's donated time grew by %d ns", got)
				return
			}
			if dr := cNow.dlRuntime - l.cSnap.dlRuntime; cNow.policy.DL() && dr != 0 && cNow.dlDeadline == l.cSnap.dlDeadline {
				fail(C, "the execution context's DL budget moved by %d ns; it belongs to the donor", dr)
				return
			}
			if dv, ds := cNow.vruntime-l.cSnap.vruntime, cNow.slice-l.cSnap.slice; dv != 0 || ds != 0 {
				fail(C, "the execution context was charged class time (vruntime %+d ns, slice %+d ns); it belongs to the donor", dv, ds)
				return
			}
		}
	}
	if dNow.policy.DL() {
		// The DL budget pays for the interval while the donor stays in
		// the dl tree on the same instance (a throttle or replenishment
		// in between starts a new account), now or as a charge owed
		// (__schedule's entry charge defers it, as the reference does).
		if dNow.dlInTree && l.dSnap.dlInTree && dNow.dlDeadline == l.dSnap.dlDeadline && dNow.queueSeq == l.dSnap.queueSeq {
			owed := r.PeekDLOwed() - l.owed
			if got := l.dSnap.dlRuntime - dNow.dlRuntime + owed; got != charged {
				fail(D, "the DL donor's budget dropped by %d ns and its owed charge grew by %d ns, not %d ns in all as charged", got-owed, owed, charged)
			}
		}
		return
	}
	if dNow.policy.RT() || dNow.queueSeq != l.dSnap.queueSeq {
		return // RT has no vruntime; a re-enqueue placed it anew
	}
	// Fair class time: vruntime advances by the charge weighted by the
	// donor's weight (each charge rounds down: allow 2%).
	want := charged * rq.NiceZeroWeight / dNow.weight
	if got := dNow.vruntime - l.dSnap.vruntime; got < want-want/50-1 {
		fail(D, "the donor's vruntime advanced by %d ns, want %d (%d ns at weight %d)", got, want, charged, dNow.weight)
	}
}

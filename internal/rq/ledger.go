package rq

import "github.com/proxysim/proxysim/internal/percpu"

// Ledger is told of every change of the pair a runqueue charges (rq->curr
// and rq->donor, and set_next_task, where charging restarts), with the rq
// lock held, before the change (rebase false) and after it (rebase true).
// The cpu package's charge ledger checks before the change that the
// interval since the last change was charged to the right tasks
// (invariant 37), and takes a new baseline after it.
type Ledger interface {
	Checkpoint(c *percpu.Ctx, r *RQ, rebase bool)
}

func (r *RQ) checkpoint(c *percpu.Ctx, rebase bool) {
	if r.Ledger != nil {
		r.Ledger.Checkpoint(c, r, rebase)
	}
}

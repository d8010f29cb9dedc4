//go:build mutants

package rq

import (
	"sync/atomic"

	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/task"
)

// MutantEnqueueWithoutLock is a deliberate mistake for tests: activate_task
// on a runqueue whose lock is not held. Only the race detector can catch
// it, which is what the test proves.
func (r *RQ) MutantEnqueueWithoutLock(c *percpu.Ctx, p *task.Task) {
	se := &p.SE
	r.seq++
	se.QueueSeq = r.seq
	se.Queued = true
	se.QueueCPU = r.CPU
	if se.Policy.RT() {
		r.rt = append(r.rt, p)
	} else {
		se.Vruntime = r.minVruntime
		r.fair = append(r.fair, p)
	}
	atomic.AddInt32(r.nrRunning, 1)
	p.SetOnRQ(task.OnRQQueued)
}

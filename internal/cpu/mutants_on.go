//go:build mutants

package cpu

import (
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/task"
)

// mutations are deliberate protocol mistakes that the detector tests
// switch on (mutation_test.go) to prove the detectors catch them. They
// exist only in binaries built with -tags mutants.
var mutations struct {
	selectIgnoresMask     bool // select_task_rq ignores the affinity mask
	unlockedRemoteEnqueue bool // ttwu enqueues on a remote runqueue without its lock
	fptRetryForever       bool // find_proxy_task asks for a re-pick and changes nothing
	pushNoResched         bool // push_rt_tasks moves a task to lowest_rq without resched_curr(lowest_rq)
}

// mutantFPTRetry: find_proxy_task's answer becomes "pick again" with
// nothing moved, so __schedule picks the same donor for ever.
func mutantFPTRetry() bool { return mutations.fptRetryForever }

// mutantUnlockedEnqueue: enqueue on a remote runqueue without its lock.
func mutantUnlockedEnqueue(c *percpu.Ctx, r *rq.RQ, p *task.Task) bool {
	if !mutations.unlockedRemoteEnqueue || r.CPU == c.ID {
		return false
	}
	r.MutantEnqueueWithoutLock(c, p)
	ttwuDoWakeup(c, p)
	return true
}

// mutantSelectIgnoresMask: pick any idle CPU, mask or not.
func mutantSelectIgnoresMask(m *Machine, p *task.Task) (int, bool) {
	if !mutations.selectIgnoresMask {
		return 0, false
	}
	for i := 0; i < len(m.rqs); i++ {
		if cpu := (p.WakeCPU + 1 + i) % len(m.rqs); m.rqs[cpu].IsIdle() {
			return cpu, true
		}
	}
	return 0, false
}

// mutantPushNoResched: push_rt_tasks moves its task onto the lowest
// runqueue and forgets resched_curr there (the kernel's push_rt_task
// reschedules lowest_rq right after move_queued_task_locked): the pushed
// task waits behind a lower-ranked donor until that CPU reschedules for
// some other reason.
func mutantPushNoResched() bool { return mutations.pushNoResched }

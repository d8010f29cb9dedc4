package audit

import (
	"fmt"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/mutex"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/task"
)

// View is what the audit reads. Every CPU is parked when it runs, so it
// reads without locks.
type View interface {
	NumCPUs() int
	RQ(cpu int) *rq.RQ
	Tasks() []*task.Task // index = id, [0] nil
	// RetiredRuntime is the execution time charged to tasks that exited
	// and whose slots were given to new tasks (respawn).
	RetiredRuntime() int64
	Mutexes() []*mutex.Mutex
	Now(cpu int) int64
	Busy(cpu int) int64
	// StopperPending says that cpu has migration_cpu_stop work queued
	// (an affinity change that excluded its running task, whose mover
	// has not run yet: its IPI may be due in the next epoch).
	StopperPending(cpu int) bool
	// IPIPending says that cpu has an IPI or a wake list entry pending
	// (ttwu_queue_wakelist's llist, whose IPI may be due in the next
	// epoch): its handler will enqueue and reschedule there.
	IPIPending(cpu int) bool
}

// Config says what the audit checks.
type Config struct {
	Proxy          bool
	SleepingOwners bool
	Horizon        int64 // the barrier's virtual time
	WakingBound    int64 // max virtual ns a woken donor (is_blocked, blocked_on cleared) may stay queued (0: off)
	ProgressBound  int64 // max virtual ns a runnable task may wait to run (0: off)
}

// Audit checks the global invariants and reports each violation found.
func Audit(v View, cfg Config, report func(check.Violation)) {
	a := auditor{v: v, cfg: cfg, report: report}
	a.queues()
	a.onCPU()
	a.mutexes()
	a.blocked()
	a.runtime()
	a.taskRefs()
	a.exitedDead()
}

type auditor struct {
	v      View
	cfg    Config
	report func(check.Violation)
	where  map[*task.Task]int // queued tasks -> cpu
}

func (a *auditor) fail(inv check.Invariant, cpu int, p *task.Task, format string, args ...any) {
	vi := check.Violation{Invariant: inv, CPU: cpu, Message: fmt.Sprintf(format, args...), Time: a.cfg.Horizon}
	if p != nil {
		vi.Task, vi.TaskName = p.ID, p.String()
	}
	a.report(vi)
}

// blockedPeek is is_blocked: p sleeps (a donor, if queued) and no
// wake-up has made it runnable.
func blockedPeek(p *task.Task) bool {
	_, isb, _ := p.Peek()
	return isb
}

// queues: invariants 6, 9, 17, 22 and the progress rule for idle CPUs.
func (a *auditor) queues() {
	a.where = map[*task.Task]int{}
	a.loadCount()
	for cpu := 0; cpu < a.v.NumCPUs(); cpu++ {
		r := a.v.RQ(cpu)
		ts := r.Tasks()
		if n := r.NrRunning(); n != len(ts) {
			a.fail(check.InvCounts, cpu, nil, "nr_running %d but %d tasks in the class queues", n, len(ts))
		}
		if n := r.BalanceCallbacks(); n != 0 {
			a.fail(check.InvBalanceCallbacks, cpu, nil, "%d balance callbacks pending at a quiescent point", n)
		}
		a.eevdfLag(cpu, r)
		for _, p := range ts {
			// Invariant 46: a DL entity in the dl tree has not overrun
			// its budget (update_curr_dl throttles it at runtime <= 0;
			// the revised CBS wakeup rule may enqueue one with exactly
			// 0 left, which its first update throttles). The tick checks
			// the donor's "<= 0" right after its update.
			if p.SE.Policy.DL() && p.SE.DL.OnDLRQ && p.SE.DL.Runtime < 0 {
				a.fail(check.InvDLBudget, cpu, p, "%v is in cpu%d's dl tree with runtime %d ns: it ran past its budget unthrottled", p, cpu, p.SE.DL.Runtime)
			}
		}
		// Throttled DL tasks are queued (on_rq) but off the dl tree and
		// not in nr_running: they count for the one-queue checks only.
		for _, p := range r.ThrottledDL() {
			if prev, dup := a.where[p]; dup {
				a.fail(check.InvOneQueue, cpu, p, "%v queued on cpu%d and cpu%d", p, prev, cpu)
			}
			a.where[p] = cpu
			a.queuedExited(cpu, p)
			if p.OnRQ() != task.OnRQQueued || p.CPU() != cpu || p.SE.QueueCPU != cpu || !p.SE.DL.Throttled || p.SE.DL.OnDLRQ {
				a.fail(check.InvOneQueue, cpu, p, "%v on cpu%d's throttled DL list with on_rq=%d task_cpu=%d throttled=%v in-tree=%v", p, cpu, p.OnRQ(), p.CPU(), p.SE.DL.Throttled, p.SE.DL.OnDLRQ)
			}
		}
		for _, p := range ts {
			if prev, dup := a.where[p]; dup {
				a.fail(check.InvOneQueue, cpu, p, "%v queued on cpu%d and cpu%d", p, prev, cpu)
			}
			a.where[p] = cpu
			if p.OnRQ() != task.OnRQQueued || p.CPU() != cpu || p.SE.QueueCPU != cpu {
				a.fail(check.InvOneQueue, cpu, p, "%v in cpu%d's queue with on_rq=%d task_cpu=%d", p, cpu, p.OnRQ(), p.CPU())
			}
			if p.Freed() {
				// The barrier ran the RCU callbacks: the last reference
				// was dropped with the task still on this runqueue.
				a.fail(check.InvUseAfterFree, cpu, p, "%v is queued on cpu%d after its last reference was dropped (freed at the barrier)", p, cpu)
			}
			if p.State() == task.Dead {
				a.fail(check.InvOneQueue, cpu, p, "%v is DEAD but queued", p)
			}
			a.queuedExited(cpu, p)
			runnable := (!a.cfg.Proxy || !blockedPeek(p)) && !p.SE.Delayed
			if runnable && !p.CPUsMask.Has(cpu) && !p.MigrationReady && p.PinnedCPU != cpu && !p.StopFailed {
				a.fail(check.InvRunnableInMask, cpu, p, "runnable %v queued on cpu%d outside its mask %v (wake_cpu %d)", p, cpu, p.CPUsMask, p.WakeCPU)
			}
			if cfg := a.cfg; cfg.ProgressBound > 0 && runnable && p != r.Curr() && waitedFair(r, p, cfg.Horizon) > cfg.ProgressBound {
				a.fail(check.InvProgress, cpu, p, "runnable %v has waited %d ns on cpu%d without running, not counting RT and deadline donors' time (bound %d)", p, waitedFair(r, p, cfg.Horizon), cpu, cfg.ProgressBound)
			}
			if p.CPU() != p.WakeCPU && !blockedPeek(p) && !p.MigrationReady && p.MigrationDisabled == 0 && !p.StopFailed {
				a.fail(check.InvWakeCPU, cpu, p, "%v queued on cpu%d away from wake_cpu %d but not blocked", p, cpu, p.WakeCPU)
			}
		}
		// A core-scheduled CPU may idle with tasks queued: forced idle,
		// until a sibling's core pick or its forced-idle tick picks again
		// (starvation there is invariant 45 and the progress bound).
		forcedIdle := r.CoreEnabled() && r.Core.Leader.Core.ForceidleCount > 0
		// A pending IPI or wake list kicks the CPU too: sched_ttwu_pending
		// enqueues the wakee and reschedules the idle task (a donor
		// queued here whose owner is TASK_WAKING on this CPU's wake list
		// waits for exactly that).
		if r.Curr() == r.Idle && len(ts) > 0 && !r.NeedResched() && !forcedIdle && !allDelayed(ts) && !a.v.IPIPending(cpu) {
			if q := r.PeekBestHiClass(); q != nil {
				// An RT or DL task outranks the idle donor: invariant 65
				// on a CPU whose tick is stopped (NOHZ), so no tick of
				// its own would ever report it.
				a.fail(check.InvDonorOutranked, cpu, q, "cpu%d idles with %v (%s) queued among %d tasks and no reschedule pending: it will not run until something else kicks the CPU", cpu, q, rq.RankString(q), len(ts))
			} else {
				a.fail(check.InvProgress, cpu, ts[0], "cpu%d idles with %d queued tasks and no reschedule pending: they will not run until something else kicks it", cpu, len(ts))
			}
		}
	}
	for _, p := range a.v.Tasks() {
		if p == nil {
			continue
		}
		_, q := a.where[p]
		switch p.OnRQ() {
		case task.OnRQQueued:
			if !q {
				a.fail(check.InvOneQueue, p.CPU(), p, "%v has on_rq QUEUED but is in no class queue", p)
			}
		case task.OnRQMigrating:
			a.fail(check.InvOneQueue, p.CPU(), p, "%v is MIGRATING at a quiescent point: a move was left half done", p)
		}
	}
}

// allDelayed: every task of ts is sched_delayed (asleep, still queued).
func allDelayed(ts []*task.Task) bool {
	for _, p := range ts {
		if !p.SE.Delayed {
			return false
		}
	}
	return true
}

// eevdfLag is invariant 55: on every runqueue the weighted lags of the
// queued fair entities (curr and delayed ones included) sum to zero, V
// being avg_vruntime from the incrementally kept avg_vruntime/avg_load;
// rounding V down leaves the sum in (-W, 0].
func (a *auditor) eevdfLag(cpu int, r *rq.RQ) {
	sum, load := r.LagSum()
	if sum > 0 || (load > 0 && sum <= -load) {
		msg := ""
		if b := r.LagBooks(); b != "" {
			msg = ": " + b
		}
		a.fail(check.InvEEVDFLag, cpu, nil, "EEVDF lags on cpu%d sum to %d (total weight %d, V %d)%s", cpu, sum, load, r.AvgVruntime(), msg)
	}
}

// onCPU: invariants 1, 2, 4.
func (a *auditor) onCPU() {
	running := map[*task.Task]int{}
	for cpu := 0; cpu < a.v.NumCPUs(); cpu++ {
		r := a.v.RQ(cpu)
		curr := r.Curr()
		if curr == r.Idle {
			continue
		}
		if other, dup := running[curr]; dup {
			a.fail(check.InvSingleRun, cpu, curr, "%v is curr on cpu%d and cpu%d", curr, other, cpu)
		}
		running[curr] = cpu
		if !curr.OnCPU() {
			a.fail(check.InvSingleRun, cpu, curr, "%v is curr on cpu%d without on_cpu", curr, cpu)
		}
		// A task whose new mask excludes the CPU it runs on keeps running
		// until the stopper preempts it (sched_setaffinity waits for
		// that); the stopper's IPI may have been sent at the horizon.
		moving := curr.MigrationReady && a.v.StopperPending(cpu)
		if !curr.CPUsMask.Has(cpu) && curr.MigrationDisabled == 0 && !curr.StopFailed && !moving {
			a.fail(check.InvAffinity, cpu, curr, "%v executes on cpu%d outside its mask %v", curr, cpu, curr.CPUsMask)
		}
		if a.cfg.Proxy && blockedPeek(curr) && !r.NeedResched() {
			a.fail(check.InvBlockedNotCurr, cpu, curr, "%v executes on cpu%d while mutex-blocked", curr, cpu)
		}
		if d := r.PeekDonor(); d != curr && d != r.Idle && !r.NeedResched() {
			if !a.cfg.Proxy || !chainReaches(d, curr) {
				a.fail(check.InvCurrDonor, cpu, curr, "cpu%d executes %v for donor %v, which is not blocked on a chain ending there", cpu, curr, d)
			}
		}
	}
	for _, p := range a.v.Tasks() {
		if p != nil && p.OnCPU() {
			if _, ok := running[p]; !ok {
				a.fail(check.InvSingleRun, p.CPU(), p, "%v has on_cpu set but is curr nowhere", p)
			}
		}
	}
}

func chainReaches(d, curr *task.Task) bool {
	p := d
	for i := 0; i < 64 && p != nil; i++ {
		if p == curr {
			return true
		}
		m, isb, _ := p.Peek()
		if m == nil || !isb {
			return false
		}
		p = m.OwnerTask()
	}
	return false
}

// mutexes: invariant 12.
func (a *auditor) mutexes() {
	waiting := map[*task.Task]*mutex.Mutex{}
	for _, m := range a.v.Mutexes() {
		owner, flags, ws := m.Peek()
		if owner != nil && owner.State() == task.Dead {
			a.fail(check.InvOneOwner, owner.CPU(), owner, "%v owned by exited %v", m, owner)
		}
		if len(ws) > 0 && flags&mutex.FlagWaiters == 0 {
			a.fail(check.InvOneOwner, -1, ws[0], "%v has %d waiters but no WAITERS flag: unlock would take the fast path and wake nobody", m, len(ws))
		}
		for _, w := range ws {
			if prev, dup := waiting[w]; dup {
				a.fail(check.InvOneOwner, -1, w, "%v waits on %v and %v", w, prev, m)
			}
			waiting[w] = m
			// blocked_on is m, or nil once an unlock chose w (or a
			// wake-up cleared it): w leaves the list when it runs.
			bo, _, _ := w.Peek()
			if bo != nil && bo != task.Lock(m) {
				a.fail(check.InvOneOwner, -1, w, "%v is on %v's wait list but blocked_on is %v", w, m, bo)
			}
			if w == owner && flags&mutex.FlagPickup == 0 {
				a.fail(check.InvOneOwner, -1, w, "%v owns %v and is still on its wait list", w, m)
			}
		}
	}
	for _, p := range a.v.Tasks() {
		if p == nil {
			continue
		}
		if bo, _, _ := p.Peek(); bo != nil {
			if mm, ok := waiting[p]; !ok || task.Lock(mm) != bo {
				a.fail(check.InvOneOwner, p.CPU(), p, "%v is blocked_on %v but not on its wait list", p, bo)
			}
		}
	}
}

// blocked: invariants 10, 11, 13, 14, 15, 31, 32.
func (a *auditor) blocked() {
	parkedOn := map[*task.Task]*task.Task{}
	for _, p := range a.v.Tasks() {
		if p == nil {
			continue
		}
		m, isb, _ := p.Peek()
		if m != nil {
			// chain acyclic (both modes): follow owners
			q := p
			for i := 0; ; i++ {
				qm, _, _ := q.Peek()
				if qm == nil {
					break
				}
				o := qm.OwnerTask()
				if o == nil || o == q {
					break // free, or handed to q and not yet picked up
				}
				if o == p || i > len(a.v.Tasks()) {
					a.fail(check.InvChainAcyclic, p.CPU(), p, "blocked_on chain from %v loops back: mutex deadlock", p)
					break
				}
				q = o
			}
		}
		if p.State() == task.Running && isb {
			a.fail(check.InvRunningNotBlocked, p.CPU(), p, "%v is TASK_RUNNING with is_blocked set (blocked_on %v)", p, m)
		}
		// A sched_delayed task (DELAY_DEQUEUE) is a sleeper still queued:
		// its is_blocked is its sleep's, not a woken donor's.
		if a.cfg.Proxy && isb && m == nil && p.OnRQ() != task.OnRQNone && !p.SE.Delayed && a.cfg.WakingBound > 0 && a.cfg.Horizon-p.UnblockedAt > a.cfg.WakingBound {
			a.fail(check.InvWakingReturns, p.CPU(), p, "%v has stayed queued as a donor for %d ns since its blocked_on was cleared (bound %d): never run, returned or deactivated", p, a.cfg.Horizon-p.UnblockedAt, a.cfg.WakingBound)
		}
		for _, w := range p.BlockedHead {
			if prev, dup := parkedOn[w]; dup {
				a.fail(check.InvSleepingOwner, w.CPU(), w, "%v parked on %v and %v", w, prev, p)
			}
			parkedOn[w] = p
			if w.SleepingOwner.Load() != p {
				a.fail(check.InvSleepingOwner, w.CPU(), w, "%v on %v's blocked_head but sleeping_owner is %v", w, p, w.SleepingOwner.Load())
			}
			if w.OnRQ() != task.OnRQNone && !w.SE.Delayed {
				// (proxy_enqueue_on_owner's block_task may be delayed:
				// the waiter stays queued, sched_delayed, until picked.)
				a.fail(check.InvSleepingOwner, w.CPU(), w, "%v parked on %v but on_rq=%d", w, p, w.OnRQ())
			}
			// A woken waiter (TASK_WAKING: a try_to_wake_up owns it,
			// perhaps waiting on the target's wake list) may have had its
			// blocked_on cleared (a ww die or wound, a signal) and stays on
			// the list until its activate_task takes it off
			// (proxy_remove_from_sleeping_owner), as in the kernel;
			// do_activate_blocked_waiter skips it meanwhile.
			if wm, _, _ := w.Peek(); w.State() != task.Waking && (wm == nil || wm.OwnerTask() != p) {
				a.fail(check.InvParkedOwner, w.CPU(), w, "%v parked on %v but its lock %v is owned by %v", w, p, wm, ownerOf(wm))
			}
			if p.OnRQ() != task.OnRQNone && !p.SE.Delayed {
				a.fail(check.InvNoStrandedWaiter, p.CPU(), w, "%v stranded on the list of %v, which is awake (on_rq=%d)", w, p, p.OnRQ())
			}
		}
	}
	for _, p := range a.v.Tasks() {
		if p == nil {
			continue
		}
		if so := p.SleepingOwner.Load(); so != nil && parkedOn[p] != so {
			a.fail(check.InvSleepingOwner, p.CPU(), p, "%v has sleeping_owner %v but is not on its list", p, so)
		}
	}
}

func ownerOf(m task.Lock) *task.Task {
	if m == nil {
		return nil
	}
	return m.OwnerTask()
}

// runtime: invariant 20: what tasks were charged plus what is pending
// equals the time CPUs spent executing them.
func (a *auditor) runtime() {
	charged, busy := a.v.RetiredRuntime(), int64(0)
	for _, p := range a.v.Tasks() {
		if p != nil {
			charged += p.SE.SumExecRuntime
		}
	}
	for cpu := 0; cpu < a.v.NumCPUs(); cpu++ {
		busy += a.v.Busy(cpu)
		r := a.v.RQ(cpu)
		if r.Curr() != r.Idle {
			charged += a.v.Now(cpu) - r.PeekExecStart()
		}
	}
	if charged != busy {
		a.fail(check.InvRuntime, -1, nil, "tasks were charged %d ns of execution but CPUs were busy %d ns", charged, busy)
	}
}

// taskRefs is invariant 60. At the barrier no CPU is inside an operation,
// so no transient reference (a wake_q entry, a lookup by kill(2) or
// sched_setaffinity, a completion's) is held: a task's usage count is its
// own reference, until its last switch-out after do_exit drops it, plus
// the one each waiter parked on it holds (proxy_enqueue_on_owner's
// get_task_struct, put when the link is cleared). More is a leaked
// reference (the task is never freed); less, a put without a get (it is
// freed under a holder).
func (a *auditor) taskRefs() {
	var links map[*task.Task]int32
	for _, p := range a.v.Tasks() {
		if p == nil {
			continue
		}
		if o := p.SleepingOwner.Load(); o != nil {
			if links == nil {
				links = map[*task.Task]int32{}
			}
			links[o]++
		}
	}
	for _, p := range a.v.Tasks() {
		if p == nil {
			continue
		}
		want := links[p]
		if !p.Exec.Reaped {
			want++
		}
		if got := p.Refs(); got != want {
			a.fail(check.InvTaskRefs, p.CPU(), p, "%v (%v) holds %d task references at the barrier, want %d (its own: %v, waiters parked on it: %d)",
				p, p.State(), got, want, !p.Exec.Reaped, links[p])
		}
	}
}

// exitedDead is invariant 63. do_exit ends in do_task_dead: TASK_DEAD,
// stored under pi_lock (set_special_state) so that no waker that matched
// an earlier sleeping state can store over it, then a last __schedule
// that dequeues the task for good. At the barrier no CPU is inside that
// step, so a task whose do_exit ran is DEAD, off every runqueue and no
// CPU's curr or donor. Anything else is a dead task back in the
// scheduler: it is picked again, runs nothing and charges nothing, and
// the fair runqueue's V stops under it (docs/findings/withdrawn.md).
func (a *auditor) exitedDead() {
	// Queued tasks were looked at by queues (queuedExited): that walk
	// also finds a reaped task, which leaves the task table when its slot
	// is respawned but may still be queued.
	for cpu := 0; cpu < a.v.NumCPUs(); cpu++ {
		r := a.v.RQ(cpu)
		for _, p := range []*task.Task{r.Curr(), r.PeekDonor()} {
			if _, queued := a.where[p]; p != r.Idle && p.Exec.Exited && !queued {
				a.fail(check.InvExitedDead, cpu, p, "%v ran do_exit but is %v with on_rq %d, cpu%d's curr %v, donor %v: a wake-up or an activation put it back after TASK_DEAD", p, p.State(), p.OnRQ(), cpu, r.Curr(), r.PeekDonor())
			}
		}
	}
	for _, p := range a.v.Tasks() {
		if _, queued := a.where[p]; p == nil || !p.Exec.Exited || queued {
			continue
		}
		if s, q := p.State(), p.OnRQ(); s != task.Dead || q != task.OnRQNone {
			a.fail(check.InvExitedDead, p.CPU(), p, "%v ran do_exit but is %v with on_rq %d on cpu%d: a wake-up or an activation put it back after TASK_DEAD", p, s, q, p.CPU())
		}
	}
}

// queuedExited is invariant 63 for a task queued on cpu: it must not
// have run do_exit.
func (a *auditor) queuedExited(cpu int, p *task.Task) {
	if p.Exec.Exited {
		a.fail(check.InvExitedDead, cpu, p, "%v ran do_exit but is %v with on_rq %d, queued on cpu%d: a wake-up or an activation put it back after TASK_DEAD", p, p.State(), p.OnRQ(), cpu)
	}
}

// loadCount is invariant 22 for nr_uninterruptible: one runqueue's count
// may go negative (a task blocks on one CPU and wakes on another), but
// the sum over all runqueues is the number of tasks asleep off every
// runqueue that count in the load (sched_contributes_to_load), those
// still on a wake list included.
func (a *auditor) loadCount() {
	var sum int64
	for cpu := 0; cpu < a.v.NumCPUs(); cpu++ {
		sum += a.v.RQ(cpu).NrUninterruptible
	}
	var n int64
	for _, p := range a.v.Tasks() {
		if p != nil && p.ContributesToLoad && p.OnRQ() == task.OnRQNone {
			n++
		}
	}
	if sum != n {
		a.fail(check.InvCounts, -1, nil, "nr_uninterruptible sums to %d over all runqueues, but %d tasks sleep counting in the load", sum, n)
	}
}

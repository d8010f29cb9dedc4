package audit

import (
	"fmt"
	"strings"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/mutex"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/task"
)

// LiveView is what the liveness checks read beyond View. Like View it is
// read with every CPU parked.
type LiveView interface {
	View
	// WakePending reports whether something holds a wake-up for p that
	// will be delivered without anybody else acting: an entry on a
	// CPU's wake list, or an armed sleep timer.
	WakePending(p *task.Task) bool
	// RePicks returns machine-wide totals: context switches, and picks
	// that found nothing to run (find_proxy_task re-picks and
	// proxy_resched_idle).
	RePicks() (switches, repicks uint64)
	// Grant describes the latest flight-recorder event that gave m to p
	// (a hand-off, an unlock naming p as next owner, or p's acquisition),
	// or "" if the recorder no longer holds one.
	Grant(p *task.Task, m *mutex.Mutex) string
}

// LiveConfig says what the liveness checks check.
type LiveConfig struct {
	// HandoffBound is the virtual time a task given a mutex may go
	// without running or being owed a wake-up (invariant 33; 0: off).
	HandoffBound int64
	// WaitBound is the virtual time a mutex waiter may wait while the
	// chain it waits on makes no progress (invariant 34; 0: off).
	WaitBound int64
	// LostAudits is the number of audits in a row a TASK_UNINTERRUPTIBLE
	// sleeper may be found unreferenced before it counts as a lost
	// wake-up (invariant 35; 0: off).
	LostAudits int
	// ProgressFloor and ProgressFactor scale the runnable-progress bound
	// to the run: a runnable task that has waited more than
	// max(ProgressFloor, ProgressFactor x the longest wait seen so far)
	// is reported (invariant 30), as well as one that waits longer than
	// the fixed Config.ProgressBound. 0: off.
	ProgressFloor  int64
	ProgressFactor int64
	// LivelockFactor reports a window of audits whose re-picks per
	// context switch exceed LivelockFactor x the run's own baseline (and
	// the baseline by more than one re-pick per switch) three times in a
	// row.
	// 0: off.
	LivelockFactor float64
	// LivelockMinSwitches is the least number of context switches a
	// window needs before its ratio counts.
	LivelockMinSwitches uint64
}

// DefaultLiveConfig returns the defaults: bounds a race-build stress run
// reaches within its first minute (at 256 CPUs on two shared cores it
// covers 0.15-0.6 s of virtual time, and far less once CPUs spin in a
// livelock). The hand-off and wait-age bounds can be short because they
// apply only to tasks the scheduler will not run on its own (blocked, or
// asleep with no wake-up pending): the correct protocol never leaves a
// task given a lock in that state at a quiescent point, so the hand-off
// check fires at the second audit that finds one (the first audit after
// the bound). A runnable task's wait is the progress bound's. The
// livelock check counts context switches, not virtual time.
func DefaultLiveConfig() LiveConfig {
	return LiveConfig{
		HandoffBound:        4_000_000,
		WaitBound:           50_000_000,
		LostAudits:          2,
		ProgressFloor:       150_000_000,
		ProgressFactor:      8,
		LivelockFactor:      2.5,
		LivelockMinSwitches: 4000,
	}
}

type progress struct {
	sum      int64
	switches uint64
	runnable int64 // SE.Runnable at the last audit
	waited   int64 // runnable wait observed at the last audit
	at       int64 // horizon of the last audit that saw it progress
}

type grantKey struct {
	m *mutex.Mutex
	p *task.Task
}

type grant struct {
	since int64
	ev    string
}

// Liveness holds what the liveness checks remember from one audit to the
// next. Audits run with every CPU parked, one at a time, so it needs no
// lock.
type Liveness struct {
	cfg      LiveConfig
	prog     map[*task.Task]*progress
	grants   map[grantKey]grant
	lost     map[*task.Task]int // consecutive audits seen unreferenced
	maxWait  int64              // longest completed runnable wait seen
	audits   int
	prevSw   uint64
	prevRP   uint64
	windows  int
	baseline []float64
	hot      int
	reported map[check.Invariant]bool
}

// NewLiveness returns an empty liveness tracker.
func NewLiveness(cfg LiveConfig) *Liveness {
	return &Liveness{cfg: cfg, prog: map[*task.Task]*progress{}, grants: map[grantKey]grant{},
		lost: map[*task.Task]int{}, reported: map[check.Invariant]bool{}}
}

// Config returns the tracker's configuration.
func (l *Liveness) Config() LiveConfig { return l.cfg }

type liveAuditor struct {
	*Liveness
	v       LiveView
	horizon int64
	report  func(check.Violation)
	curr    map[*task.Task]int
}

// Check runs the liveness checks at an audit as of horizon.
func (l *Liveness) Check(v LiveView, horizon int64, report func(check.Violation)) {
	a := liveAuditor{Liveness: l, v: v, horizon: horizon, report: report, curr: map[*task.Task]int{}}
	l.audits++
	for cpu := 0; cpu < v.NumCPUs(); cpu++ {
		r := v.RQ(cpu)
		if c := r.Curr(); c != r.Idle {
			a.curr[c] = cpu
		}
	}
	a.track()
	if l.cfg.HandoffBound > 0 {
		a.handoffs()
	}
	if l.cfg.WaitBound > 0 {
		a.waitAge()
	}
	if l.cfg.LostAudits > 0 {
		a.lostWakeups()
	}
	if l.cfg.ProgressFloor > 0 {
		a.scaledProgress()
	}
	if l.cfg.LivelockFactor > 0 {
		a.livelock()
	}
}

func (a *liveAuditor) fail(inv check.Invariant, cpu int, p *task.Task, format string, args ...any) {
	if a.reported[inv] {
		return // one report per invariant: the first is the evidence
	}
	a.reported[inv] = true
	vi := check.Violation{Invariant: inv, CPU: cpu, Message: fmt.Sprintf(format, args...), Time: a.horizon}
	if p != nil {
		vi.Task, vi.TaskName = p.ID, p.String()
	}
	a.report(vi)
}

// track updates each task's last progress: it ran (its execution time
// grew), was switched in, or is running now.
func (a *liveAuditor) track() {
	for _, p := range a.v.Tasks() {
		if p == nil {
			continue
		}
		pr := a.prog[p]
		if pr == nil {
			a.prog[p] = &progress{sum: p.SE.SumExecRuntime, switches: p.Stats.Switches, runnable: p.SE.Runnable, at: a.horizon}
			continue
		}
		_, running := a.curr[p]
		if running || pr.sum != p.SE.SumExecRuntime || pr.switches != p.Stats.Switches {
			pr.at = a.horizon
		}
		pr.sum, pr.switches = p.SE.SumExecRuntime, p.Stats.Switches
	}
	if ts := a.v.Tasks(); len(a.prog) >= 2*len(ts) {
		// Respawned tasks (the machine's Retired) left their slots:
		// forget them.
		for p := range a.prog {
			if ts[p.ID] != p {
				delete(a.prog, p)
			}
		}
	}
}

// stalled reports whether p has made no progress for longer than the
// bound, nothing holds a wake-up for it, and the scheduler will not run
// it on its own: it is not queued as a runnable task (a runnable task
// that waits too long is the progress checks' business).
func (a *liveAuditor) stalled(p *task.Task, bound int64) bool {
	if _, running := a.curr[p]; running || p.OnCPU() {
		return false
	}
	if p.OnRQ() != task.OnRQNone && !blockedPeek(p) {
		return false
	}
	pr := a.prog[p]
	return pr != nil && a.horizon-pr.at > bound && !a.v.WakePending(p)
}

func (a *liveAuditor) idle(p *task.Task) int64 {
	if pr := a.prog[p]; pr != nil {
		return a.horizon - pr.at
	}
	return 0
}

// describe is one task's scheduling state for a report.
func describe(p *task.Task) string {
	if p == nil {
		return "nobody"
	}
	m, isb, _ := p.Peek()
	bo := "-"
	if m != nil {
		bo = fmt.Sprint(m)
	}
	return fmt.Sprintf("%v [state %v, on_rq %d, on_cpu %v, cpu %d, blocked_on %s, is_blocked %v]", p, p.State(), p.OnRQ(), p.OnCPU(), p.CPU(), bo, isb)
}

// fairState renders p's EEVDF state on r for a progress report: what
// decides whether the pick can reach it.
func fairState(r *rq.RQ, p *task.Task) string {
	if p == nil || p == r.Idle {
		return "idle"
	}
	se := &p.SE
	return fmt.Sprintf("%v vruntime %d deadline %d slice %d weight %d eligible %v delayed %v sum_exec %d at %s",
		p, se.Vruntime, se.Deadline, se.Slice, se.Weight, r.EntityEligible(p), se.Delayed, se.SumExecRuntime, execAt(p))
}

// execAt renders where p's program is: the instruction, its phase and the
// compute left (the audit runs with every CPU parked).
func execAt(p *task.Task) string {
	ex := &p.Exec
	if ex.Prog == nil || ex.PC >= len(ex.Prog.Ops) {
		return fmt.Sprintf("pc %d (end)", ex.PC)
	}
	return fmt.Sprintf("pc %d %v phase %d left %d", ex.PC, ex.Prog.Ops[ex.PC].Kind, ex.Phase, ex.Left)
}

// chain renders the blocked_on chain from p through owners.
func chain(p *task.Task) string {
	var parts []string
	seen := map[*task.Task]bool{}
	for q := p; q != nil && !seen[q] && len(parts) < 16; {
		seen[q] = true
		parts = append(parts, describe(q))
		m, _, _ := q.Peek()
		if m == nil {
			break
		}
		o := m.OwnerTask()
		if o == q {
			parts = append(parts, "(owns it)")
			break
		}
		q = o
	}
	return strings.Join(parts, " -> ")
}

// handoffs: invariant 33. A task given a mutex while it still waits for
// it (blocked_on is that mutex: a hand-off not yet picked up, a pickup, or
// an acquisition not yet returned) must run within the bound, or a
// wake-up for it must be pending.
func (a *liveAuditor) handoffs() {
	seen := map[grantKey]bool{}
	for _, m := range a.v.Mutexes() {
		o, flags, ws := m.Peek()
		if o == nil {
			continue
		}
		if flags&mutex.FlagPickup == 0 {
			continue // taken, not handed over
		}
		if bo, isb, _ := o.Peek(); bo == nil && isb && o.OnRQ() != task.OnRQNone {
			continue // a woken donor to run, return or deactivate: invariant 10's business
		}
		k := grantKey{m, o}
		seen[k] = true
		g, ok := a.grants[k]
		if !ok {
			g = grant{since: a.horizon, ev: a.v.Grant(o, m)}
			a.grants[k] = g
		}
		if a.horizon-g.since <= a.cfg.HandoffBound || !a.stalled(o, a.cfg.HandoffBound) {
			continue
		}
		ev := g.ev
		if ev == "" {
			ev = "no longer in the flight recorder"
		}
		var donors []string
		for _, w := range ws {
			if w != o {
				donors = append(donors, w.String())
			}
		}
		a.fail(check.InvHandoffLiveness, o.CPU(), o,
			"%v was given %v (owner flags %#x) at least %d ns ago and has not run for %d ns, and no wake-up is pending for it (bound %d): a lost hand-off. Owner: %s. Hand-off event: %s. Waiters behind it: [%s]",
			o, m, flags, a.horizon-g.since, a.idle(o), a.cfg.HandoffBound, chain(o), ev, strings.Join(donors, ", "))
	}
	for k := range a.grants {
		if !seen[k] {
			delete(a.grants, k)
		}
	}
}

// chainEnd follows owners from p (a mutex owner) to the task the chain
// waits for: the first that is not itself blocked on a lock owned by
// someone else.
func chainEnd(p *task.Task) *task.Task {
	for i := 0; i < 64 && p != nil; i++ {
		m, isb, _ := p.Peek()
		if m == nil || !isb {
			return p
		}
		o := m.OwnerTask()
		if o == nil || o == p {
			return p
		}
		p = o
	}
	return p
}

// waitAge: invariant 34. Every waiter on a wait list whose chain makes
// no progress (the task at its end has neither run nor been owed a
// wake-up for the bound) waits at most the bound.
func (a *liveAuditor) waitAge() {
	for _, m := range a.v.Mutexes() {
		o, _, ws := m.Peek()
		for _, w := range ws {
			if w == o {
				continue
			}
			age := a.horizon - w.Exec.WaitStart
			if age <= a.cfg.WaitBound {
				continue
			}
			if o == nil {
				// Free with waiters: someone must be about to take it.
				if a.freeStuck(ws) {
					a.fail(check.InvWaitAge, w.CPU(), w, "%v has waited %d ns for %v, which is free, and none of its %d waiters is queued, has run or is owed a wake-up for the bound %d: nobody will take it. Waiter: %s",
						w, age, m, len(ws), a.cfg.WaitBound, describe(w))
				}
				continue
			}
			e := chainEnd(o)
			if em, _, _ := e.Peek(); em != nil && em.OwnerTask() == nil {
				// The chain ends at a waiter of a free mutex: it moves on
				// when any waiter of that mutex takes it.
				_, _, ews := em.(*mutex.Mutex).Peek()
				if !a.freeStuck(ews) {
					continue
				}
			} else if !a.stalled(e, a.cfg.WaitBound) {
				continue
			}
			a.fail(check.InvWaitAge, w.CPU(), w, "%v has waited %d ns for %v while the chain it waits on has made no progress for %d ns (bound %d). Chain: %s",
				w, age, m, a.idle(e), a.cfg.WaitBound, chain(w))
		}
	}
}

// freeStuck reports whether nobody will take a free mutex with waiters
// ws: none of them is queued (the scheduler would run it to retry),
// running, owed a wake-up, or has made progress within the wait bound.
func (a *liveAuditor) freeStuck(ws []*task.Task) bool {
	for _, q := range ws {
		if q.OnRQ() != task.OnRQNone || !a.stalled(q, a.cfg.WaitBound) {
			return false
		}
	}
	return true
}

// lostWakeups: invariant 35. A TASK_UNINTERRUPTIBLE (or KILLABLE) task
// off every runqueue, or a TASK_INTERRUPTIBLE one on a mutex wait list
// (mutex_lock_interruptible: nothing but the unlock is owed to wake it;
// a signal may, but no signal is owed), must be referenced by something
// that will wake it: a wake list
// or timer, a sleeping owner's list, or the wait list of a mutex that
// somebody else will release (an owner other than itself, or, if the
// mutex is free, another waiter able to take it).
func (a *liveAuditor) lostWakeups() {
	waitingOn := map[*task.Task]*mutex.Mutex{}
	for _, m := range a.v.Mutexes() {
		_, _, ws := m.Peek()
		for _, w := range ws {
			waitingOn[w] = m
		}
	}
	seen := map[*task.Task]bool{}
	for _, p := range a.v.Tasks() {
		if p == nil || p.OnRQ() != task.OnRQNone || p.OnCPU() {
			continue
		}
		if st := p.State(); !st.Uninterruptible() && (st != task.Interruptible || waitingOn[p] == nil) {
			continue
		}
		if _, running := a.curr[p]; running || a.v.WakePending(p) || p.SleepingOwner.Load() != nil {
			continue
		}
		why := "it is on no wait list"
		if m := waitingOn[p]; m != nil {
			o, _, ws := m.Peek()
			switch {
			case o != nil && o != p:
				continue // o's unlock wakes a waiter
			case o == p:
				why = fmt.Sprintf("it owns %v (handed to it) and nothing will wake it to pick it up", m)
			default:
				able := false
				for _, q := range ws {
					if q != p && (q.OnRQ() != task.OnRQNone || a.v.WakePending(q) || a.curr[q] != 0 || q.OnCPU()) {
						able = true
						break
					}
				}
				if able {
					continue
				}
				why = fmt.Sprintf("%v is free and no waiter of it is runnable or owed a wake-up", m)
			}
		}
		seen[p] = true
		a.lost[p]++
		if a.lost[p] < a.cfg.LostAudits {
			continue // unreferenced at LostAudits audits in a row
		}
		a.fail(check.InvLostWakeup, p.CPU(), p, "%v is %v off every runqueue and nothing will wake it: no wake list, timer or sleeping-owner list holds it, and %s (seen at %d audits in a row). Task: %s",
			p, p.State(), why, a.lost[p], chain(p))
	}
	for p := range a.lost {
		if !seen[p] {
			delete(a.lost, p)
		}
	}
}

// scaledProgress: invariant 30 with a bound derived from the run itself:
// a runnable task that waits more than ProgressFactor times the longest
// wait any task has completed so far (and more than ProgressFloor).
func (a *liveAuditor) scaledProgress() {
	// Completed waits first: a task whose wait start moved since the last
	// audit has run; the wait observed then is a lower bound of the wait
	// it completed.
	for p, pr := range a.prog {
		if p.SE.Runnable != pr.runnable {
			a.maxWait = max(a.maxWait, pr.waited)
			pr.runnable, pr.waited = p.SE.Runnable, 0
		}
	}
	bound := a.cfg.ProgressFactor * a.maxWait
	if bound < a.cfg.ProgressFloor {
		bound = a.cfg.ProgressFloor
	}
	var worst *task.Task
	var worstWait int64
	for cpu := 0; cpu < a.v.NumCPUs(); cpu++ {
		r := a.v.RQ(cpu)
		for _, p := range r.Tasks() {
			if p == r.Curr() || blockedPeek(p) {
				continue
			}
			w := waitedFair(r, p, a.horizon)
			if pr := a.prog[p]; pr != nil {
				pr.waited = w
			}
			if w > worstWait {
				worst, worstWait = p, w
			}
		}
	}
	if worst != nil && worstWait > bound {
		r := a.v.RQ(worst.CPU())
		a.fail(check.InvProgress, worst.CPU(), worst, "runnable %v has waited %d ns on cpu%d without running, not counting the %d ns the CPU spent on RT and deadline donors meanwhile: more than %d x the longest wait completed in this run (%d ns) and the floor %d. CPU's donor now %v, curr %v. Task: %s. Fair state (avg_vruntime %d): donor %s; task %s",
			worst, worstWait, worst.CPU(), r.HiClassTime(a.horizon)-worst.SE.RunnableHi, a.cfg.ProgressFactor, a.maxWait, a.cfg.ProgressFloor, r.PeekDonor(), r.Curr(), describe(worst),
			r.AvgVruntime(), fairState(r, r.PeekDonor()), fairState(r, worst))
	}
}

// livelock: invariant 36. Re-picks per context switch, per window between
// audits, compared with the run's own baseline (the mean of its first
// windows).
func (a *liveAuditor) livelock() {
	sw, rp := a.v.RePicks()
	dsw, drp := sw-a.prevSw, rp-a.prevRP
	if dsw < a.cfg.LivelockMinSwitches && drp < 8*a.cfg.LivelockMinSwitches {
		// Accumulate into a larger window (one where switches all but
		// stopped while re-picks go on closes on the re-picks).
		return
	}
	a.prevSw, a.prevRP = sw, rp
	a.windows++
	ratio := float64(drp) / float64(max(dsw, 1))
	const warmup, baseWindows = 1, 4
	if a.windows <= warmup {
		return
	}
	if len(a.baseline) < baseWindows {
		a.baseline = append(a.baseline, ratio)
		return
	}
	var base float64
	for _, b := range a.baseline {
		base += b
	}
	base /= float64(len(a.baseline))
	if ratio > a.cfg.LivelockFactor*max(base, 0.2) && ratio-base > 1 {
		a.hot++
	} else {
		a.hot = 0
	}
	if a.hot >= 3 {
		a.fail(check.InvLivelock, -1, nil, "%.2f re-picks per context switch over the last window (%d re-picks, %d switches), %.1f x the run's baseline of %.2f, for %d windows in a row: CPUs pick and find nothing to run (a lost hand-off or wake-up, or a find_proxy_task retry loop)",
			ratio, drp, dsw, ratio/base, base, a.hot)
	}
}

// waitedFair is how long p has waited on r to run, up to now, less the
// time r spent on RT or deadline donors meanwhile: those outrank any
// waiter's claim to the CPU (a fair task waits behind them for as long as
// they run: the model has no RT throttling or fair server), so only the
// time r ran fair tasks or idled counts against the scheduler.
func waitedFair(r *rq.RQ, p *task.Task, now int64) int64 {
	return now - p.SE.Runnable - (r.HiClassTime(now) - p.SE.RunnableHi)
}

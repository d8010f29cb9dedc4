package explain

import (
	"fmt"
	"sort"

	"github.com/proxysim/proxysim/internal/trace"
)

// eventFunc names the kernel function a flight-recorder event comes from.
var eventFunc = map[trace.Kind]string{
	trace.EvSwitch:         "__schedule",
	trace.EvWake:           "try_to_wake_up",
	trace.EvWakeRunnable:   "ttwu_runnable",
	trace.EvLock:           "mutex_lock",
	trace.EvContend:        "__mutex_lock_common",
	trace.EvUnlock:         "mutex_unlock",
	trace.EvHandoff:        "__mutex_handoff",
	trace.EvBlock:          "try_to_block_task",
	trace.EvDonorKeep:      "try_to_block_task",
	trace.EvProxyPick:      "find_proxy_task",
	trace.EvReschedIdle:    "proxy_resched_idle",
	trace.EvParkOnOwner:    "proxy_enqueue_on_owner",
	trace.EvActivate:       "activate_blocked_waiters",
	trace.EvBlockedOnClear: "__clear_task_blocked_on",
	trace.EvSleep:          "schedule_hrtimeout",
	trace.EvExit:           "do_exit",
	trace.EvAffinity:       "__set_cpus_allowed_ptr",
	trace.EvSetPrio:        "__sched_setscheduler",
	trace.EvLoadBalance:    "sched_balance_rq",
	trace.EvDelayed:        "dequeue_entity",
	trace.EvWWWound:        "__ww_mutex_wound",
	trace.EvWWDie:          "__ww_mutex_die",
	trace.EvSignal:         "send_signal",
	trace.EvLockEINTR:      "__mutex_lock_common",
}

// migrateFunc names the function a migration of each reason comes from.
var migrateFunc = [trace.NumReasons]string{
	trace.ReasonLoadBalance: "sched_balance_rq", trace.ReasonProxy: "proxy_migrate_task",
	trace.ReasonChain: "proxy_migrate_task", trace.ReasonReturn: "try_to_wake_up",
	trace.ReasonActivation: "do_activate_blocked_waiter", trace.ReasonAffinity: "move_queued_task",
	trace.ReasonWake: "try_to_wake_up", trace.ReasonSharedRunq: "shared_runq_pick_next_task",
	trace.ReasonHotplug: "balance_push",
}

// FromEvents lays out, without a replay, the last flight-recorder events
// that concern the failure's tasks: a coarser explanation for a failure
// that has no deterministic reproduction (a concurrent run whose retries
// did not fail). The rows are events, not watched steps: no locks, no
// reads; the report's event list has the rest.
func FromEvents(events []trace.Event, names Names, f Failure, maxRows int) *Explanation {
	ex := &Explanation{Failure: f, Coarse: true}
	involved := map[int32]bool{}
	for _, t := range f.Tasks {
		involved[t] = true
	}
	concerns := func(e *trace.Event) bool {
		if involved[e.Task] {
			return true
		}
		switch e.Kind {
		case trace.EvSwitch, trace.EvProxyPick:
			return involved[e.A] || involved[e.B]
		case trace.EvParkOnOwner, trace.EvActivate:
			return involved[e.A]
		}
		return false
	}
	n := newAliases(names)
	var keep []*trace.Event
	for i := len(events) - 1; i >= 0 && (maxRows <= 0 || len(keep) < maxRows); i-- {
		e := &events[i]
		if e.Kind == trace.EvTick || e.Kind == trace.EvViolation || !concerns(e) {
			continue
		}
		keep = append(keep, e)
	}
	cpus := map[int]bool{}
	for i := len(keep) - 1; i >= 0; i-- {
		e := keep[i]
		fn := eventFunc[e.Kind]
		if e.Kind == trace.EvMigrate && e.C >= 0 && int(e.C) < len(migrateFunc) {
			fn = migrateFunc[e.C]
		}
		if fn == "" {
			fn = e.Kind.String()
		}
		line := n.event(e)
		if line == "" {
			line = n.coarse(e)
		}
		ex.Rows = append(ex.Rows, Row{CPU: int(e.CPU), Func: fn, Lines: []string{fmt.Sprintf("%s (t=%.3fus)", line, float64(e.Time)/1e3)}})
		cpus[int(e.CPU)] = true
	}
	for c := range cpus {
		ex.CPUs = append(ex.CPUs, c)
	}
	sort.Ints(ex.CPUs)
	ex.Legend = n.legend()
	return ex
}

// coarse renders an event that event() leaves out.
func (a *aliases) coarse(e *trace.Event) string {
	switch e.Kind {
	case trace.EvWake:
		return fmt.Sprintf("wake %s onto cpu%d", a.task(e.Task), e.A)
	case trace.EvLock:
		return fmt.Sprintf("%s takes m%d", a.task(e.Task), e.A)
	case trace.EvContend:
		return fmt.Sprintf("%s blocks on m%d, owned by %s", a.task(e.Task), e.A, a.task(e.B))
	case trace.EvUnlock:
		if e.B != 0 {
			return fmt.Sprintf("%s releases m%d to %s", a.task(e.Task), e.A, a.task(e.B))
		}
		return fmt.Sprintf("%s releases m%d", a.task(e.Task), e.A)
	case trace.EvHandoff:
		return fmt.Sprintf("m%d handed to %s", e.A, a.task(e.Task))
	case trace.EvParkOnOwner:
		return fmt.Sprintf("%s parked on %s", a.task(e.Task), a.task(e.A))
	case trace.EvActivate:
		return fmt.Sprintf("%s activated (owner %s) on cpu%d", a.task(e.Task), a.task(e.A), e.B)
	case trace.EvBlockedOnClear:
		return fmt.Sprintf("%s->blocked_on = NULL (was m%d)", a.task(e.Task), e.A)
	}
	return fmt.Sprintf("%s %s a=%d b=%d", e.Kind, a.task(e.Task), e.A, e.B)
}

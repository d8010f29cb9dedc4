package task

import (
	"fmt"

	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/trace"
)

// The blocked_on state machine (proxy-exec v20..v22: blocked_on plus the
// tri-state blocked_on_state). All of it is protected by p.BlockedLock
// (the mutex's wait_lock is also held by writers of blocked_on itself).
//
// blockedOnTransitions lists every change of blocked_on_state the series
// allows while blocked_on stays set, with who makes it. A change that is
// not listed is a protocol violation. Setting blocked_on (NULL -> m,
// always to BO_BLOCKED) and clearing it (m -> NULL, always to
// BO_RUNNABLE: acquisition, -EINTR, -EDEADLK) are allowed from any state:
// the mutex records those with its own events (contend, lock).
var blockedOnTransitions = [numBOStates][numBOStates]string{
	BORunnable: {
		BORunnable: "no change",
		BOBlocked:  "the waiter itself re-arms after a wake-up or an optimistic spin (__mutex_lock_common)",
	},
	BOBlocked: {
		BOBlocked:  "no change (re-arm while still blocked)",
		BOWaking:   "unlock choosing it (__mutex_unlock_slowpath), a matched ttwu, proxy_force_return",
		BORunnable: "ttwu of current or after TASK_WAKING; find_proxy_task when the lock is free and p may run here",
	},
	BOWaking: {
		BOWaking:   "no change",
		BOBlocked:  "the waiter itself re-arms after failing to take the lock",
		BORunnable: "ttwu / proxy_needs_return; find_proxy_task when the WAKING task is rq->curr",
	},
}

const numBOStates = 3

// BOTransitionAllowed reports whether blocked_on_state may change from
// from to to while blocked_on stays set, and names who makes that change.
func BOTransitionAllowed(from, to BOState) (who string, ok bool) {
	if from < 0 || from >= numBOStates || to < 0 || to >= numBOStates {
		return "", false
	}
	who = blockedOnTransitions[from][to]
	return who, who != ""
}

// SetBOState changes blocked_on_state while blocked_on stays set (or
// keeps it BO_RUNNABLE when blocked_on is NULL). p.BlockedLock must be
// held by c.
func (p *Task) SetBOState(c *percpu.Ctx, to BOState) { p.setBOState(c, to, true) }

// SetBlockedOn sets blocked_on and its state together: m != nil starts or
// re-arms a wait (state BO_BLOCKED), m == nil ends it (BO_RUNNABLE).
// p.BlockedLock must be held (and, in the mutex, m's wait_lock).
func (p *Task) SetBlockedOn(c *percpu.Ctx, m Lock, to BOState) {
	p.BlockedLock.AssertHeld(c.CPU)
	if (m == nil) != (to == BORunnable) {
		panic(fmt.Sprintf("blocked_on: %v: blocked_on %v with state %v", p, m, to))
	}
	// A wait that starts or ends is recorded by the mutex's own event
	// (contend, lock); a re-arm is a state change like any other.
	traced := (p.blockedOn == nil) == (m == nil)
	p.blockedOn = m
	p.setBOState(c, to, traced)
}

// setBOState is the one place blocked_on_state is written. The change is
// checked against blockedOnTransitions (an illegal one panics, which the
// CPU reports as a broken invariant), traced as EvBOState, and BO_WAKING
// records when it was set (the audit's WAKING age bound). With
// blocked_on NULL the only state is BO_RUNNABLE.
func (p *Task) setBOState(c *percpu.Ctx, to BOState, emit bool) {
	p.BlockedLock.AssertHeld(c.CPU)
	from := p.blockedOnState
	if p.blockedOn == nil {
		if to != BORunnable {
			panic(fmt.Sprintf("blocked_on_state: %v set to %v with blocked_on NULL", p, to))
		}
	} else if emit {
		if _, ok := BOTransitionAllowed(from, to); !ok {
			panic(fmt.Sprintf("blocked_on_state: %v: illegal transition %v -> %v", p, from, to))
		}
	}
	if from == to {
		return
	}
	p.blockedOnState = to
	if to == BOWaking {
		p.BOSince = c.Now
	}
	if emit {
		c.Emit(trace.EvBOState, int32(p.ID), int32(from), int32(to), 0)
	}
}

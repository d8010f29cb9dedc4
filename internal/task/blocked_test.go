package task

import (
	"fmt"
	"strings"
	"testing"

	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/trace"
)

type fakeLock struct{ wl spinlock.Lock }

func (l *fakeLock) WaitLock() *spinlock.Lock { return &l.wl }
func (l *fakeLock) OwnerTask() *Task         { return nil }
func (l *fakeLock) ID() int                  { return 1 }
func (l *fakeLock) String() string           { return "m1" }

func boCtx() (*percpu.Ctx, *trace.Log) {
	log := trace.NewLog(1, 64)
	return &percpu.Ctx{CPU: spinlock.NewCPU(0), Trace: log.Rings[0], Now: 42}, log
}

// blockedTask returns a task blocked on a mutex in state from, with its
// blocked_lock held by c.
func blockedTask(t *testing.T, c *percpu.Ctx, from BOState) *Task {
	t.Helper()
	p := New(1, "p", 2, 0)
	p.BlockedLock.Lock(c.CPU)
	p.SetBlockedOn(c, &fakeLock{}, BOBlocked)
	switch from {
	case BORunnable:
		p.SetBOState(c, BORunnable)
	case BOWaking:
		p.SetBOState(c, BOWaking)
	}
	return p
}

func catch(f func()) (msg string) {
	defer func() {
		if e := recover(); e != nil {
			msg = fmt.Sprint(e)
		}
	}()
	f()
	return ""
}

// Every transition of blocked_on_state, allowed and forbidden, through
// the one function that writes it.
func TestBOTransitionTable(t *testing.T) {
	cases := []struct {
		from, to BOState
		ok       bool
	}{
		{BORunnable, BORunnable, true},
		{BORunnable, BOBlocked, true},
		{BORunnable, BOWaking, false}, // WAKING only ever follows BLOCKED
		{BOBlocked, BORunnable, true},
		{BOBlocked, BOBlocked, true},
		{BOBlocked, BOWaking, true},
		{BOWaking, BORunnable, true},
		{BOWaking, BOBlocked, true},
		{BOWaking, BOWaking, true},
	}
	if len(cases) != numBOStates*numBOStates {
		t.Fatalf("the table test covers %d of %d transitions", len(cases), numBOStates*numBOStates)
	}
	for _, tc := range cases {
		name := fmt.Sprintf("%v->%v", tc.from, tc.to)
		if who, ok := BOTransitionAllowed(tc.from, tc.to); ok != tc.ok {
			t.Errorf("%s: table says allowed=%v (%q), want %v", name, ok, who, tc.ok)
		}
		c, log := boCtx()
		p := blockedTask(t, c, tc.from)
		before := log.Seq()
		msg := catch(func() { p.SetBOState(c, tc.to) })
		if tc.ok {
			if msg != "" {
				t.Errorf("%s: allowed transition panicked: %s", name, msg)
				continue
			}
			if got := p.blockedOnState; got != tc.to {
				t.Errorf("%s: state is %v", name, got)
			}
			events := log.Seq() - before
			if want := uint64(0); tc.from != tc.to {
				want = 1
				if events != want {
					t.Errorf("%s: %d bo_state events, want %d", name, events, want)
				}
			} else if events != 0 {
				t.Errorf("%s: a no-op emitted %d events", name, events)
			}
			if tc.to == BOWaking && tc.from != BOWaking && p.BOSince != c.Now {
				t.Errorf("%s: BOSince %d, want the clock %d", name, p.BOSince, c.Now)
			}
		} else {
			if !strings.Contains(msg, "illegal transition") {
				t.Errorf("%s: forbidden transition was accepted (panic %q)", name, msg)
			}
			if p.blockedOnState != tc.from {
				t.Errorf("%s: forbidden transition still wrote the state (%v)", name, p.blockedOnState)
			}
		}
	}
}

// blocked_on NULL admits only BO_RUNNABLE; starting and ending a wait is
// allowed from any state; the lock must be held.
func TestBlockedOnRules(t *testing.T) {
	c, log := boCtx()
	p := New(1, "p", 2, 0)
	if msg := catch(func() { p.SetBOState(c, BOBlocked) }); !strings.Contains(msg, "must be held") {
		t.Fatalf("SetBOState without blocked_lock: %q, want a lock assertion", msg)
	}
	p.BlockedLock.Lock(c.CPU)
	if msg := catch(func() { p.SetBOState(c, BOWaking) }); !strings.Contains(msg, "blocked_on NULL") {
		t.Fatalf("WAKING with blocked_on NULL: %q", msg)
	}
	if msg := catch(func() { p.SetBlockedOn(c, nil, BOBlocked) }); msg == "" {
		t.Fatal("SetBlockedOn(nil, BO_BLOCKED) accepted")
	}
	m := &fakeLock{}
	before := log.Seq()
	p.SetBlockedOn(c, m, BOBlocked) // a wait starts: the mutex traces it
	p.SetBOState(c, BOWaking)       // traced
	p.SetBlockedOn(c, m, BOBlocked) // re-arm: traced
	p.SetBlockedOn(c, nil, BORunnable)
	if got := log.Seq() - before; got != 2 {
		t.Fatalf("%d bo_state events for start, WAKING, re-arm, end; want 2", got)
	}
	if p.BlockedOn(c.CPU) != nil || p.BlockedOnState(c.CPU) != BORunnable {
		t.Fatalf("after the wait ended: %v %v", p.BlockedOn(c.CPU), p.BlockedOnState(c.CPU))
	}
}

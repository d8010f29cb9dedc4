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

func catch(f func()) (msg string) {
	defer func() {
		if e := recover(); e != nil {
			msg = fmt.Sprint(e)
		}
	}()
	f()
	return ""
}

// blocked_on: set and clear under blocked_lock, the kernel's WARNs for a
// task blocked on another lock, and only clears by others traced.
func TestBlockedOnRules(t *testing.T) {
	c, log := boCtx()
	p := New(1, "p", 2, 0)
	m, other := &fakeLock{}, &fakeLock{}
	if msg := catch(func() { p.SetBlockedOn(c, m) }); !strings.Contains(msg, "must be held") {
		t.Fatalf("SetBlockedOn without blocked_lock: %q, want a lock assertion", msg)
	}
	p.BlockedLock.Lock(c.CPU)
	before := log.Seq()
	p.SetBlockedOn(c, m)
	p.SetBlockedOn(c, m) // re-arm on the same lock: fine
	if msg := catch(func() { p.SetBlockedOn(c, other) }); !strings.Contains(msg, "__set_task_blocked_on") {
		t.Fatalf("blocked on two locks: %q, want the kernel's WARN", msg)
	}
	p.ClearBlockedOn(c, m, false) // its own acquisition: the mutex traces it
	if p.BlockedOn(c.CPU) != nil || log.Seq() != before {
		t.Fatalf("after its own clear: blocked_on %v, %d events", p.BlockedOn(c.CPU), log.Seq()-before)
	}
	p.SetBlockedOn(c, m)
	c.Now = 77
	p.ClearBlockedOn(c, nil, true) // a hand-off: traced, time kept
	if p.BlockedOn(c.CPU) != nil || log.Seq()-before != 1 || p.UnblockedAt != 77 {
		t.Fatalf("after a hand-off: blocked_on %v, %d events, UnblockedAt %d", p.BlockedOn(c.CPU), log.Seq()-before, p.UnblockedAt)
	}
	p.ClearBlockedOn(c, nil, true) // nothing to clear: no event
	if log.Seq()-before != 1 {
		t.Fatalf("clearing a NULL blocked_on emitted an event")
	}
	p.SetBlockedOn(c, m)
	if msg := catch(func() { p.ClearBlockedOn(c, other, true) }); !strings.Contains(msg, "__clear_task_blocked_on") {
		t.Fatalf("clear for the wrong lock: %q, want the kernel's WARN", msg)
	}
}

package percpu

import (
	"fmt"
	"math/rand/v2"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/trace"
)

// Ctx is one CPU's context. Owned by its CPU goroutine.
type Ctx struct {
	*spinlock.CPU
	// Now is this CPU's virtual clock in ns.
	Now   int64
	Trace *trace.Ring
	Stats *stats.CPU
	// Rand is this CPU's seeded random source (jitter, tie breaks).
	Rand *rand.Rand
	// Proxy is the sched_proxy_exec static key.
	Proxy bool
	// ProxySingleRQ is --proxy-exec single-rq: upstream's same-runqueue
	// proxying only; find_proxy_task deactivates a donor whose owner is on
	// another CPU instead of migrating it (proxy_deactivate).
	ProxySingleRQ bool
	// Bugs are the catalogue bugs switched back on.
	Bugs bugs.Set
	// OnWarn receives the invariant violations that the model's own
	// inline checks find (Warn); set by the machine, which records the
	// violation and stops the run.
	OnWarn func(c *Ctx, inv check.Invariant, task int, taskName, msg string)
	// CPUOnline is cpu_online() when CPU hotplug is in use (nil: every
	// CPU is online), for set_task_cpu's WARN.
	CPUOnline func(cpu int) bool
	// CPUActive is cpu_active() when CPU hotplug is in use (nil: every
	// CPU is active), for find_proxy_task's test of the owner's CPU.
	CPUActive func(cpu int) bool
}

// Warn is SCHED_WARN_ON() for the model's packages (rq, mutex): report a
// broken invariant with the task it concerns. The caller then leaves the
// operation undone, as kernel code returns after a WARN. Without a
// receiver (unit tests of a package alone) it panics.
func (c *Ctx) Warn(inv check.Invariant, task int, taskName string, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if c.OnWarn == nil {
		panic(fmt.Sprintf("invariant %d (%s): %s", int(inv), inv.Name(), msg))
	}
	c.OnWarn(c, inv, task, taskName, msg)
}

// Bug reports whether catalogue bug b is switched on.
func (c *Ctx) Bug(b bugs.ID) bool { return c.Bugs.Has(b) }

// Emit records an event at this CPU's clock.
func (c *Ctx) Emit(k trace.Kind, task, a, b, x int32) {
	c.Trace.Emit(c.Now, k, task, a, b, x)
}

// Inc bumps counter k of this CPU.
func (c *Ctx) Inc(k stats.Counter) { stats.Bump(&c.Stats.C[k], 1) }

// Add adds n to counter k of this CPU.
func (c *Ctx) Add(k stats.Counter, n uint64) { stats.Bump(&c.Stats.C[k], n) }

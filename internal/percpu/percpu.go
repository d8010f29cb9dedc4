package percpu

import (
	"math/rand/v2"

	"github.com/proxysim/proxysim/internal/bugs"
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
	// Bugs are the catalogue bugs switched back on.
	Bugs bugs.Set
}

// Bug reports whether catalogue bug b is switched on.
func (c *Ctx) Bug(b bugs.ID) bool { return c.Bugs.Has(b) }

// Emit records an event at this CPU's clock.
func (c *Ctx) Emit(k trace.Kind, task, a, b, x int32) {
	c.Trace.Emit(c.Now, k, task, a, b, x)
}

// Inc bumps counter k of this CPU.
func (c *Ctx) Inc(k stats.Counter) { c.Stats.C[k].Add(1) }

// Add adds n to counter k of this CPU.
func (c *Ctx) Add(k stats.Counter, n uint64) { c.Stats.C[k].Add(n) }

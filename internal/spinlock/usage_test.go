package spinlock

import (
	"strings"
	"testing"
)

// usageRig is one validator, two CPUs and the locks of newLocks, with the
// usage reports collected.
type usageRig struct {
	v                          *Validator
	c0, c1                     *CPU
	pi, rq0, rq1, wait, b1, b2 *Lock
	bugs                       []UsageBug
}

func newUsageRig() *usageRig {
	g := &usageRig{}
	g.v = NewValidator(func(i Inversion) { panic("lock order: " + i.String()) })
	g.v.OnUsageBug = func(b UsageBug) { g.bugs = append(g.bugs, b) }
	g.c0, g.c1 = NewCPU(0), NewCPU(1)
	for i, c := range []*CPU{g.c0, g.c1} {
		c.Dep = g.v
		name := []string{"tick/0", "kworker/1"}[i]
		c.Describe = func() (string, int64) { return name, 1_000_000 }
	}
	g.pi, g.rq0, g.rq1, g.wait, g.b1, g.b2 = newLocks()
	return g
}

// The acquisition sites below are named functions so that the reports'
// stacks can be checked for them.

//go:noinline
func takeInHardirq(c *CPU, l *Lock) {
	c.HardirqEnter()
	l.Lock(c)
	l.Unlock(c)
	c.HardirqExit()
}

//go:noinline
func takeInSoftirqIrqsOff(c *CPU, l *Lock) {
	c.SoftirqEnter()
	l.LockIrq(c)
	l.UnlockIrq(c)
	c.SoftirqExit()
}

//go:noinline
func takeWithIrqsOn(c *CPU, l *Lock) {
	l.Lock(c)
	l.Unlock(c)
}

//go:noinline
func takeWithIrqsOff(c *CPU, l *Lock) {
	l.LockIrq(c)
	l.UnlockIrq(c)
}

func wantReport(t *testing.T, got []UsageBug, kind string, parts ...string) {
	t.Helper()
	if len(got) != 1 {
		t.Fatalf("got %d usage reports, want 1: %v", len(got), got)
	}
	if got[0].Kind != kind {
		t.Fatalf("report kind %q, want %q:\n%s", got[0].Kind, kind, got[0].Report)
	}
	for _, p := range parts {
		if !strings.Contains(got[0].Report, p) {
			t.Fatalf("report lacks %q:\n%s", p, got[0].Report)
		}
	}
}

// A lock class taken in hard-IRQ context and then with IRQs on is an
// inconsistent lock state: the report names the class, both usages, the
// CPU, task and IRQ state of the new acquisition, and both sites.
func TestIRQUsageInconsistent(t *testing.T) {
	g := newUsageRig()
	takeInHardirq(g.c0, g.rq0)
	takeWithIrqsOff(g.c1, g.rq1) // rq_lock_irq: consistent
	if len(g.bugs) != 0 {
		t.Fatalf("consistent use reported: %v", g.bugs)
	}
	takeWithIrqsOn(g.c1, g.rq1)
	wantReport(t, g.bugs, UsageInconsistent,
		"WARNING: inconsistent lock state",
		"inconsistent {IN-HARDIRQ-W} -> {HARDIRQ-ON-W} usage.",
		"cpu1 kworker/1 [HC0[0]:SC0[0]:HE1:SE1] takes:",
		"(rq->lock#1){?...}",
		"{IN-HARDIRQ-W} state was first recorded by cpu0 tick/0 [HC1[1]:SC0[0]:HE0:SE1]",
		"spinlock.takeInHardirq", "spinlock.takeWithIrqsOn",
		"<Interrupt>", "*** DEADLOCK ***")
	// The IN-HARDIRQ site is under "first recorded", the new one under the
	// backtrace.
	r := g.bugs[0].Report
	if strings.Index(r, "takeInHardirq") > strings.Index(r, "other info") || strings.LastIndex(r, "takeInHardirq") > strings.Index(r, "other info") ||
		strings.LastIndex(r, "takeWithIrqsOn") < strings.Index(r, "stack backtrace:") {
		t.Fatalf("sites in the wrong sections:\n%s", r)
	}
	// Reported once.
	takeWithIrqsOn(g.c0, g.rq0)
	takeInHardirq(g.c1, g.rq1)
	if len(g.bugs) != 1 {
		t.Fatalf("repeated: %v", g.bugs)
	}
	if g.c0.IrqsDisabled() || g.c0.InHardirq() || g.c1.IrqsDisabled() {
		t.Fatal("IRQ state not restored")
	}
}

// The other order, and the softirq state.
func TestIRQUsageInconsistentReverseAndSoftirq(t *testing.T) {
	g := newUsageRig()
	takeWithIrqsOn(g.c1, g.rq1)
	takeInHardirq(g.c0, g.rq0)
	wantReport(t, g.bugs, UsageInconsistent, "inconsistent {HARDIRQ-ON-W} -> {IN-HARDIRQ-W} usage.", "cpu0 tick/0 [HC1[1]:SC0[0]:HE0:SE1] takes:")

	g = newUsageRig()
	takeInSoftirqIrqsOff(g.c0, g.rq0) // sched_balance_rq: rq_lock_irqsave in softirq
	takeWithIrqsOff(g.c1, g.rq1)
	if len(g.bugs) != 0 {
		t.Fatalf("consistent use reported: %v", g.bugs)
	}
	takeWithIrqsOn(g.c1, g.rq1)
	wantReport(t, g.bugs, UsageInconsistent, "inconsistent {IN-SOFTIRQ-W} -> {SOFTIRQ-ON-W} usage.", "<SoftIRQ>", "takeInSoftirqIrqsOff")
}

// Classes the kernel takes only with _irqsave (pi_lock, wait_lock,
// blocked_lock, ...) never become IRQ-unsafe, whatever the caller's IRQ
// state, and the CPU's IRQ state is back on after their release.
func TestIRQUsageIrqsaveClasses(t *testing.T) {
	g := newUsageRig()
	takeInHardirq(g.c0, g.pi)
	takeInHardirq(g.c0, g.wait)
	takeWithIrqsOn(g.c1, g.pi)
	g.wait.Lock(g.c1)
	g.b1.Lock(g.c1)
	if !g.c1.IrqsDisabled() {
		t.Fatal("wait_lock held with IRQs on")
	}
	g.b1.Unlock(g.c1)
	g.wait.Unlock(g.c1)
	if len(g.bugs) != 0 {
		t.Fatalf("irqsave classes reported: %v", g.bugs)
	}
	if g.c1.IrqsDisabled() {
		t.Fatal("IRQs still off after the last irqsave lock")
	}
	if u := g.v.Usage(ClassPiLock); u != UsedInHardirq {
		t.Fatalf("pi_lock usage %v, want IN-HARDIRQ-W only", u)
	}
}

// Enabling IRQs with a lock held makes it IRQ-unsafe (mark_held_locks).
func TestIRQUsageEnableWhileHeld(t *testing.T) {
	g := newUsageRig()
	takeInHardirq(g.c0, g.rq0)
	g.rq1.LockIrq(g.c1)
	g.c1.IrqEnable() // local_irq_enable() under the rq lock
	wantReport(t, g.bugs, UsageInconsistent, "inconsistent {IN-HARDIRQ-W} -> {HARDIRQ-ON-W} usage.")
	g.rq1.Unlock(g.c1)
}

// An IRQ-safe class ordered before an IRQ-unsafe one: found when the
// unsafe usage appears after the order (irq lock inversion) and when the
// order appears after both usages (safe -> unsafe lock order).
func TestIRQUsageDependencies(t *testing.T) {
	g := newUsageRig()
	takeInHardirq(g.c0, g.pi) // pi_lock: HARDIRQ-safe
	g.pi.Lock(g.c1)           // pi_lock -> rq->lock, IRQs off: fine
	g.rq1.Lock(g.c1)
	g.rq1.Unlock(g.c1)
	g.pi.Unlock(g.c1)
	if len(g.bugs) != 0 {
		t.Fatalf("reported early: %v", g.bugs)
	}
	takeWithIrqsOn(g.c1, g.rq1) // rq->lock becomes HARDIRQ-unsafe
	wantReport(t, g.bugs, UsageInversion, "WARNING: possible irq lock inversion dependency detected",
		"(rq->lock#1){+...}", "HARDIRQ-safe lock", "(pi_lock){-...}", "takeInHardirq", "takeWithIrqsOn")

	g = newUsageRig()
	takeWithIrqsOn(g.c1, g.rq1) // unsafe first
	takeInHardirq(g.c0, g.pi)   // safe, no order yet
	if len(g.bugs) != 0 {
		t.Fatalf("reported before the order exists: %v", g.bugs)
	}
	g.pi.Lock(g.c1)
	g.rq1.Lock(g.c1) // the new dependency pi_lock -> rq->lock
	g.rq1.Unlock(g.c1)
	g.pi.Unlock(g.c1)
	wantReport(t, g.bugs, UsageSafeUnsafe, "WARNING: HARDIRQ-safe -> HARDIRQ-unsafe lock order detected",
		"(pi_lock) -> (rq->lock)", "HARDIRQ-irq-safe lock:\n (pi_lock)", "HARDIRQ-irq-unsafe lock:\n (rq->lock)",
		"takeInHardirq", "takeWithIrqsOn", "1 lock held by cpu1 kworker/1:\n #0: (pi_lock#1)")
}

// The cost of the usage check on the common path: an rq lock taken with
// IRQs off in process context, the class's bits already known.
func BenchmarkLockIrqOff(b *testing.B) {
	g := newUsageRig()
	takeInHardirq(g.c0, g.rq0)
	g.c0.IrqDisable()
	for i := 0; i < b.N; i++ {
		g.rq0.Lock(g.c0)
		g.rq0.Unlock(g.c0)
	}
	g.c0.IrqEnable()
}

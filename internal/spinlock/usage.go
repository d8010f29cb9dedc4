package spinlock

import (
	"fmt"
	"runtime"
	"strings"
)

// Usage is a set of lockdep usage bits of a lock class (enum
// lock_usage_bit, write side only: the model has no read locks).
type Usage uint8

// The usage bits. USED_IN_x: the class was taken in x context (the lock is
// x-safe, it must never be held with x enabled); x_ON: the class was
// taken, or held, with x enabled (x-unsafe).
const (
	UsedInHardirq  Usage = 1 << iota // LOCK_USED_IN_HARDIRQ: {IN-HARDIRQ-W}
	UsedInSoftirq                    // LOCK_USED_IN_SOFTIRQ: {IN-SOFTIRQ-W}
	EnabledHardirq                   // LOCK_ENABLED_HARDIRQ: {HARDIRQ-ON-W}
	EnabledSoftirq                   // LOCK_ENABLED_SOFTIRQ: {SOFTIRQ-ON-W}
	numUsageBits   = 4
)

var usageNames = [numUsageBits]string{"IN-HARDIRQ-W", "IN-SOFTIRQ-W", "HARDIRQ-ON-W", "SOFTIRQ-ON-W"}

func bitIndex(b Usage) int {
	for i := 0; i < numUsageBits; i++ {
		if b == 1<<i {
			return i
		}
	}
	panic("spinlock: not a single usage bit")
}

// String names one usage bit as lockdep prints it, or a set as a list.
func (u Usage) String() string {
	var s []string
	for i := 0; i < numUsageBits; i++ {
		if u&(1<<i) != 0 {
			s = append(s, usageNames[i])
		}
	}
	return strings.Join(s, "|")
}

// exclusive is exclusive_bit(): the bit that must not be set together
// with b (IN-x against x-ON).
func exclusive(b Usage) Usage {
	switch b {
	case UsedInHardirq:
		return EnabledHardirq
	case EnabledHardirq:
		return UsedInHardirq
	case UsedInSoftirq:
		return EnabledSoftirq
	default:
		return UsedInSoftirq
	}
}

// stateName is the IRQ state a bit belongs to: HARDIRQ or SOFTIRQ.
func stateName(b Usage) string {
	if b&(UsedInHardirq|EnabledHardirq) != 0 {
		return "HARDIRQ"
	}
	return "SOFTIRQ"
}

// Chars is lockdep's {....} of a usage set (see usageChars).
func (u Usage) Chars() string { return usageChars(u) }

// usageChars is lockdep's {....} of a class: per state (hard, soft) the
// write usage and the read usage ('.' here, there are no read locks):
// '.' neither, '-' used in the IRQ context only (IRQ-safe), '+' taken
// with the IRQ enabled only (IRQ-unsafe), '?' both.
func usageChars(u Usage) string {
	ch := func(in, on Usage) byte {
		switch {
		case u&in != 0 && u&on != 0:
			return '?'
		case u&on != 0:
			return '+'
		case u&in != 0:
			return '-'
		}
		return '.'
	}
	return string([]byte{'{', ch(UsedInHardirq, EnabledHardirq), '.', ch(UsedInSoftirq, EnabledSoftirq), '.', '}'})
}

// site is where a usage bit was first set: lockdep's usage_traces[bit].
type site struct {
	cpu   int
	comm  string
	now   int64
	state string // [HC..:SC..:HE.:SE.]
	stack []string
}

func (s *site) header() string {
	return fmt.Sprintf("cpu%d %s %s at %s virtual", s.cpu, s.comm, s.state, fmtTime(s.now))
}

func fmtTime(ns int64) string {
	return fmt.Sprintf("%d.%06d ms", ns/1_000_000, ns%1_000_000)
}

// UsageBug is one IRQ-usage report: an inconsistent lock state
// (print_usage_bug), an IRQ lock inversion found when a usage bit is set
// (print_irq_inversion_bug), or an IRQ-safe -> IRQ-unsafe dependency found
// when a new lock order is recorded (print_bad_irq_dependency).
type UsageBug struct {
	CPU int
	// Kind is UsageInconsistent, UsageInversion or UsageSafeUnsafe.
	Kind   string
	Class  Class
	Report string // the full multi-line report, lockdep's layout
}

// The kinds of UsageBug.
const (
	UsageInconsistent = "inconsistent lock state"
	UsageInversion    = "irq lock inversion"
	UsageSafeUnsafe   = "irq-safe -> irq-unsafe lock order"
)

func (b UsageBug) String() string { return b.Report }

// describe names the CPU's current task and clock for a report.
func (c *CPU) describe() (string, int64) {
	if c.Describe == nil {
		return "?", 0
	}
	return c.Describe()
}

// capture records the acquisition site: the Go call stack above the lock
// layer, outermost last (a kernel stack trace's order).
func (v *Validator) capture(c *CPU) *site {
	comm, now := c.describe()
	var pcs [32]uintptr
	n := runtime.Callers(2, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	var st []string
	for {
		f, more := frames.Next()
		fn := f.Function
		if i := strings.LastIndex(fn, "/"); i >= 0 {
			fn = fn[i+1:]
		}
		switch {
		case strings.HasPrefix(fn, "spinlock.(*"): // the lock layer itself
		case strings.HasPrefix(fn, "runtime."), strings.HasPrefix(fn, "testing."), strings.HasPrefix(fn, "sim."), strings.HasPrefix(fn, "main."):
			// Below the machine: the runner and the command line.
			more = false
		default:
			file := f.File
			if i := strings.Index(file, "/internal/"); i >= 0 {
				file = file[i+1:]
			} else if i := strings.Index(file, "/cmd/"); i >= 0 {
				file = file[i+1:]
			}
			st = append(st, fmt.Sprintf("%s (%s:%d)", fn, file, f.Line))
		}
		if !more || len(st) == 16 {
			break
		}
	}
	return &site{cpu: c.ID, comm: comm, now: now, state: c.irqStateString(), stack: st}
}

func writeStack(b *strings.Builder, st []string) {
	for _, f := range st {
		b.WriteString("  ")
		b.WriteString(f)
		b.WriteByte('\n')
	}
}

func (c *CPU) writeHeld(b *strings.Builder, comm string) {
	if c.nHeld == 0 {
		fmt.Fprintf(b, "no other locks held by cpu%d %s.\n", c.ID, comm)
		return
	}
	s := "s"
	if c.nHeld == 1 {
		s = ""
	}
	fmt.Fprintf(b, "%d lock%s held by cpu%d %s:\n", c.nHeld, s, c.ID, comm)
	for i := 0; i < c.nHeld; i++ {
		h := c.held[i]
		fmt.Fprintf(b, " #%d: (%s#%d)\n", i, h.class, h.sub)
	}
}

func rule(b *strings.Builder, n int, ch string) {
	b.WriteString(strings.Repeat(ch, n))
	b.WriteByte('\n')
}

func firstFrame(st []string) string {
	if len(st) == 0 {
		return "?"
	}
	return st[0]
}

// mark sets the usage bits u of l's class (mark_lock for each new bit) and
// checks them (mark_lock_irq): the bit against its exclusive bit on the
// same class (inconsistent lock state), then, if that holds, the lock
// dependencies: a new IN-x looks forwards for an x-ON class taken under
// this one, a new x-ON backwards for an IN-x class holding this one
// (lock inversion). Called by the owning CPU; the shared bits are set once
// per class under v.mu (lockdep's graph_lock), so the fast path is the
// CPU's own cache.
func (v *Validator) mark(c *CPU, l *Lock, u Usage) {
	cls := l.class
	if u&^c.usageKnown[cls] == 0 {
		return
	}
	var out []UsageBug
	v.mu.Lock()
	if newBits := u &^ v.usage[cls]; newBits != 0 {
		s := v.capture(c)
		for i := 0; i < numUsageBits; i++ {
			b := Usage(1) << i
			if newBits&b == 0 {
				continue
			}
			v.usage[cls] |= b
			v.sites[cls][i] = s
			excl := exclusive(b)
			if v.usage[cls]&excl != 0 {
				if bug, ok := v.usageBug(c, l, excl, b, s); ok {
					out = append(out, bug)
				}
				continue
			}
			var other Class = NumClasses
			if b&(EnabledHardirq|EnabledSoftirq) != 0 {
				other = v.findUsage(cls, excl, false)
			} else {
				other = v.findUsage(cls, excl, true)
			}
			if other != NumClasses {
				if bug, ok := v.inversionBug(c, l, b, other, excl, s); ok {
					out = append(out, bug)
				}
			}
		}
	}
	c.usageKnown[cls] = v.usage[cls]
	v.mu.Unlock()
	for _, bug := range out {
		if v.OnUsageBug != nil {
			v.OnUsageBug(bug)
		}
	}
}

// findUsage searches the recorded lock order from class from, forwards
// (classes taken while holding it) or backwards (classes held when it was
// taken), for another class with usage bit want (find_usage_forwards /
// _backwards). Returns NumClasses if there is none. v.mu held.
func (v *Validator) findUsage(from Class, want Usage, forwards bool) Class {
	var seen [NumClasses]bool
	queue := []Class{from}
	seen[from] = true
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		for o := Class(0); o < NumClasses; o++ {
			if seen[o] {
				continue
			}
			edge := v.seen[k][o].Load()
			if !forwards {
				edge = v.seen[o][k].Load()
			}
			if !edge {
				continue
			}
			seen[o] = true
			if v.usage[o]&want != 0 {
				return o
			}
			queue = append(queue, o)
		}
	}
	return NumClasses
}

// once reports whether a report with this key is new. v.mu held.
func (v *Validator) once(key [4]int) bool {
	if v.usageReported[key] {
		return false
	}
	v.usageReported[key] = true
	return true
}

// usageBug is print_usage_bug(): class of l already has prev, and this
// acquisition gives it next. v.mu held.
func (v *Validator) usageBug(c *CPU, l *Lock, prev, next Usage, now *site) (UsageBug, bool) {
	cls := l.class
	if !v.once([4]int{0, int(cls), int(prev), int(next)}) {
		return UsageBug{}, false
	}
	first := v.sites[cls][bitIndex(prev)]
	var b strings.Builder
	b.WriteByte('\n')
	rule(&b, 32, "=")
	b.WriteString("WARNING: inconsistent lock state\n")
	rule(&b, 32, "-")
	fmt.Fprintf(&b, "inconsistent {%s} -> {%s} usage.\n", prev, next)
	fmt.Fprintf(&b, "cpu%d %s %s takes:\n", c.ID, now.comm, now.state)
	fmt.Fprintf(&b, " (%s#%d)%s, at: %s\n", cls, l.sub, usageChars(v.usage[cls]), firstFrame(now.stack))
	fmt.Fprintf(&b, "{%s} state was first recorded by %s:\n", prev, first.header())
	writeStack(&b, first.stack)
	b.WriteString("\nother info that might help us debug this:\n")
	b.WriteString(" Possible unsafe locking scenario:\n\n")
	b.WriteString("       CPU0\n       ----\n")
	fmt.Fprintf(&b, "  lock(%s);\n  <Interrupt>\n    lock(%s);\n\n *** DEADLOCK ***\n\n", cls, cls)
	if prev&(UsedInSoftirq|EnabledSoftirq) != 0 {
		// The interrupt that takes it again is a softirq.
		s := b.String()
		b.Reset()
		b.WriteString(strings.Replace(s, "<Interrupt>", "<SoftIRQ>", 1))
	}
	c.writeHeld(&b, now.comm)
	b.WriteString("\nstack backtrace:\n")
	writeStack(&b, now.stack)
	return UsageBug{CPU: c.ID, Kind: UsageInconsistent, Class: cls, Report: b.String()}, true
}

// inversionBug is print_irq_inversion_bug(): l's class just got bit b;
// other, reachable from it in the lock order (forwards for a new IN-x,
// backwards for a new x-ON), has the exclusive bit excl. v.mu held.
func (v *Validator) inversionBug(c *CPU, l *Lock, b Usage, other Class, excl Usage, now *site) (UsageBug, bool) {
	cls := l.class
	if !v.once([4]int{1, int(cls), int(b), int(other)}) {
		return UsageBug{}, false
	}
	state := stateName(b)
	var sb strings.Builder
	sb.WriteByte('\n')
	rule(&sb, 56, "=")
	sb.WriteString("WARNING: possible irq lock inversion dependency detected\n")
	rule(&sb, 56, "-")
	fmt.Fprintf(&sb, "cpu%d %s %s just changed the state of lock:\n", c.ID, now.comm, now.state)
	fmt.Fprintf(&sb, " (%s#%d)%s, at: %s\n", cls, l.sub, usageChars(v.usage[cls]), firstFrame(now.stack))
	if b&(EnabledHardirq|EnabledSoftirq) != 0 {
		fmt.Fprintf(&sb, "but this lock was taken, in the past, while holding another, %s-safe lock:\n", state)
	} else {
		fmt.Fprintf(&sb, "but this lock took another, %s-unsafe lock in the past:\n", state)
	}
	fmt.Fprintf(&sb, " (%s)%s\n\n", other, usageChars(v.usage[other]))
	sb.WriteString("and interrupts could create inverse lock ordering between them.\n\n")
	fmt.Fprintf(&sb, "{%s} of %s was first recorded by %s:\n", excl, other, v.sites[other][bitIndex(excl)].header())
	writeStack(&sb, v.sites[other][bitIndex(excl)].stack)
	sb.WriteString("\nstack backtrace:\n")
	writeStack(&sb, now.stack)
	return UsageBug{CPU: c.ID, Kind: UsageInversion, Class: cls, Report: sb.String()}, true
}

// checkIrqUsage is check_irq_usage() for the new dependency h -> l (h held
// while l is taken): no class at or behind h may be IN-x while a class at
// or after l is x-ON. v.mu held.
func (v *Validator) checkIrqUsage(c *CPU, h, l *Lock) (UsageBug, bool) {
	for _, in := range []Usage{UsedInHardirq, UsedInSoftirq} {
		on := exclusive(in)
		safe := h.class
		if v.usage[safe]&in == 0 {
			safe = v.findUsage(h.class, in, false)
		}
		if safe == NumClasses {
			continue
		}
		unsafe := l.class
		if v.usage[unsafe]&on == 0 {
			unsafe = v.findUsage(l.class, on, true)
		}
		if unsafe == NumClasses {
			continue
		}
		if !v.once([4]int{2, int(safe), int(unsafe), int(in)}) {
			continue
		}
		comm, now := c.describe()
		s := v.capture(c)
		s.comm, s.now = comm, now
		state := stateName(in)
		var b strings.Builder
		b.WriteByte('\n')
		rule(&b, 54, "=")
		fmt.Fprintf(&b, "WARNING: %s-safe -> %s-unsafe lock order detected\n", state, state)
		rule(&b, 54, "-")
		fmt.Fprintf(&b, "cpu%d %s %s is trying to acquire:\n", c.ID, comm, s.state)
		fmt.Fprintf(&b, " (%s#%d)%s, at: %s\n\n", l.class, l.sub, usageChars(v.usage[l.class]), firstFrame(s.stack))
		b.WriteString("and this CPU is already holding:\n")
		fmt.Fprintf(&b, " (%s#%d)%s\n", h.class, h.sub, usageChars(v.usage[h.class]))
		fmt.Fprintf(&b, "which would create a new lock dependency:\n (%s) -> (%s)\n\n", h.class, l.class)
		fmt.Fprintf(&b, "but this new dependency connects a %s-irq-safe lock:\n (%s)%s\n", state, safe, usageChars(v.usage[safe]))
		fmt.Fprintf(&b, "... which became %s-irq-safe at %s:\n", state, v.sites[safe][bitIndex(in)].header())
		writeStack(&b, v.sites[safe][bitIndex(in)].stack)
		fmt.Fprintf(&b, "\nto a %s-irq-unsafe lock:\n (%s)%s\n", state, unsafe, usageChars(v.usage[unsafe]))
		fmt.Fprintf(&b, "... which became %s-irq-unsafe at %s:\n", state, v.sites[unsafe][bitIndex(on)].header())
		writeStack(&b, v.sites[unsafe][bitIndex(on)].stack)
		fmt.Fprintf(&b, "\nother info that might help us debug this:\n")
		fmt.Fprintf(&b, " Possible interrupt unsafe locking scenario:\n\n")
		b.WriteString("       CPU0                    CPU1\n       ----                    ----\n")
		fmt.Fprintf(&b, "  lock(%s);\n", unsafe)
		fmt.Fprintf(&b, "                               local_irq_disable();\n")
		fmt.Fprintf(&b, "                               lock(%s);\n", safe)
		fmt.Fprintf(&b, "                               lock(%s);\n", unsafe)
		fmt.Fprintf(&b, "  <Interrupt>\n    lock(%s);\n\n *** DEADLOCK ***\n\n", safe)
		c.writeHeld(&b, comm)
		b.WriteString("\nstack backtrace:\n")
		writeStack(&b, s.stack)
		return UsageBug{CPU: c.ID, Kind: UsageSafeUnsafe, Class: l.class, Report: b.String()}, true
	}
	return UsageBug{}, false
}

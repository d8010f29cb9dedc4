package conductor

import "github.com/proxysim/proxysim/internal/spinlock"

// Hooks adapts a Conductor to the lock layer's yield points.
type Hooks struct{ c *Conductor }

// Yield implements spinlock.Hooks: every yield point is a turn change. A
// cpu_relax() in a wait loop counts as spinning: the goroutine waits for
// another to make progress, so it steps aside for one pick.
func (h *Hooks) Yield(cpu *spinlock.CPU, pt spinlock.Point) {
	h.c.Yield(cpu.ID, pt == spinlock.PointRelax)
}

// Spin implements spinlock.Hooks: a failed try yields to the others
// (never blocks in the mutex, which a paused holder would never release).
func (h *Hooks) Spin(cpu *spinlock.CPU, l *spinlock.Lock) bool {
	h.c.Yield(cpu.ID, true)
	return true
}

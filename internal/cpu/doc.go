// Package cpu is the simulated machine: one goroutine per CPU running the
// scheduler core of kernel/sched/core.c on its own runqueue — __schedule
// (with the proxy-execution pick), try_to_wake_up and ttwu_runnable,
// select_task_rq, the wake list and its IPI, scheduler_tick, newidle and
// periodic load balancing, affinity and priority changes — and the
// interpreter that runs each task's program when the task is rq->curr.
//
// Ownership: a CPU goroutine owns its percpu.Ctx (clock, flight-recorder
// ring, counters), its timer wheel's expiry processing and the execution
// of its current task. Its runqueue is shared exactly as in the kernel:
// other CPUs take rq.Lock to enqueue wakeups, migrate and pull.
//
// Time is virtual. Each CPU advances its own clock; every Epoch of virtual
// time all CPUs meet at a barrier (lockstep), which bounds clock skew to
// one epoch and gives the stop-the-world audit a moment when every CPU is
// parked between steps. Within an epoch the CPUs run truly in parallel on
// real locks. Interrupts (IPIs, timers, the tick) are taken only between
// steps, when a CPU holds no lock.
package cpu

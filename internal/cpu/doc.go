// Package cpu is the simulated machine: one goroutine per CPU running the
// scheduler core on its own runqueue, and the interpreter that runs each
// task's program when the task is rq->curr. Its files follow the kernel's:
//
//	core.go      kernel/sched/core.c  __schedule, context switch, try_to_block_task
//	ttwu.go      kernel/sched/core.c  try_to_wake_up, ttwu_runnable, wake list, select_task_rq
//	affinity.go  kernel/sched/core.c  set_cpus_allowed_ptr, move_queued_task, migration_cpu_stop
//	tick.go      kernel/sched/core.c  sched_tick, NOHZ tick resync (and the stress shuffler)
//	fair.go      kernel/sched/fair.c  load balancing: newidle, periodic, nohz kick
//	rt.go        kernel/sched/rt.c    push_rt_tasks, pull_rt_task, chain pushability
//	timer.go     kernel/time/hrtimer.c sleep timers
//	interp.go    the task interpreter (the callers of mutex_lock and schedule)
//	shell.go     the goroutine shell: the CPU loop, IPIs, the virtual clock
//	runner.go    parallel or serial (conductor) interleaving of the shell
//	barrier.go   the lockstep epoch barrier
//	watchdog.go  the wall-clock watchdog
//	machine.go   configuration, CPUs, tasks, Run and Stop
//
// Proxy execution proper (find_proxy_task and friends) is package proxy.
//
// Ownership: a CPU goroutine owns its percpu.Ctx (clock, flight-recorder
// ring, counters), its timer wheel's expiry processing and the execution
// of its current task. Its runqueue is shared exactly as in the kernel:
// other CPUs take its lock (rq.Lock) to enqueue wakeups, migrate and pull.
//
// Time is virtual. Each CPU advances its own clock; every Epoch of virtual
// time all CPUs meet at a barrier (lockstep), which bounds clock skew to
// one epoch and gives the stop-the-world audit a moment when every CPU is
// parked between steps. Within an epoch the CPUs run truly in parallel on
// real locks. Interrupts (IPIs, timers, the tick) are taken only between
// steps, when a CPU holds no lock. The shell never branches on the mode:
// it calls its runner, which is the conductor in deterministic mode.
package cpu

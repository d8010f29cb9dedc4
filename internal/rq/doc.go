// Package rq models struct rq (kernel/sched/sched.h) and the scheduling
// classes proxysim needs: a fair class after kernel/sched/fair.c (vruntime
// order with the kernel's nice weights, wakeup placement, slice-based tick
// preemption), an RT class after kernel/sched/rt.c (priority order, FIFO
// and RR with a 100 ms slice, pushable tasks) and the idle class.
//
// Ownership: a CPU goroutine is the home of its runqueue, but, as in the
// kernel, other CPUs take its lock to enqueue woken tasks, to migrate and to
// pull. Every field below says what guards it. Fields other CPUs read
// without the lock (curr for idle_cpu(), nr_running for load balancing) are
// atomics written under the lock.
//
// The queued task that is rq.donor (the kernel's rq->curr for the classes)
// stays in its class queue while it runs, so pick_next_task is a pure scan
// and put_prev/set_next only move accounting.
package rq

// Package task models struct task_struct (include/linux/sched.h): the states
// a task moves through, the fields the scheduler and the mutex code share,
// and which lock guards each of them.
//
// Serialization rules (kernel/sched/core.c, proxy-exec series):
//
//   - p.PiLock serialises wakeups of p and guards WakeCPU and the affinity
//     mask (the mask is written with both pi_lock and the rq lock held).
//   - the rq lock of task_cpu(p) guards the scheduling entity (class
//     fields, vruntime, runtime statistics) while p is queued or running.
//   - p.BlockedLock guards blocked_on and the sleeping-owner links
//     (blocked_head of an owner, sleeping_owner of a waiter, both under the
//     owner's blocked_lock). is_blocked and blocked_donor belong to the rq
//     lock of task_cpu(p) (blocked_donor is also read and cleared by p's
//     own unlock without a lock, as the kernel does; is_blocked is read
//     with READ_ONCE under pi_lock alone by do_activate_blocked_waiter).
//   - __state, on_rq, on_cpu and cpu are read without locks by other CPUs
//     (READ_ONCE in the kernel) and are therefore atomics here; they are
//     still only written under the locks the kernel writes them under.
//   - Program state (PC, loop counters, remaining work) belongs to the task
//     itself and is touched only by the CPU that is running it; ownership
//     passes from CPU to CPU through on_cpu and the rq locks exactly as the
//     kernel's task stack does.
package task

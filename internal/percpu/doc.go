// Package percpu is "this CPU" for kernel code: what a path running on a
// CPU can reach without naming it (smp_processor_id(), this_rq() aside):
// the lockdep state of the locks it holds, its flight-recorder ring, its
// counters, its virtual clock, its seeded random source, and the
// read-only boot configuration (the sched_proxy_exec static key and the
// bug switches).
//
// A Ctx is owned by its CPU goroutine and passed explicitly to every
// protocol function, the way the kernel passes rq and relies on the
// current CPU.
package percpu

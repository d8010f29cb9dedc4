// Package check holds proxysim's invariants (proxy-exec-protocol.md section
// 5): cheap inline checks made where state changes (a task switching in
// must not be on_cpu elsewhere and must be allowed here), and a
// stop-the-world audit run with every CPU parked at an epoch barrier that
// checks global invariants (each task in exactly one place, counts agree,
// blocked_on chains agree with mutex wait lists and are acyclic,
// sleeping-owner lists agree with on_rq, no BO_WAKING left unreturned, every
// runnable task makes progress, runtime adds up).
//
// It mirrors no single kernel file: it is the union of the kernel's
// SCHED_WARN_ON/lockdep_assert checks and of what a reviewer checks by hand.
// A violation stops the run with exit code 1 and a report.
package check

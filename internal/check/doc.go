// Package check is the leaf package of proxysim's invariants
// (the protocol's checkable invariants plus proxysim's own): their ids and
// names, the Violation record and the Reporter that collects them. It
// imports nothing of the model, so that every layer can report: the
// runqueue and the mutex report their inline checks (the kernel's
// SCHED_WARN_ON) through percpu.Ctx.Warn, the CPU code its own, and the
// stop-the-world audit (package audit) the global ones.
//
// A violation stops the run with exit code 1 and a report.
package check
